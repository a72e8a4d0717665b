"""API routes: `urlpatterns` mounted at /api/scoring/, `study_urlpatterns` at /api/studies/<name>/ (next to the annotation app's study API)."""

from django.urls import path

from common import converters  # noqa: F401  (registers <id:...>)

from . import api

urlpatterns = [
    path("judges/", api.JudgeListApi.as_view(), name="api-scoring-judges"),
    path("runs/", api.RunListApi.as_view(), name="api-scoring-runs"),
    path("runs/<id:run_id>/", api.RunDetailApi.as_view(), name="api-scoring-run"),
    path("runs/<id:run_id>/verdicts/", api.RunVerdictsApi.as_view(), name="api-scoring-run-verdicts"),
    path("runs/<id:run_id>/bias/", api.RunBiasApi.as_view(), name="api-scoring-run-bias"),
    path("runs/<id:run_id>/pseudo-labels.zip", api.RunPseudoExportApi.as_view(), name="api-scoring-run-pseudo"),
    path("external/", api.ExternalSetListApi.as_view(), name="api-scoring-external"),
]

study_urlpatterns = [
    path("report/", api.StudyReportApi.as_view(), name="api-study-report"),
    path("report/<slug:table>.csv", api.StudyReportTableApi.as_view(), name="api-study-report-table"),
    path("compare/", api.StudyCompareApi.as_view(), name="api-study-compare"),
    path("plan/", api.StudyPlanApi.as_view(), name="api-study-plan"),
    path("annotators/<str:pseudonym>/exclusion/", api.AnnotatorExclusionApi.as_view(), name="api-annotator-exclusion"),
]
