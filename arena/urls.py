from django.urls import path

app_name = "arena"
urlpatterns: list = []
