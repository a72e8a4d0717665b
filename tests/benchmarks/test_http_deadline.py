"""An outside judge over HTTP: one deadline per request however slowly the answer trickles, and, without a broker,
a run that returns at once and shows its progress; under a real uvicorn server."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests
from django.middleware.csrf import _get_new_csrf_string
from django.test import Client

from scoring.benchmarks import services
from scoring.benchmarks.models import JudgeEndpoint, Prediction, Submission, Team
from tests.benchmarks.helpers import known_study
from tests.factories import UserFactory
from tests.live_uvicorn import serving

pytestmark = pytest.mark.django_db(transaction=True)


class _Trickle(BaseHTTPRequestHandler):
    """Sends its headers at once, then the answer one byte every 0.4 s (about 8 s for the whole answer)."""

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        raw = b'{"preferred": "A", "pad": "' + b"p" * 6 + b'"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        try:
            for byte in raw:
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                time.sleep(0.4)
        except OSError:
            pass

    def log_message(self, *args):
        pass


@pytest.mark.engine
def test_a_trickled_answer_times_out_at_the_deadline_and_the_post_returns_at_once(settings):
    settings.BENCHMARK_HTTP_TIMEOUT = 2.0
    settings.BENCHMARK_HTTP_RETRIES = 0
    settings.BENCHMARK_HTTP_CONCURRENCY = 4
    settings.BENCHMARK_HTTP_IN_THREAD = True  # as without a broker
    settings.BENCHMARK_ENDPOINT_PRIVATE_NETWORKS = ["127.0.0.1"]
    settings.BENCHMARK_AUDIO_BASE_URL = "http://testserver"
    judge = ThreadingHTTPServer(("127.0.0.1", 0), _Trickle)
    threading.Thread(target=judge.serve_forever, daemon=True).start()
    study, _ = known_study(n_pairs=4, name="trickle")
    bench = services.benchmark_create(name="trickle", study=study, bootstrap_rounds=100)
    member = UserFactory(username="trickle-member")
    team = Team.objects.create(name="trickle-team", benchmark=bench)
    team.members.add(member)
    JudgeEndpoint.objects.create(team=team, name="slow", url=f"http://127.0.0.1:{judge.server_address[1]}/")
    client = Client()
    client.force_login(member)
    token = _get_new_csrf_string()
    try:
        with serving() as (port, _):
            # The first request of a fresh server pays for its start (imports, URL conf); not the run's cost.
            requests.get(f"http://127.0.0.1:{port}/api/benchmarks/", cookies={"sessionid": client.cookies["sessionid"].value}, timeout=30)
            started = time.perf_counter()
            response = requests.post(
                f"http://127.0.0.1:{port}/api/benchmarks/{bench.name}/runs/",
                json={"team": "trickle-team", "endpoint": "slow"},
                cookies={"sessionid": client.cookies["sessionid"].value, "csrftoken": token},
                headers={"X-CSRFToken": token},
                timeout=30,
            )
            answered_in = time.perf_counter() - started
            assert response.status_code == 202, response.text[:300]
            submission_id = response.json()["submission"]
            page = requests.get(f"http://127.0.0.1:{port}/api/benchmarks/submissions/{submission_id}/", cookies={"sessionid": client.cookies["sessionid"].value}, timeout=30).json()
            while Submission.objects.get(pk=submission_id).state not in (Submission.State.DONE, Submission.State.FAILED):
                assert time.perf_counter() - started < 30, "the run did not finish"
                time.sleep(0.1)
            finished_in = time.perf_counter() - started
    finally:
        judge.shutdown()
    print(f"POST answered in {answered_in:.2f} s; run finished in {finished_in:.2f} s")
    # Before: the whole run inside the POST, and each trickled answer (about 8 s) accepted.
    assert answered_in < 1.5
    assert page["state"] in ("pending", "running") and page["progress"]["items"] == 4
    submission = Submission.objects.get(pk=submission_id)
    assert submission.state == Submission.State.DONE and submission.n_timeouts == 4
    assert set(Prediction.objects.filter(submission=submission).values_list("error", flat=True)) == {"timeout"}
    # Four requests at once, each cut at its 2 s deadline (generous for a loaded machine, far under the 8 s trickle).
    assert finished_in < 6.5
