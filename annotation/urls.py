from django.urls import path

from . import views

urlpatterns = [
    path("", views.home, name="home"),
    path("audio/<uuid:public_id>/", views.clip_audio, name="clip-audio"),
]
