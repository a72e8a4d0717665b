"""Submissions that run: an in-platform judge through a scoring run, and an outside judge over HTTP (a local server)."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse

import pytest
from django.test import Client

from scoring.benchmarks import runners, selectors, services
from scoring.benchmarks.models import Prediction, Submission
from scoring.evaluation import NO_LABEL, label_code
from scoring.models import Judge, Verdict
from tests.benchmarks.helpers import item_truth, jsonl, known_study
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def bench():
    study, _ = known_study(n_pairs=8, name="run")
    return services.benchmark_create(name="run", study=study, bootstrap_rounds=100)


def test_in_platform_judge_becomes_a_submission(bench, django_capture_on_commit_callbacks):
    judge = Judge.objects.create(key="signal", kind=Judge.Kind.SIGNAL)
    team = services.team_create(name="house")
    with django_capture_on_commit_callbacks(execute=True):
        submission = runners.judge_submission_create(benchmark=bench, team=team, judge=judge)
    submission.refresh_from_db()
    assert submission.state == Submission.State.DONE
    assert submission.kind == Submission.Kind.JUDGE
    verdicts = {v.pair_id: v for v in Verdict.objects.filter(run=submission.scoring_run)}
    assert len(verdicts) == 8
    for item in bench.items.all():
        prediction = Prediction.objects.get(submission=submission, item=item)
        assert prediction.musicality == label_code(verdicts[item.pair_id].details["labels"]["musicality"])
        assert prediction.alignment == NO_LABEL  # the signal judge answers musicality only
    row = next(r for r in selectors.scores(bench, part="all", dim="musicality")["rows"] if r["submission"] == submission.pk)
    assert row["answered"] == 8


class _Judge(BaseHTTPRequestHandler):
    """Answers the truth, except: items in `slow` never in time, items in `flaky` fail once with a 500 first."""

    truth: dict = {}
    slow: set = set()
    flaky: set = set()
    seen: dict = {}
    payloads: list = []
    signed: list = []
    in_flight = 0
    peak = 0
    lock = threading.Lock()

    def do_POST(self):
        raw = self.rfile.read(int(self.headers["Content-Length"]))
        payload = json.loads(raw)
        cls = type(self)
        with cls.lock:
            cls.signed.append((self.headers.get("X-Auditorium-Timestamp"), self.headers.get("X-Auditorium-Signature"), raw))
            cls.in_flight += 1
            cls.peak = max(cls.peak, cls.in_flight)
            cls.seen[payload["id"]] = cls.seen.get(payload["id"], 0) + 1
            cls.payloads.append(payload)
            first = cls.seen[payload["id"]] == 1
        try:
            time.sleep(0.05)
            if payload["id"] in cls.slow:
                time.sleep(1.0)
            if payload["id"] in cls.flaky and first:
                self.send_response(500)
                self.end_headers()
                return
            answer = {"preferred_musicality": cls.truth[payload["id"]]["musicality"], "preferred_alignment": cls.truth[payload["id"]]["alignment"], "probability_a": 0.5}
            body = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            with cls.lock:
                cls.in_flight -= 1

    def log_message(self, *args):
        pass


@pytest.mark.engine
def test_outside_judge_over_http(bench, settings, django_capture_on_commit_callbacks, monkeypatch):
    settings.BENCHMARK_HTTP_TIMEOUT = 0.4
    settings.BENCHMARK_HTTP_RETRIES = 1
    settings.BENCHMARK_HTTP_CONCURRENCY = 2
    settings.BENCHMARK_AUDIO_BASE_URL = "http://testserver"
    settings.BENCHMARK_ENDPOINT_PRIVATE_NETWORKS = ["127.0.0.1"]  # the judge below listens on loopback
    truth = item_truth(bench)
    ids = sorted(truth)
    _Judge.truth, _Judge.slow, _Judge.flaky, _Judge.seen, _Judge.payloads, _Judge.peak, _Judge.signed = truth, {ids[0]}, {ids[1]}, {}, [], 0, []
    # Requests in flight as the platform sees them (the server may still be sleeping on one it gave up on).
    ask, flight = runners._ask, {"now": 0, "peak": 0}
    lock = threading.Lock()

    def counted(url, secret, payload, opener):
        with lock:
            flight["now"] += 1
            flight["peak"] = max(flight["peak"], flight["now"])
        try:
            return ask(url, secret, payload, opener)
        finally:
            with lock:
                flight["now"] -= 1

    monkeypatch.setattr(runners, "_ask", counted)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Judge)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/judge"
        # Registered once on the team's page by a member, then run by name from the benchmark's page.
        member = UserFactory(username="remote-member")
        services.team_create(name="remote", members=[member])
        client = Client()
        client.force_login(member)
        assert client.post("/benchmarks/teams/remote/endpoints/", {"name": "remote-judge", "url": url}).status_code == 302
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(f"/benchmarks/{bench.name}/run/", {"team": "remote", "endpoint": "remote-judge"})
        assert response.status_code == 302
    finally:
        server.shutdown()
    submission = Submission.objects.get(team__name="remote")
    assert submission.label == "remote-judge" and submission.endpoint.url == url
    # Every request (retries included) carries a fresh timestamp and a valid HMAC of it and the body.
    secret = submission.endpoint.secret
    assert len(_Judge.signed) == 8 + 2
    for stamp, sig, raw in _Judge.signed:
        assert abs(int(stamp) - time.time()) < 60
        assert sig == "sha256=" + hmac.new(secret.encode(), stamp.encode() + b"." + raw, hashlib.sha256).hexdigest()
    assert submission.state == Submission.State.DONE
    assert (submission.n_timeouts, submission.n_errors) == (1, 0)
    assert flight["peak"] == 2
    assert _Judge.seen[ids[0]] == 2 and _Judge.seen[ids[1]] == 2  # retried once each
    slow = Prediction.objects.get(submission=submission, item__item_id=ids[0])
    assert (slow.musicality, slow.error) == (NO_LABEL, "timeout")
    # The timed-out item counts wrong: 7 of 8 right.
    row = next(r for r in selectors.scores(bench, part="all", dim="musicality")["rows"] if r["submission"] == submission.pk)
    assert row["accuracy"] == pytest.approx(7 / 8)
    assert row["errors"] == 1
    # The judge got the prompt and signed audio links that work, and nothing about the humans.
    payload = _Judge.payloads[0]
    assert set(payload) == {"id", "prompt", "lyrics", "modality", "audio_a", "audio_b", "reference_audio", "expires_in"}
    assert Client().get(urlparse(payload["audio_a"]).path).status_code == 200
    # The leaderboard shows the unanswered count.
    researcher = Client()
    researcher.force_login(UserFactory(username="r", roles=["researcher"]))
    assert "1 timeouts, 0 errors: counted wrong" in researcher.get(f"/benchmarks/{bench.name}/").content.decode()


def test_scores_are_recomputed_when_an_older_submission_finishes(bench):
    truth = item_truth(bench)
    team = services.team_create(name="order")
    running = Submission.objects.create(benchmark=bench, team=team, kind=Submission.Kind.HTTP, state=Submission.State.RUNNING)
    services.submission_from_file(benchmark=bench, team=team, data=jsonl([{"id": i, "preferred": "A"} for i in truth]))
    assert len(selectors.scores(bench, part="all", dim="musicality")["rows"]) == 1
    runners._store_answers(running, list(bench.items.all()), [{"musicality": 0, "alignment": 0}] * bench.n_items)
    from django.utils import timezone

    Submission.objects.filter(pk=running.pk).update(state=Submission.State.DONE, finished_at=timezone.now())
    assert len(selectors.scores(bench, part="all", dim="musicality")["rows"]) == 2
