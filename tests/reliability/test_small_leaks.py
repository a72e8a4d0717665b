"""Smaller leaks: server paths in judge reasons, WebSocket origins, the workers health check, listening after
withdrawal, the arena's refusal message, the researcher import page's limit."""

from __future__ import annotations

import pytest
from django.test import Client

from scoring.models import Judge
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def test_judge_reasons_show_model_paths_relative_to_the_models_folder(settings, tmp_path):
    settings.AUDITORIUM_MODEL_DIR = tmp_path / "srv" / "models"
    Judge.objects.create(key="missing-clap", kind=Judge.Kind.CLAP, weights="clap/music/v2")
    Judge.objects.create(key="missing-abs", kind=Judge.Kind.CLAP, weights=str(tmp_path / "srv" / "models" / "elsewhere"))
    client = Client()
    client.force_login(UserFactory(username="leak-researcher", roles=["researcher"]))
    page = client.get("/scoring/judges/").content.decode()
    api = client.get("/api/scoring/judges/").content.decode()
    for text in (page, api):
        assert str(tmp_path) not in text
    reasons = {j["key"]: j["reason"] for j in client.get("/api/scoring/judges/").json()}
    assert "weights not found: AUDITORIUM_MODEL_DIR/clap/music/v2" in reasons["missing-clap"] or "python package not installed" in reasons["missing-clap"]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("origin", "host", "opens"),
    [
        (b"http://localhost:8000", b"localhost:8000", True),
        (b"http://localhost:9999", b"localhost:8000", False),  # another port of the same host
        (b"https://localhost:8000", b"localhost:8000", False),  # another scheme
        (b"http://localhost", b"localhost:8000", False),
        (b"http://evil.example:8000", b"localhost:8000", False),
        (None, b"localhost:8000", False),
    ],
)
def test_websockets_open_only_from_the_same_scheme_host_and_port(origin, host, opens):
    from asgiref.sync import async_to_sync
    from channels.testing import WebsocketCommunicator

    from auditorium.asgi import application

    headers = [(b"host", host)] + ([(b"origin", origin)] if origin else [])

    async def attempt():
        communicator = WebsocketCommunicator(application, "/ws/arena/leaderboard/", headers=headers)
        connected, _ = await communicator.connect()
        await communicator.disconnect()
        return connected

    assert async_to_sync(attempt)() is opens
