"""Hostile request bodies through the real endpoints: deep nesting and huge numbers are 400s, never 500s."""

from __future__ import annotations

import json

import pytest
from django.conf import settings
from django.test import Client, override_settings

from annotation.dataset.importer import pairs_import
from annotation.services import consent_give
from arena.services import visitor_accept_terms
from tests.factories import AssignmentFactory, PairFactory, StudyAnnotatorFactory, StudyFactory, UserFactory

pytestmark = pytest.mark.django_db

NESTED = "[" * 3000 + "]" * 3000
NESTED_OBJECT = '{"a":' * 3000 + "1" + "}" * 3000


@pytest.fixture
def world():
    user = UserFactory(username="boss", roles=["annotator", "researcher"])
    study = StudyFactory(name="hostile", min_listen_seconds=0.0, owner=user)
    pair = PairFactory(study=study)
    StudyAnnotatorFactory(study=study, annotator=user)
    assignment = AssignmentFactory(pair=pair, annotator=user)
    consent_give(user=user)
    client = Client()
    client.force_login(user)
    visitor, cookie = visitor_accept_terms(cookie=None, version=settings.ARENA_TERMS_VERSION)
    visitor_client = Client()
    visitor_client.cookies[settings.ARENA_VISITOR_COOKIE] = cookie
    return {"study": study, "assignment": assignment, "client": client, "visitor": visitor_client, "pseudonym": user.annotator_profile.pseudonym}


def json_endpoints(world) -> list[tuple[Client, str]]:
    a = world["assignment"].pk
    signed_in = world["client"]
    return [
        (signed_in, "/api/scoring/runs/"),
        (signed_in, f"/api/assignments/{a}/listening/"),
        (signed_in, f"/api/assignments/{a}/judgment/"),
        (signed_in, f"/api/assignments/{a}/skip/"),
        (signed_in, f"/api/studies/hostile/annotators/{world['pseudonym']}/exclusion/"),
        (world["visitor"], "/arena/api/terms/"),
        (world["visitor"], "/arena/api/battles/"),
    ]


@pytest.mark.parametrize("body", [NESTED, NESTED_OBJECT], ids=["array", "object"])
def test_deeply_nested_json_is_a_400_with_a_reason_on_every_endpoint(world, body):
    for client, url in json_endpoints(world):
        response = client.post(url, body, content_type="application/json")
        assert response.status_code == 400, (url, response.status_code, response.content[:300])
        payload = response.json()
        assert payload["code"] == "parse_error" and "nested deeper than" in payload["detail"], (url, payload)


def test_moderately_nested_json_past_the_limit_is_refused_too(world):
    # 100 levels parse without a RecursionError, but nothing the API takes nests that deep.
    body = json.dumps({"judge": "x", "pair_ids": [1], "extra": json.loads("[" * 100 + "]" * 100)})
    response = world["client"].post("/api/scoring/runs/", body, content_type="application/json")
    assert response.status_code == 400 and "nested deeper than 32 levels" in response.json()["detail"]


@pytest.mark.parametrize("ids", [[9223372036854775808], [-1], [0], [10**400]])
def test_huge_or_impossible_ids_in_a_list_are_a_400(world, ids):
    response = world["client"].post("/api/scoring/runs/", json.dumps({"judge": "signal-technical", "pair_ids": ids}), content_type="application/json")
    assert response.status_code == 400, response.content[:300]
    assert response.json()["code"] == "invalid" and "pair_ids" in response.json()["errors"]


def test_a_number_longer_than_python_reads_is_a_400(world):
    body = '{"judge": "x", "pair_ids": [' + "9" * 5000 + "]}"
    response = world["client"].post("/api/scoring/runs/", body, content_type="application/json")
    assert response.status_code == 400 and response.json()["code"] == "parse_error"


def test_arena_event_sequence_numbers_beyond_64_bits_are_a_400(world):
    from arena.models import Battle

    assert not Battle.objects.exists()
    # The battle does not exist: the id bound is checked in the serializer, which this reaches only for an own battle,
    # so check the serializer directly through the API's class.
    from arena.api import ListenEventsApi

    events = ListenEventsApi.EventSerializer(data=[{"seq": 2**63, "side": "a", "kind": "play"}], many=True)
    assert not events.is_valid()


def test_a_deeply_nested_jsonl_line_is_reported_by_line(tmp_path):
    audio = tmp_path / "audio"
    audio.mkdir()
    path = tmp_path / "rows.jsonl"
    path.write_text('{"prompt": "x"}\n' + NESTED + "\n" + '{"a": ' + "9" * 5000 + "}\n", encoding="utf-8")
    report = pairs_import(files=[path], audio_root=audio, study_name="deep")
    messages = {e.line: e.message for e in report.errors}
    assert "nested deeper than" in messages[2], messages
    assert "malformed JSON" in messages[3], messages


@override_settings(DEBUG=False)
def test_with_debug_off_errors_are_friendly_pages_without_tracebacks(world, client):
    missing = client.get("/no/such/page/")
    assert missing.status_code == 404
    assert b"This page does not exist" in missing.content and b"Traceback" not in missing.content

    from django.test import RequestFactory
    from django.views.defaults import server_error

    failed = server_error(RequestFactory().get("/"))
    assert failed.status_code == 500
    assert b"Something went wrong on our side" in failed.content and b"SECRET_KEY" not in failed.content


def test_the_demo_runs_with_debug_off_unless_asked():
    from pathlib import Path

    script = (Path(__file__).resolve().parents[2] / "auditorium").read_text()
    demo = script.split("demo)", 1)[1].split(";;", 1)[0]
    assert "export DJANGO_DEBUG=${DJANGO_DEBUG:-false}" in demo
    assert "collectstatic" in demo  # with debug off the static files come from whitenoise
    assert "-m auditorium.serve" in demo  # uvicorn (refuses an oversized body from its headers), proxy headers left to the application
