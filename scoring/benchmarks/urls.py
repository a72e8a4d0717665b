from django.urls import path

from . import views

app_name = "benchmarks"
urlpatterns: list = [
    path("", views.benchmark_list, name="list"),
    path("new/", views.benchmark_create, name="create"),
    path("audio/<str:token>/", views.signed_audio, name="audio"),
    path("submissions/<int:submission_id>/", views.submission_detail, name="submission"),
    path("<slug:name>/", views.benchmark_detail, name="detail"),
    path("<slug:name>/export.zip", views.benchmark_export, name="export"),
    path("<slug:name>/submit/", views.benchmark_submit, name="submit"),
    path("<slug:name>/run/", views.benchmark_run, name="run"),
    path("<slug:name>/close/", views.benchmark_close, name="close"),
]
