from django.urls import path

from . import api, views

urlpatterns = [
    # HTML
    path("", views.home, name="home"),
    path("audio/<uuid:public_id>/", views.clip_audio, name="clip-audio"),
    # API
    path("api/studies/", api.StudyListApi.as_view(), name="api-study-list"),
    path("api/studies/<slug:name>/next/", api.AssignmentNextApi.as_view(), name="api-assignment-next"),
    path("api/assignments/<int:assignment_id>/judgment/", api.JudgmentSubmitApi.as_view(), name="api-judgment-submit"),
    path("api/assignments/<int:assignment_id>/skip/", api.AssignmentSkipApi.as_view(), name="api-assignment-skip"),
]
