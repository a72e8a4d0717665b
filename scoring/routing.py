from django.urls import path

from common import converters  # noqa: F401  (registers <id:...>)

from .consumers import ScoringRunConsumer, StudyReportConsumer, TrainingConsumer

websocket_urlpatterns = [
    path("ws/scoring/runs/<id:run_id>/", ScoringRunConsumer.as_asgi()),
    path("ws/scoring/training/<id:training_id>/", TrainingConsumer.as_asgi()),
    path("ws/scoring/studies/<slug:name>/report/", StudyReportConsumer.as_asgi()),
]
