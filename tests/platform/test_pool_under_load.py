"""Sixty listeners at once against two database connections, under a real uvicorn server.

Each client asks for a pair, fetches both clips as the page does (ranged GETs read to the end) and
posts its listening events. The pool has 2 connections and a 3 s wait, far below the server's
threads and the clients: a request may be told to come back (503 with Retry-After), never 500,
and nothing acknowledged is lost (every clip read whole is noted, every event answered 200 stored).
"""

from __future__ import annotations

import copy
import threading
import uuid
from collections import Counter

import pytest
import requests
from django.db import connections

from annotation.models import AudioFetch, ListeningEvent
from tests.factories import AnnotatorFactory, ClipFactory, PairFactory, StudyAnnotatorFactory, StudyFactory
from tests.listening import clip_at
from tests.live_uvicorn import serving

pytestmark = pytest.mark.django_db(transaction=True)
CLIENTS = 60
TOKEN = "p" * 32


@pytest.fixture(autouse=True)
def own_cache(settings):
    caches = copy.deepcopy(settings.CACHES)
    caches["default"]["KEY_PREFIX"] = f"pool-test-{uuid.uuid4().hex}"
    settings.CACHES = caches


@pytest.fixture
def two_connections():
    """The process's pool rebuilt with 2 connections and a 3 s wait; restored afterwards."""
    db = connections["default"]
    options = db.settings_dict.setdefault("OPTIONS", {})
    before = copy.deepcopy(options.get("pool"))
    assert before, "PostgreSQL runs pooled (DB_POOL on)"
    db.close()
    db.close_pool()
    options["pool"] = {**before, "min_size": 1, "max_size": 2, "timeout": 3}
    yield
    db.close()
    db.close_pool()
    options["pool"] = before


@pytest.mark.services
def test_sixty_listeners_on_two_connections_get_no_500_and_lose_nothing(two_connections):
    study = StudyFactory(name="pool", min_listen_seconds=0.0)
    users = []
    for i in range(CLIENTS):
        PairFactory(study=study, clip_a=ClipFactory(duration=2.0), clip_b=ClipFactory(duration=2.0))
        user = AnnotatorFactory(username=f"pool-{i}")
        StudyAnnotatorFactory(study=study, annotator=user)
        users.append(user)
    from django.test import Client

    sessions = []
    for user in users:
        login = Client()
        login.force_login(user)
        sessions.append(login.cookies["sessionid"].value)
    statuses: Counter = Counter()
    retry_after_missing = []
    read_whole, events_acked = Counter(), Counter()
    failures = []
    lock = threading.Lock()
    start = threading.Barrier(CLIENTS)

    def call(http, method, url, **kwargs):
        for _ in range(20):
            answer = http.request(method, url, timeout=60, **kwargs)
            with lock:
                statuses[answer.status_code] += 1
                if answer.status_code == 503 and not answer.headers.get("Retry-After"):
                    retry_after_missing.append(url)
            if answer.status_code != 503:
                return answer
            threading.Event().wait(0.2)
        return answer

    def listener(index: int, base: str) -> None:
        try:
            http = requests.Session()
            http.cookies.update({"sessionid": sessions[index], "csrftoken": TOKEN})
            http.headers["X-CSRFToken"] = TOKEN
            start.wait(timeout=60)
            assignment = call(http, "POST", f"{base}/api/studies/pool/next/", json={}).json()["assignment"]
            for side in ("A", "B"):
                clip = assignment["clips"][side]
                body = call(http, "GET", base + clip["url"], headers={"Range": "bytes=0-"})
                assert body.status_code in (200, 206), body.status_code
                with lock:
                    read_whole[(users[index].pk, clip["url"])] = len(body.content)
            seq = assignment["listening"]["next_seq"] - 1
            url = f"{base}/api/assignments/{assignment['id']}/listening/"
            for side, kind in (("A", "play"), ("B", "switch"), ("B", "pause")):
                seq += 1
                answer = call(http, "POST", url, json={"events": [{"seq": seq, "side": side, "kind": kind, "position": 0.0}]})
                assert answer.status_code == 200, answer.text
                with lock:
                    events_acked[assignment["id"]] += answer.json()["accepted"]
        except Exception as exc:  # collected and asserted below, with the client's number
            failures.append((index, repr(exc)))

    with serving() as (port, _):
        base = f"http://127.0.0.1:{port}"
        threads = [threading.Thread(target=listener, args=(i, base)) for i in range(CLIENTS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=240)
    print("statuses:", dict(statuses))
    assert not failures, failures[:5]
    assert not [code for code in statuses if code >= 500 and code != 503], statuses
    assert not retry_after_missing, retry_after_missing[:3]
    # Nothing lost: each clip read whole is noted whole for its listener; each acknowledged event is stored.
    assert len(read_whole) == 2 * CLIENTS
    for (user_id, url), size in read_whole.items():
        assert AudioFetch.objects.filter(user_id=user_id, clip=clip_at(url), first_byte=0, last_byte=size - 1).exists()
    stored = Counter(ListeningEvent.objects.values_list("assignment_id", flat=True))
    assert stored == events_acked and sum(stored.values()) == 3 * CLIENTS


def _pool_timeout():
    """What Django raises when psycopg_pool gives up: its OperationalError, raised from PoolTimeout."""
    from django.db import OperationalError
    from psycopg_pool import PoolTimeout

    try:
        raise PoolTimeout("couldn't get a connection after 3.00 sec")
    except PoolTimeout as cause:
        try:
            raise OperationalError(str(cause)) from cause
        except OperationalError as exc:
            return exc


@pytest.mark.engine
def test_a_pool_timeout_anywhere_answers_503_with_retry_after_and_is_counted(client, monkeypatch):
    """In a view (through DRF) and in a middleware before any view: 503, Retry-After, counted, never 500."""
    from annotation import services
    from auditorium import dbpool
    from common.sessions import SessionStore

    user = AnnotatorFactory(username="pool-busy")
    client.force_login(user)
    client.raise_request_exception = False
    before = dbpool.pool_figures()["answered_503"]

    def busy(*args, **kwargs):
        raise _pool_timeout()

    monkeypatch.setattr(services, "listening_events_record", busy)
    answer = client.post("/api/assignments/1/listening/", {"events": [{"seq": 1, "side": "A", "kind": "play"}]}, content_type="application/json")
    assert answer.status_code == 503 and answer["Retry-After"] == str(dbpool.RETRY_AFTER_SECONDS) and answer.json()["code"] == "busy"
    monkeypatch.setattr(SessionStore, "load", busy)
    answer = client.get("/")
    assert answer.status_code == 503 and answer["Retry-After"]
    assert dbpool.pool_figures()["answered_503"] == before + 2
    # Any other error stays what it is: the rule looks for the pool's own exception type.
    assert dbpool.pool_timeout_response(None, RuntimeError("x")) is None
