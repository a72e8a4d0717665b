from django.urls import path

from . import report_views, views

app_name = "scoring"
urlpatterns: list = [
    # Judges and scoring runs (scoring/views.py)
    path("judges/", views.judge_list, name="judge-list"),
    path("runs/", views.run_list, name="run-list"),
    path("runs/<int:run_id>/", views.run_detail, name="run-detail"),
    # Study reports (scoring/report_views.py)
    path("studies/<slug:name>/report/", report_views.study_report, name="study-report"),
    path("studies/<slug:name>/report/annotators/<str:pseudonym>/exclusion/", report_views.annotator_exclusion, name="study-report-exclusion"),
]
