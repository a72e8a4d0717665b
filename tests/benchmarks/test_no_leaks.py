"""A submitter's view: no route, export, error message or API field gives test labels or other teams' private scores."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from django.test import Client
from django.urls import get_resolver

from scoring.benchmarks import selectors, services
from tests.benchmarks.helpers import item_truth, jsonl, known_study
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

LABEL_WORDS = ("preference-alignment", "preference-musicality", "confidence_preference", '"truth"', '"votes"', '"labels"')


@pytest.fixture
def world():
    study, _ = known_study(n_pairs=24, name="leak")
    bench = services.benchmark_create(name="leak", study=study, seed=5, bootstrap_rounds=200)
    truth = item_truth(bench)
    private = set(bench.items.filter(is_private=True).values_list("item_id", flat=True))
    alice, bob = UserFactory(username="alice"), UserFactory(username="bob")
    # The study's collaborator: the study rule, not the role, opens the private part (annotation.access).
    researcher = UserFactory(username="res", roles=["researcher"])
    study.collaborators.add(researcher)
    ours, theirs = services.team_create(name="ours", members=[alice]), services.team_create(name="theirs", members=[bob])
    flip = {"A": "B", "B": "A"}
    # Theirs: right on every public item and wrong on every private one, so its private accuracy is 0.
    rows = [{"id": i, "preferred": t["musicality"] if i not in private else flip[t["musicality"]]} for i, t in sorted(truth.items())]
    their_sub = services.submission_from_file(benchmark=bench, team=theirs, data=jsonl(rows), label="secret-judge")
    mine = [{"id": i, "preferred": "A"} for i in sorted(truth)]
    my_sub = services.submission_from_file(benchmark=bench, team=ours, data=jsonl(mine), label="mine")
    client = Client()
    client.force_login(alice)
    return {"bench": bench, "client": client, "mine": my_sub, "theirs": their_sub, "truth": truth, "private": private, "researcher": researcher}


def _no_labels(text: str):
    for word in LABEL_WORDS:
        assert word not in text, f"{word!r} appears where a submitter can read it"


def test_export_and_pages_carry_no_labels(world):
    c, bench = world["client"], world["bench"]
    archive = zipfile.ZipFile(io.BytesIO(c.get(f"/benchmarks/{bench.name}/export.zip").content))
    for name in archive.namelist():
        if not name.endswith((".wav", ".mp3", ".flac")):
            _no_labels(archive.read(name).decode())
    items = archive.read(f"{bench.name}-v1/items.jsonl").decode()
    assert "private" not in items and "is_private" not in items
    for url in (
        "/benchmarks/",
        f"/benchmarks/{bench.name}/",
        f"/benchmarks/{bench.name}/?dim=alignment&modality=text",
        f"/benchmarks/submissions/{world['mine'].pk}/",
        f"/benchmarks/submissions/{world['theirs'].pk}/",
    ):
        response = c.get(url)
        assert response.status_code == 200, url
        _no_labels(response.content.decode())
    for url in ("/api/benchmarks/", f"/api/benchmarks/{bench.name}/leaderboard/", f"/api/benchmarks/submissions/{world['mine'].pk}/", f"/api/benchmarks/submissions/{world['theirs'].pk}/"):
        response = c.get(url)
        assert response.status_code == 200, url
        _no_labels(response.content.decode())


def test_private_scores_stay_hidden_from_every_team_until_the_close(world):
    c, bench, theirs, mine = world["client"], world["bench"], world["theirs"], world["mine"]
    board = c.get(f"/api/benchmarks/{bench.name}/leaderboard/?dim=musicality").json()
    assert board["part"] == "public"
    rows = {r["submission"]: r for r in board["rows"]}
    assert rows[theirs.pk]["accuracy"] == 1.0  # public part
    assert rows[theirs.pk]["own_private"] is None
    # Not even its own: a team's private accuracy before the close is a label channel (one-item edits between uploads).
    assert rows[mine.pk]["own_private"] is None
    for sub in (theirs, mine):
        assert set(c.get(f"/api/benchmarks/submissions/{sub.pk}/").json()["parts"]) == {"public"}
        assert 'data-part="private"' not in c.get(f"/benchmarks/submissions/{sub.pk}/").content.decode()
    assert 'id="private-note"' in c.get(f"/benchmarks/{bench.name}/").content.decode()
    researcher = Client()
    researcher.force_login(world["researcher"])
    assert set(researcher.get(f"/api/benchmarks/submissions/{mine.pk}/").json()["parts"]) == {"public", "private"}
    # After the close the private part is the leaderboard, for everyone.
    services.benchmark_close(benchmark=bench, operator=True)
    board = c.get(f"/api/benchmarks/{bench.name}/leaderboard/?dim=musicality").json()
    assert board["part"] == "private"
    assert {r["submission"]: r for r in board["rows"]}[theirs.pk]["accuracy"] == 0.0


def test_strangers_get_nothing(world):
    bench = world["bench"]
    anonymous, outsider = Client(), Client()
    outsider.force_login(UserFactory(username="outsider"))
    for client in (anonymous, outsider):
        for url in (
            f"/benchmarks/{bench.name}/export.zip",
            f"/benchmarks/submissions/{world['theirs'].pk}/",
            f"/api/benchmarks/{bench.name}/leaderboard/",
            f"/api/benchmarks/submissions/{world['theirs'].pk}/",
        ):
            assert client.get(url).status_code in (302, 403, 404), url
        assert client.get("/api/benchmarks/").status_code == 403


def test_public_setting_opens_the_leaderboard_but_not_private_scores(world, settings):
    settings.BENCHMARK_LEADERBOARD_PUBLIC = True
    board = Client().get(f"/api/benchmarks/{world['bench'].name}/leaderboard/").json()
    assert board["part"] == "public"
    assert all(r["own_private"] is None for r in board["rows"])


def test_error_messages_name_lines_not_labels(world):
    c, bench = world["client"], world["bench"]
    some_id = sorted(world["truth"])[0]
    body = f'{{"id": "{some_id}", "preferred": "A"}}\n{{"id": "{some_id}", "preferred": "B"}}\n'.encode()
    response = c.post(f"/api/benchmarks/{bench.name}/submissions/", {"team": "ours", "file": io.BytesIO(body)})
    assert response.status_code == 400
    text = json.dumps(response.json())
    assert "line 2" in text
    _no_labels(text)
    for word in ("correct", "wrong", "model_a", "model_b"):
        assert word not in text


def test_a_team_cannot_submit_as_another(world):
    c, bench = world["client"], world["bench"]
    body = jsonl([{"id": sorted(world["truth"])[0], "preferred": "A"}])
    response = c.post(f"/api/benchmarks/{bench.name}/submissions/", {"team": "theirs", "file": io.BytesIO(body)})
    assert response.status_code == 400
    assert response.json()["code"] == "no_team"


def test_no_listening_to_test_items(world):
    researcher = Client()
    researcher.force_login(world["researcher"])
    page = researcher.get(f"/benchmarks/submissions/{world['theirs'].pk}/").content.decode()
    assert 'id="disagreements"' not in page
    assert selectors.disagreements(world["bench"], world["theirs"], dim="musicality") == []


def test_no_websocket_route_for_benchmarks():
    from auditorium.asgi import application  # noqa: F401 (the ASGI routes load)
    from scoring.routing import websocket_urlpatterns

    assert not any("bench" in str(p.pattern) for p in websocket_urlpatterns)
    assert not any("bench" in str(p.pattern) and "ws" in str(p.pattern) for p in get_resolver().url_patterns)


def test_signed_audio_links_expire_and_refuse_forgeries(world, settings):
    c = Client()
    assert c.get("/benchmarks/audio/forged-token/").status_code == 404
    from scoring.benchmarks import audio

    item = world["bench"].items.first()
    url = audio.signed_url(None, world["bench"], item.clip_a)
    assert c.get(url).status_code == 200
    settings.BENCHMARK_AUDIO_URL_TTL = -1
    assert c.get(url).status_code == 404
