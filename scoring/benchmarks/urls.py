from django.urls import path

from . import views

app_name = "benchmarks"
urlpatterns: list = [
    path("", views.benchmark_list, name="benchmark-list"),
    path("new/", views.benchmark_create, name="benchmark-create"),
    path("audio/<str:token>/", views.signed_audio, name="benchmark-audio"),
    path("submissions/<int:submission_id>/", views.submission_detail, name="benchmark-submission"),
    path("<slug:name>/", views.benchmark_detail, name="benchmark-detail"),
    path("<slug:name>/export.zip", views.benchmark_export, name="benchmark-export"),
    path("<slug:name>/submit/", views.benchmark_submit, name="benchmark-submit"),
    path("<slug:name>/run/", views.benchmark_run, name="benchmark-run"),
    path("<slug:name>/close/", views.benchmark_close, name="benchmark-close"),
]
