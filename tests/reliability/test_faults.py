"""Fault and concurrency tests across the apps (run against the real services in CI's second pass).

- 50 concurrent HTTP clients submit judgments and arena votes, each retrying with
  the same idempotency key: nothing lost, nothing duplicated, no pair over-assigned.
- Redis is restarted while votes arrive: every vote lands in the database.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
import uuid
from collections import Counter
from datetime import timedelta
from urllib.parse import urlparse

import pytest
from django.conf import settings
from django.db import connection
from django.test import Client
from django.utils import timezone

from annotation.models import Judgment
from arena.models import AdapterKind, ArenaSystem, Battle, BattleAudioFetch, BattleAudioReceipt, ListenEvent, Vote
from arena.selectors import listening_record
from arena.services import visitor_accept_terms
from tests.factories import ClipFactory, PairFactory, StudyAnnotatorFactory, StudyFactory, SystemFactory

FAST = {"ARENA_VOTE_RATE": "100000/60", "ARENA_IP_VOTE_RATE": "100000/60", "ARENA_DAILY_VOTE_CAP": 100000, "ARENA_LEADERBOARD_ROUNDS": 20}


@pytest.fixture
def fast_arena(settings):
    for name, value in FAST.items():
        setattr(settings, name, value)
    caches = json.loads(json.dumps(settings.CACHES))
    caches["default"]["KEY_PREFIX"] = f"faults-{uuid.uuid4().hex}"
    settings.CACHES = caches
    return settings


def ready_battles(n: int, *, per_visitor: int = 1):
    """Battles ready to vote on, with enough listening recorded on the server's clock."""
    systems = [
        ArenaSystem.objects.create(system=SystemFactory(name=f"faults-{i}-{uuid.uuid4().hex[:6]}"), adapter_kind=AdapterKind.DEMO, adapter_config={"demo": "aurora"})
        for i in range(2)
    ]
    clip_a, clip_b = ClipFactory(system=systems[0].system), ClipFactory(system=systems[1].system)
    ready_at = timezone.now() - timedelta(minutes=5)
    out = []
    for i in range(0, n, per_visitor):
        visitor, cookie = visitor_accept_terms(cookie=None, version=settings.ARENA_TERMS_VERSION)
        for _ in range(min(per_visitor, n - i)):
            battle = Battle.objects.create(
                visitor=visitor, prompt="calm pads", duration_requested=5.0, seed=1, system_a=systems[0], system_b=systems[1],
                clip_a=clip_a, clip_b=clip_b, status=Battle.Status.READY, ready_at=ready_at,
            )
            # Both clips sent, then A played for 10 s and B after it: one clip at a time, as the server counts.
            BattleAudioFetch.objects.bulk_create(
                [BattleAudioFetch(battle=battle, side=side, first_byte=0, last_byte=999, total_bytes=1000, served_at=ready_at) for side in ("a", "b")]
            )
            # ... and proven received (tests/arena/test_audio_proof.py checks the receipts themselves).
            BattleAudioReceipt.objects.bulk_create([BattleAudioReceipt(battle=battle, side=side, first_byte=0, last_byte=999, received_at=ready_at) for side in ("a", "b")])
            ListenEvent.objects.bulk_create(
                [
                    ListenEvent(battle=battle, seq=6 * n + k + 1, side=side, kind=kind, server_time=ready_at + timedelta(seconds=1 + 12 * n + 2 * k))
                    for n, side in enumerate(("a", "b"))
                    for k, kind in enumerate(("play", "tick", "tick", "tick", "tick", "pause"))
                ]
            )
            battle.listening, battle.listen_seq = listening_record(battle), 12
            battle.save(update_fields=["listening", "listen_seq"])
            out.append((battle, cookie))
    return out


def post_with_retries(client: Client, url: str, body: dict, *, attempts: int = 8, flaky=None) -> int:
    """Send, and on a lost answer (exception, 5xx, or a simulated drop) send the very same body again."""
    status = 0
    for attempt in range(attempts):
        try:
            response = client.post(url, data=json.dumps(body), content_type="application/json")
            status = response.status_code
        except Exception:
            status = 599
        if flaky is not None and flaky(attempt) and status < 500:
            continue  # the answer "got lost": the client cannot know it was stored
        if status < 500:
            return status
        time.sleep(0.05 * (attempt + 1))
    return status


@pytest.mark.engine
@pytest.mark.django_db(transaction=True)
def test_fifty_clients_with_retries_lose_nothing_and_duplicate_nothing(fast_arena):
    study = StudyFactory(overlap_target=2, overlap_share=1.0, min_listen_seconds=0.0)
    pairs = [PairFactory(study=study, overlap=2) for _ in range(30)]
    annotators = [StudyAnnotatorFactory(study=study).annotator for _ in range(25)]
    battles = ready_battles(50, per_visitor=2)
    acknowledged_judgments: list[int] = []
    acknowledged_votes: list[int] = []
    errors: list[str] = []
    lock = threading.Lock()
    gate = threading.Barrier(50, timeout=120)
    # Every other first answer is dropped, so half the writes are retried with the same key.
    drop_first = lambda attempt: attempt == 0  # noqa: E731

    def annotator_client(user):
        client = Client()
        client.force_login(user)
        try:
            gate.wait()
            for _ in range(4):
                r = client.post(f"/api/studies/{study.name}/next/")
                assignment = r.json().get("assignment")
                if assignment is None:
                    break
                body = {
                    "idempotency_key": uuid.uuid4().hex, "alignment": "A", "alignment_confidence": 3, "musicality": "B",
                    "musicality_confidence": 4, "listening_log": {"A": {"plays": 1, "seconds": 0}, "B": {"plays": 1, "seconds": 0}},
                }
                status = post_with_retries(client, f"/api/assignments/{assignment['id']}/judgment/", body, flaky=drop_first)
                if status in (200, 201):
                    with lock:
                        acknowledged_judgments.append(assignment["id"])
                else:
                    errors.append(f"judgment {status}")
        finally:
            connection.close()

    def visitor_client(items):
        try:
            gate.wait()
            for battle, cookie in items:
                client = Client()
                client.cookies[settings.ARENA_VISITOR_COOKIE] = cookie
                body = {"vote": "a", "idempotency_key": uuid.uuid4().hex}
                status = post_with_retries(client, f"/arena/api/battles/{battle.public_id}/vote/", body, flaky=drop_first)
                if status in (200, 201):
                    with lock:
                        acknowledged_votes.append(battle.pk)
                else:
                    errors.append(f"vote {status}")
        finally:
            connection.close()

    by_visitor: dict[str, list] = {}
    for battle, cookie in battles:
        by_visitor.setdefault(cookie, []).append((battle, cookie))
    threads = [threading.Thread(target=annotator_client, args=(u,)) for u in annotators]
    threads += [threading.Thread(target=visitor_client, args=(items,)) for items in by_visitor.values()]
    assert len(threads) == 50
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=240)

    assert not errors, errors[:5]
    stored = Counter(Judgment.objects.values_list("assignment_id", flat=True))
    assert sorted(stored) == sorted(acknowledged_judgments)  # nothing lost, nothing extra
    assert max(stored.values()) == 1  # no duplicate per retried submit
    per_pair = Counter(Judgment.objects.values_list("pair_id", flat=True))
    # Never over-assigned; 25 annotators x 4 attempts fill all 30 x 2 slots.
    assert max(per_pair.values()) <= 2 and sum(per_pair.values()) == len(pairs) * 2
    votes = Counter(Vote.objects.values_list("battle_id", flat=True))
    assert sorted(votes) == sorted(acknowledged_votes) and len(votes) == 50
    assert max(votes.values()) == 1


def _redis_target():
    url = os.environ.get("REDIS_URL", "")
    parsed = urlparse(url)
    if not url or parsed.hostname not in ("127.0.0.1", "localhost") or (parsed.port or 6379) != 6379:
        return None
    if not shutil.which("redis-server") or not shutil.which("redis-cli"):
        return None
    return parsed


def _redis_restart(pause: float, window: dict) -> None:
    subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", "6379", "shutdown", "nosave"], capture_output=True, timeout=10)
    window["down"] = time.monotonic()
    time.sleep(pause)
    window["up"] = time.monotonic()
    subprocess.run(
        ["redis-server", "--daemonize", "yes", "--bind", "127.0.0.1", "-::1", "--port", "6379", "--save", "", "--appendonly", "no",
         "--dir", "/var/lib/redis", "--logfile", "/var/log/redis/ci.log"],
        capture_output=True, timeout=10,
    )
    for _ in range(50):
        if subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", "6379", "ping"], capture_output=True, text=True).stdout.strip() == "PONG":
            return
        time.sleep(0.1)
    raise RuntimeError("redis did not come back")


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_redis_restart_while_votes_arrive_loses_no_vote(fast_arena):
    if _redis_target() is None:
        pytest.skip("needs a local Redis on 127.0.0.1:6379 that this test may restart")
    battles = ready_battles(40, per_visitor=40)
    cookie = battles[0][1]
    stored_ok: list[int] = []
    failures: list[str] = []
    acked_at: list[float] = []
    window: dict = {}

    def voter():
        client = Client()
        client.cookies[settings.ARENA_VISITOR_COOKIE] = cookie
        try:
            for battle, _ in battles:
                body = {"vote": "b", "idempotency_key": f"k-{battle.pk}"}
                status = post_with_retries(client, f"/arena/api/battles/{battle.public_id}/vote/", body, attempts=30)
                (stored_ok if status in (200, 201) else failures).append(battle.pk if status in (200, 201) else f"{battle.pk}:{status}")
                acked_at.append(time.monotonic())
                time.sleep(0.02)
        finally:
            connection.close()

    thread = threading.Thread(target=voter)
    thread.start()
    time.sleep(0.2)
    _redis_restart(pause=1.0, window=window)
    thread.join(timeout=180)

    assert not failures, failures[:5]
    # The outage really overlapped the votes: some were accepted while Redis was down.
    assert any(window["down"] <= t <= window["up"] for t in acked_at)
    assert Vote.objects.filter(battle__in=[b for b, _ in battles]).count() == 40 == len(stored_ok)
    # The live side recovers: with Redis back, the channel layer delivers again.
    from asgiref.sync import async_to_sync
    from channels.layers import get_channel_layer

    layer = get_channel_layer()
    channel = async_to_sync(layer.new_channel)()
    async_to_sync(layer.group_add)("faults-probe", channel)
    async_to_sync(layer.group_send)("faults-probe", {"type": "probe", "ok": True})
    assert async_to_sync(layer.receive)(channel)["ok"] is True
