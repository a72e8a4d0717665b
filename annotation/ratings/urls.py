from django.urls import path

from common import converters  # noqa: F401  (registers <id:...>)

from . import api, views

app_name = "ratings"
urlpatterns = [
    path("ratings/studies/<slug:name>/rate/", views.rate, name="rate"),
    path("ratings/audio/<str:token>/", views.clip_audio, name="audio"),
    path("api/ratings/studies/<slug:name>/next/", api.RatingNextApi.as_view(), name="api-next"),
    path("api/ratings/assignments/<id:assignment_id>/listening/", api.RatingListeningApi.as_view(), name="api-listening"),
    path("api/ratings/assignments/<id:assignment_id>/submit/", api.RatingSubmitApi.as_view(), name="api-submit"),
    path("api/ratings/assignments/<id:assignment_id>/skip/", api.RatingSkipApi.as_view(), name="api-skip"),
]
