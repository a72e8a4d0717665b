from django.urls import path

from common import converters  # noqa: F401  (registers <id:...>)

from . import api

urlpatterns: list = [
    path("", api.BenchmarkListApi.as_view(), name="api-benchmark-list"),
    path("submissions/<id:submission_id>/", api.SubmissionDetailApi.as_view(), name="api-benchmark-submission"),
    path("<slug:name>/leaderboard/", api.LeaderboardApi.as_view(), name="api-benchmark-leaderboard"),
    path("<slug:name>/submissions/", api.SubmissionCreateApi.as_view(), name="api-benchmark-submit"),
    path("<slug:name>/runs/", api.RunSubmissionApi.as_view(), name="api-benchmark-run"),
]
