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


@pytest.mark.engine
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


def test_listening_events_after_consent_is_withdrawn_are_refused_and_not_stored():
    import json

    from annotation.models import ListeningEvent
    from annotation.services import assignment_next, consent_give, consent_withdraw
    from tests.factories import PairFactory, StudyAnnotatorFactory, StudyFactory

    study = StudyFactory(name="withdrawn-listening")
    PairFactory(study=study)
    annotator = UserFactory(username="withdrawing", roles=["annotator"])
    StudyAnnotatorFactory(study=study, annotator=annotator)
    consent_give(user=annotator)
    assignment = assignment_next(study=study, annotator=annotator)
    client = Client()
    client.force_login(annotator)
    url = f"/api/assignments/{assignment.pk}/listening/"
    body = lambda seq: json.dumps({"events": [{"seq": seq, "side": "A", "kind": "play", "position": 0.0}]})  # noqa: E731
    assert client.post(url, body(1), content_type="application/json").status_code == 200
    consent_withdraw(user=annotator)
    refused = client.post(url, body(2), content_type="application/json")
    assert refused.status_code == 403 and refused.json()["code"] == "consent_withdrawn"
    assert ListeningEvent.objects.filter(assignment_id=assignment.pk).count() == 1


@pytest.mark.parametrize("fetch", [True, False])
def test_the_arena_refusal_says_never_fetched_only_when_the_audio_was_never_fetched(settings, fetch):
    import json

    from tests.arena.conftest import FAST_RATES, arena_system, ready_battle, visitor_client, visitor_with_terms

    for name, value in FAST_RATES.items():
        setattr(settings, name, value)
    visitor, cookie = visitor_with_terms()
    battle = ready_battle(visitor, arena_system("early-a"), arena_system("early-b"))
    client = visitor_client(cookie)
    if fetch:
        for side in ("a", "b"):
            audio = client.get(f"/arena/audio/{battle.public_id}/{side}/")
            assert audio.status_code == 200 and b"".join(audio.streaming_content)
    refused = client.post(f"/arena/api/battles/{battle.public_id}/vote/", json.dumps({"vote": "a"}), content_type="application/json")
    assert refused.status_code == 403 and refused.json()["code"] == "listen_required"
    assert ("never fetched" in refused.json()["detail"]) is not fetch


def test_the_researcher_import_page_takes_what_it_promises(settings):
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.template.defaultfilters import filesizeformat

    from tests.factories import StudyFactory

    researcher = UserFactory(username="big-importer", roles=["researcher"])
    StudyFactory(name="big-import", owner=researcher)
    client = Client()
    client.force_login(researcher)
    page = client.get("/manage/import/?study=big-import").content.decode()
    assert f"Upload limit: {filesizeformat(settings.AUDITORIUM_MAX_UPLOAD_BYTES)} per file".replace("\xa0", " ") in " ".join(page.replace("\xa0", " ").split())
    eleven_mb = SimpleUploadedFile("audio.zip", b"\0" * (11 * 1024 * 1024), content_type="application/zip")
    response = client.post("/manage/import/", {"study": "big-import", "archive": eleven_mb})
    assert response.status_code == 400 and "not a valid zip file" in response.content.decode()  # read and checked, not refused by size
    # Someone who may not import there still gets the general request limit.
    other = Client()
    other.force_login(UserFactory(username="not-an-importer", roles=["annotator"]))
    refused = other.post("/manage/import/", {"study": "big-import", "archive": SimpleUploadedFile("audio.zip", b"\0" * (11 * 1024 * 1024))})
    assert refused.status_code == 413


@pytest.mark.engine
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("path", ["/ws/benchmarks/x/", "/ws/", "/ws/arena/leaderboard/extra/", "/nothing"])
def test_an_unknown_websocket_path_is_refused_without_a_traceback(path, caplog):
    from asgiref.sync import async_to_sync
    from channels.testing import WebsocketCommunicator

    from auditorium.asgi import application

    headers = [(b"host", b"localhost:8000"), (b"origin", b"http://localhost:8000")]

    async def attempt():
        communicator = WebsocketCommunicator(application, path, headers=headers)
        connected, _ = await communicator.connect()
        await communicator.wait()
        return connected

    assert async_to_sync(attempt)() is False
    assert not [r for r in caplog.records if r.exc_info], "an unknown path logged a traceback"
