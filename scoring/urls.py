from django.urls import path

from . import report_views

app_name = "scoring"
urlpatterns: list = [
    # Study reports (scoring/report_views.py)
    path("studies/<slug:name>/report/", report_views.study_report, name="study-report"),
    path("studies/<slug:name>/report/annotators/<str:pseudonym>/exclusion/", report_views.annotator_exclusion, name="study-report-exclusion"),
]
