from django.urls import path

from .consumers import ScoringRunConsumer, StudyReportConsumer, TrainingConsumer

websocket_urlpatterns = [
    path("ws/scoring/runs/<int:run_id>/", ScoringRunConsumer.as_asgi()),
    path("ws/scoring/training/<int:training_id>/", TrainingConsumer.as_asgi()),
    path("ws/scoring/studies/<slug:name>/report/", StudyReportConsumer.as_asgi()),
]
