from django.urls import path

from common import converters  # noqa: F401  (registers <id:...>)

from . import best_of_n_views, views

app_name = "scoring"
urlpatterns: list = [
    # Judges and scoring runs
    path("judges/", views.judge_list, name="judge-list"),
    path("judges/reward/", views.reward_train, name="reward-train"),
    path("training/<id:training_id>/", views.training_detail, name="training-detail"),
    path("runs/", views.run_list, name="run-list"),
    path("runs/<id:run_id>/", views.run_detail, name="run-detail"),
    # Study reports
    path("reports/", views.report_list, name="report-list"),
    path("studies/<slug:name>/report/", views.study_report, name="study-report"),
    path("studies/<slug:name>/compare/", views.study_compare, name="study-compare"),
    path("studies/<slug:name>/plan/", views.study_plan, name="study-plan"),
    path("studies/<slug:name>/report/annotators/<str:pseudonym>/exclusion/", views.annotator_exclusion, name="study-report-exclusion"),
    # Best-of-N: rank N candidates per prompt, check the top pick with people
    path("best-of-n/", best_of_n_views.best_of_n_list, name="best-of-n"),
    path("studies/<slug:name>/best-of-n/", best_of_n_views.best_of_n_detail, name="best-of-n-detail"),
]
