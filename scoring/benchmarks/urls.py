from django.urls import path

from common import converters  # noqa: F401  (registers <id:...>)

from . import team_views, views

app_name = "benchmarks"
urlpatterns: list = [
    path("", views.benchmark_list, name="benchmark-list"),
    path("new/", views.benchmark_create, name="benchmark-create"),
    path("teams/", team_views.team_list, name="team-list"),
    path("teams/<slug:team>/", team_views.team_detail, name="team-detail"),
    path("teams/<slug:team>/members/", team_views.team_members_add, name="team-members-add"),
    path("teams/<slug:team>/endpoints/", team_views.team_endpoint_register, name="team-endpoint-register"),
    path("audio/<str:token>/", views.signed_audio, name="benchmark-audio"),
    path("submissions/<id:submission_id>/", views.submission_detail, name="benchmark-submission"),
    path("<slug:name>/", views.benchmark_detail, name="benchmark-detail"),
    path("<slug:name>/export.zip", views.benchmark_export, name="benchmark-export"),
    path("<slug:name>/submit/", views.benchmark_submit, name="benchmark-submit"),
    path("<slug:name>/run/", views.benchmark_run, name="benchmark-run"),
    path("<slug:name>/close/", views.benchmark_close, name="benchmark-close"),
]
