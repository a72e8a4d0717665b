"""Arena test helpers: systems, visitors with accepted terms, ready battles with real clips."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings
from django.test import Client
from django.utils import timezone

from arena.blind import HEADER_BYTES, SAMPLE_BYTES, blind_frames
from arena.models import AdapterKind, ArenaSystem, Battle, BattleAudioFetch, Visitor
from arena.audio import battle_audio_fetch_record
from arena.services import listen_events_record, visitor_accept_terms
from tests.factories import ClipFactory, SystemFactory

FAST_RATES = {
    "ARENA_VOTE_RATE": "1000/60",
    "ARENA_IP_VOTE_RATE": "1000/60",
    "ARENA_BATTLE_RATE": "1000/60",
    "ARENA_IP_BATTLE_RATE": "1000/60",
    "ARENA_EVENT_RATE": "10000/60",
    "ARENA_LEADERBOARD_ROUNDS": 50,
    "ARENA_LEADERBOARD_MIN_VOTES": 0,
}


@pytest.fixture(autouse=True)
def arena_settings(settings):
    for name, value in FAST_RATES.items():
        setattr(settings, name, value)
    yield settings


def arena_system(name: str, **fields) -> ArenaSystem:
    defaults = {"adapter_kind": AdapterKind.DEMO, "adapter_config": {"demo": "aurora"}, "supports_vocals": True, "supports_instrumental": True, "max_duration_seconds": 60.0}
    defaults.update(fields)
    return ArenaSystem.objects.create(system=SystemFactory(name=name), **defaults)


def visitor_with_terms() -> tuple[Visitor, str]:
    return visitor_accept_terms(cookie=None, version=settings.ARENA_TERMS_VERSION)


def visitor_client(cookie: str, *, csrf: bool = False) -> Client:
    client = Client(enforce_csrf_checks=csrf, REMOTE_ADDR="203.0.113.7")
    client.cookies[settings.ARENA_VISITOR_COOKIE] = cookie
    return client


def ready_battle(visitor: Visitor, system_a: ArenaSystem, system_b: ArenaSystem, *, ready_ago: float = 60.0, instrumental: bool = True, seconds: float = 8.0) -> Battle:
    return Battle.objects.create(
        visitor=visitor,
        prompt="calm ambient pads",
        is_instrumental=instrumental,
        duration_requested=seconds,
        seed=1,
        system_a=system_a,
        system_b=system_b,
        clip_a=ClipFactory(system=system_a.system, duration=seconds),
        clip_b=ClipFactory(system=system_b.system, duration=seconds),
        generation_seconds_a=0.5,
        generation_seconds_b=1.5,
        status=Battle.Status.READY,
        ready_at=timezone.now() - timedelta(seconds=ready_ago),
    )


def fetch_audio(battle: Battle, *, side: str, at, proven: bool = True) -> None:
    """What the audio endpoint notes when it sends a side's clip whole, and (unless `proven` is False) the page's
    receipt for it: the Audio-Proof answer a client holding the bytes gives, checked by the service."""
    size = HEADER_BYTES + SAMPLE_BYTES * blind_frames(seconds=battle.duration_requested, rate=int(settings.ARENA_SAMPLE_RATE))
    battle_audio_fetch_record(battle=battle, side=side, served=(0, size - 1, size), now=at)
    if proven:
        prove_audio(battle, side=side, at=at)


def arena_receipt(battle: Battle, *, side: str, at, first: int = 0, last: int | None = None) -> dict:
    """The receipt a page holding the side's served bytes sends for a response of [first, last] issued at `at`."""
    from arena.audio import battle_audio_path
    from arena.selectors import battle_audio_url
    from common import audio_proof

    path = battle_audio_path(battle=battle, side=side)
    data = path.read_bytes()
    last = len(data) - 1 if last is None else last
    token = audio_proof.challenge_token(path=battle_audio_url(battle, side), first=first, last=last, issued=at, ranges=audio_proof.challenge_ranges(first, last), source=str(path))
    return {"side": side, "token": token, "bytes": audio_proof.answer_for(data, token)}


def prove_audio(battle: Battle, *, side: str, at) -> None:
    from arena.audio import receipts_store

    receipts_store(battle=Battle.objects.get(pk=battle.pk), receipts=[arena_receipt(battle, side=side, at=at)], now=at)


def send(battle: Battle, visitor: Visitor, events: list[tuple[float, str, str]], *, start) -> dict:
    """Events as (seconds after start, kind, side), one post each, numbered after what the server already has."""
    seq = Battle.objects.get(pk=battle.pk).listen_seq
    result = {}
    for offset, kind, side in events:
        seq += 1
        result = listen_events_record(battle=battle, visitor=visitor, events=[{"seq": seq, "side": side, "kind": kind}], now=start + timedelta(seconds=offset))
    return result


def listen(battle: Battle, visitor: Visitor, *, side: str, seconds: float, start):
    """A playing page: the clip fetched (once), play, a tick each second, pause; returns when it paused."""
    if not BattleAudioFetch.objects.filter(battle=battle, side=side).exists():
        fetch_audio(battle, side=side, at=start)
    events = [(0.0, "play", side)] + [(float(k), "tick", side) for k in range(1, int(seconds) + 1)] + [(seconds, "pause", side)]
    send(battle, visitor, events, start=start)
    return start + timedelta(seconds=seconds)
