from django.urls import path

app_name = "benchmarks"
urlpatterns: list = []
