from django.urls import path

from auditorium import converters  # noqa: F401  (registers <id:...>)

from . import api, views
from .api_dataset import StudyExportApi

urlpatterns = [
    # HTML
    path("", views.home, name="home"),
    path("audio/<uuid:public_id>/", views.clip_audio, name="clip-audio"),
    path("consent/", views.consent, name="consent"),
    path("consent/withdraw/", views.consent_withdraw_view, name="consent-withdraw"),
    path("studies/<slug:name>/annotate/", views.annotate, name="annotate"),
    path("manage/studies/", views.study_manage_list, name="study-manage-list"),
    path("manage/studies/new/", views.study_create, name="study-create"),
    path("manage/import/", views.pairs_import, name="pairs-import"),
    path("manage/import/done/", views.pairs_import_done, name="pairs-import-done"),
    path("manage/studies/<slug:name>/", views.study_manage, name="study-manage"),
    path("manage/studies/<slug:name>/edit/", views.study_edit, name="study-edit"),
    path("manage/studies/<slug:name>/annotators/", views.study_annotators_add, name="study-annotators-add"),
    path("manage/studies/<slug:name>/collaborators/", views.study_collaborators_set, name="study-collaborators"),
    # API
    path("api/studies/", api.StudyListApi.as_view(), name="api-study-list"),
    path("api/studies/<slug:name>/next/", api.AssignmentNextApi.as_view(), name="api-assignment-next"),
    path("api/studies/<slug:name>/export/", StudyExportApi.as_view(), name="api-study-export"),
    path("api/assignments/<id:assignment_id>/listening/", api.ListeningEventsApi.as_view(), name="api-listening-events"),
    path("api/assignments/<id:assignment_id>/judgment/", api.JudgmentSubmitApi.as_view(), name="api-judgment-submit"),
    path("api/assignments/<id:assignment_id>/skip/", api.AssignmentSkipApi.as_view(), name="api-assignment-skip"),
]
