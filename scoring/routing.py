from django.urls import path

from .report_consumers import StudyReportConsumer

websocket_urlpatterns = [
    path("ws/scoring/studies/<slug:name>/report/", StudyReportConsumer.as_asgi()),
]
