"""Prediction files that used to crash or cost: refused early, in bounded time and memory, through the real endpoints."""

from __future__ import annotations

import io
import os
import threading
import time

import pytest
from django.middleware.csrf import _get_new_csrf_string
from django.test import Client

from scoring.benchmarks import formats, services
from scoring.benchmarks.models import Team
from tests.benchmarks.helpers import known_study
from tests.factories import UserFactory

DEEP = b"[" * 100_000


class RssPeak:
    """The process's resident memory sampled every 5 ms while in the block: `growth` = highest sample - the first.
    (Not tracemalloc: tracing every allocation slows a 10 MB multipart parse many times over.)"""

    def __enter__(self):
        self.base = self.high = self._rss()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    @staticmethod
    def _rss() -> int:
        with open("/proc/self/statm") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    def _sample(self):
        while not self._stop.wait(0.005):
            self.high = max(self.high, self._rss())

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.high = max(self.high, self._rss())

    @property
    def growth(self) -> int:
        return self.high - self.base
LONG_NUMBER = b'{"id": "ub-00001", "probability_a": 0.' + b"5" * 5000 + b"}\n"


def _world():
    study, _ = known_study(n_pairs=6, name="ub")
    bench = services.benchmark_create(name="ub", study=study, bootstrap_rounds=100)
    member = UserFactory(username="ub-member")
    Team.objects.create(name="ub-team", benchmark=bench).members.add(member)
    client = Client()
    client.force_login(member)
    return bench, member, client


@pytest.mark.django_db
@pytest.mark.parametrize("body", [DEEP, LONG_NUMBER, b'{"id": "ub-00001", "probability_a": ' + b"9" * 5000 + b"}\n"], ids=["deep", "long-float", "long-int"])
def test_hostile_files_get_a_clear_400_on_the_api_and_a_message_on_the_form(body):
    bench, _, client = _world()
    response = client.post(f"/api/benchmarks/{bench.name}/submissions/", {"team": "ub-team", "file": io.BytesIO(body)})
    assert response.status_code == 400
    assert "line 1:" in response.json()["detail"] and ("levels deep" in response.json()["detail"] or "characters" in response.json()["detail"])
    page = client.post(f"/benchmarks/{bench.name}/submit/", {"team": "ub-team", "file": io.BytesIO(body)}, follow=True)
    assert page.status_code == 200 and "The file was refused and nothing was stored" in page.content.decode()
    assert not bench.submissions.exists()


@pytest.mark.django_db
def test_rows_past_the_items_and_a_margin_stop_the_reading():
    bench, _, client = _world()
    body = b'{"id": "nope", "preferred": "A"}\n' * 10 + b'{"id": "ub-00001", "preferred": "A"}\n' * 1000
    started = time.perf_counter()
    answer = client.post(f"/api/benchmarks/{bench.name}/submissions/", {"team": "ub-team", "file": io.BytesIO(body)}).json()
    assert time.perf_counter() - started < 5
    assert "line 1:" in answer["detail"] and len(answer.get("errors", [])) <= formats.MAX_ERRORS
    ids = {f"r-{n}" for n in range(6)}
    with pytest.raises(formats.PredictionFileError, match="line 4: more rows than the benchmark's 6 items allow \\(3\\); the rest was not read"):
        formats.parse_predictions(b"".join(b'{"id": "r-%d", "preferred": "A"}\n' % n for n in range(6)), item_ids=ids, max_rows=3)
    assert formats.ROW_MARGIN == 100  # the default: items + 100


@pytest.mark.engine
@pytest.mark.django_db(transaction=True)
def test_a_10_mb_file_of_junk_lines_is_refused_in_bounded_time_and_memory_under_uvicorn():
    import requests

    from tests.live_uvicorn import serving

    bench, member, client = _world()
    token = _get_new_csrf_string()
    cookies = {"sessionid": client.cookies["sessionid"].value, "csrftoken": token}
    junk = b"x\n" * 5_000_000
    assert len(junk) == 10_000_000
    with serving() as (port, _), RssPeak() as memory:
        started = time.perf_counter()
        response = requests.post(
            f"http://127.0.0.1:{port}/api/benchmarks/{bench.name}/submissions/",
            data={"team": "ub-team"},
            files={"file": ("junk.jsonl", junk)},
            cookies=cookies,
            headers={"X-CSRFToken": token},
            timeout=120,
        )
        seconds = time.perf_counter() - started
    peak = memory.growth
    print(f"10 MB junk file: {seconds:.2f} s, resident memory +{peak / 1e6:.1f} MB at most")
    assert response.status_code == 400, response.text[:300]
    assert "line 1: not valid JSON" in response.json()["detail"]
    # Before the bounds: about 20 s and +1.0 GB for this file. The body itself is 10 MB, read and decoded once each.
    # Generous for a loaded 2-core machine (measured 1-4 s and +87 MB there).
    assert seconds < 15, seconds
    assert peak < 300 * 1024 * 1024, peak
    assert not bench.submissions.exists()
