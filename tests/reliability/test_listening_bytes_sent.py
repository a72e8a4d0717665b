"""Listening proof under a real uvicorn server: a clip counts only as far as its bytes reached the socket before the client left.

The client here asks for each clip, reads the headers and closes (a small receive buffer, as a
client that never reads would leave the kernel to fill): the server notes only what it sent
before the close, at the end of the response, and the answer after paced play/switch events is
refused. The same client reading the whole clip is credited the whole clip.
"""

from __future__ import annotations

import copy
import time
import uuid
from datetime import timedelta

import pytest
import requests
from django.utils import timezone

from annotation.models import AudioFetch
from arena.models import BattleAudioFetch
from tests.factories import PairFactory, StudyAnnotatorFactory, StudyFactory, UserFactory
from tests.listening import Clock, clip_at
from tests.live_uvicorn import serving
from tests.raw_audio import RATE, TOKEN, get_headers_then_close, long_clip

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def own_cache(settings):
    caches = copy.deepcopy(settings.CACHES)
    caches["default"]["KEY_PREFIX"] = f"sent-test-{uuid.uuid4().hex}"
    settings.CACHES = caches


# Long enough that the kernel's socket buffers (a few MB on loopback) cannot swallow the file whole:
# bytes the kernel took are indistinguishable from bytes delivered, so a short clip cannot show the difference.
SECONDS = 120.0
# What a client that never reads can be credited: the socket buffers' worth (docs/listening.md), with room.
CREDIT_BOUND_BYTES = 4 * 2**20


def wait_for(predicate, timeout: float = 10.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


@pytest.mark.engine
def test_an_annotator_who_closes_after_the_headers_is_not_credited_and_the_judgment_is_refused(monkeypatch):
    study = StudyFactory(name="sent", min_listen_seconds=60.0)
    pair = PairFactory(study=study, clip_a=long_clip(300.0, SECONDS), clip_b=long_clip(500.0, SECONDS))
    annotator = UserFactory(username="sent-annotator", roles=["annotator"])
    StudyAnnotatorFactory(study=study, annotator=annotator)
    from django.test import Client

    from annotation.services import consent_give

    consent_give(user=annotator)
    login = Client()
    login.force_login(annotator)
    session = login.cookies["sessionid"].value
    cookies = {"sessionid": session, "csrftoken": TOKEN}
    headers = {"X-CSRFToken": TOKEN}
    clock = Clock(monkeypatch)
    with serving() as (port, _):
        base = f"http://127.0.0.1:{port}"
        assignment = requests.post(f"{base}/api/studies/sent/next/", json={}, cookies=cookies, headers=headers, timeout=10).json()["assignment"]
        for side in ("A", "B"):
            head = get_headers_then_close(port, assignment["clips"][side]["url"], f"sessionid={session}")
            assert head.startswith(b"HTTP/1.1 200")
        # The responses end once the server sees the close; only then are they noted.
        time.sleep(1.5)
        fetched = list(AudioFetch.objects.filter(user=annotator).values_list("first_byte", "last_byte", "total_bytes"))
        print("noted after a close after the headers (first, last, total):", fetched)
        for first, last, total in fetched:
            assert last - first + 1 < total // 3, (first, last, total)
            # The documented bound (docs/listening.md): what the kernel's buffers take, measured 2.9 MB on loopback.
            assert last - first + 1 <= CREDIT_BOUND_BYTES, (first, last, total)
        seq = assignment["listening"]["next_seq"] - 1
        url = f"{base}/api/assignments/{assignment['id']}/listening/"
        for side in ("A", "B"):
            for kind in ["play" if side == "A" else "switch"] + ["tick"] * 61:
                seq += 1
                clock.advance(1.0)
                answer = requests.post(url, json={"events": [{"seq": seq, "side": side, "kind": kind, "position": 0.0}]}, cookies=cookies, headers=headers, timeout=10)
                assert answer.status_code in (200, 201), answer.text
        vote = {"idempotency_key": "sent-1", "alignment": "A", "alignment_confidence": "3.0", "musicality": "B", "musicality_confidence": "3.0"}
        refused = requests.post(f"{base}/api/assignments/{assignment['id']}/judgment/", json=vote, cookies=cookies, headers=headers, timeout=10)
        assert refused.status_code == 400 and refused.json()["code"] == "listening_too_short", refused.text
        assert max(refused.json()["heard"].values()) < 30.0
        # The same listener reading both clips whole is credited whole, and the same events then pass.
        for side in ("A", "B"):
            body = requests.get(base + assignment["clips"][side]["url"], cookies=cookies, timeout=30).content
            assert len(body) == clip_at(assignment["clips"][side]["url"]).file.size
    whole = AudioFetch.objects.filter(user=annotator, first_byte=0).order_by("-last_byte").first()
    assert whole is not None and whole.last_byte == whole.total_bytes - 1
    assert pair.pk


@pytest.mark.engine
def test_an_arena_visitor_who_closes_after_the_headers_is_not_credited(settings):
    from tests.arena.conftest import arena_system, ready_battle, visitor_with_terms

    settings.ARENA_SAMPLE_RATE = RATE
    visitor, cookie = visitor_with_terms()
    battle = ready_battle(visitor, arena_system("sent-a"), arena_system("sent-b"), seconds=SECONDS)
    with serving() as (port, _):
        for side in ("a", "b"):
            head = get_headers_then_close(port, f"/arena/audio/{battle.public_id}/{side}/", f"{settings.ARENA_VISITOR_COOKIE}={cookie}")
            assert head.startswith(b"HTTP/1.1 200")
        time.sleep(1.5)
        fetched = list(BattleAudioFetch.objects.filter(battle=battle).values_list("first_byte", "last_byte", "total_bytes"))
        print("arena: noted after a close after the headers (first, last, total):", fetched)
        for first, last, total in fetched:
            assert last - first + 1 < total // 2, (first, last, total)
            assert last - first + 1 <= CREDIT_BOUND_BYTES, (first, last, total)
        whole = requests.get(f"http://127.0.0.1:{port}/arena/audio/{battle.public_id}/a/", cookies={settings.ARENA_VISITOR_COOKIE: cookie}, timeout=30)
        assert whole.status_code == 200
    assert wait_for(lambda: BattleAudioFetch.objects.filter(battle=battle, side="a", first_byte=0, last_byte=len(whole.content) - 1).exists())
    # Plausible playing after it counts nothing: no response was proven received (the headers-only ones cannot be).
    from arena.selectors import listening_record
    from tests.arena.conftest import send

    start = timezone.now() + timedelta(seconds=1)  # after every fetch, so only the proof can withhold the credit
    heard = send(battle, visitor, [(0.0, "play", "a"), *[(float(k), "tick", "a") for k in range(1, 4)], (3.0, "switch", "b"), *[(3.0 + k, "tick", "b") for k in range(1, 4)], (6.0, "pause", "b")], start=start)["heard"]
    assert heard == {"a": 0.0, "b": 0.0}, heard
    assert set(listening_record(battle).get("unproven", [])) == {"a", "b"}
