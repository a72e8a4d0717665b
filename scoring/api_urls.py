"""API routes, mounted at /api/scoring/ by the root URLconf."""

from django.urls import path

from . import api

urlpatterns = [
    path("judges/", api.JudgeListApi.as_view(), name="api-scoring-judges"),
    path("runs/", api.RunListApi.as_view(), name="api-scoring-runs"),
    path("runs/<int:run_id>/", api.RunDetailApi.as_view(), name="api-scoring-run"),
    path("runs/<int:run_id>/verdicts/", api.RunVerdictsApi.as_view(), name="api-scoring-run-verdicts"),
    path("external/", api.ExternalSetListApi.as_view(), name="api-scoring-external"),
]
