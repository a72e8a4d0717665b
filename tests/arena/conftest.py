"""Arena test helpers: systems, visitors with accepted terms, ready battles with real clips."""

from __future__ import annotations

import copy
import uuid
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from arena import conf
from arena.models import AdapterKind, ArenaSystem, Battle, Visitor
from arena.services import visitor_accept_terms
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
    # A fresh key prefix per test instead of cache.clear(): on a shared Redis, clear() would
    # flush everyone's keys (Celery, Channels, other test runs).
    caches = copy.deepcopy(settings.CACHES)
    caches["default"]["KEY_PREFIX"] = f"arena-test-{uuid.uuid4().hex}"
    settings.CACHES = caches
    yield settings


def arena_system(name: str, **fields) -> ArenaSystem:
    defaults = {"adapter_kind": AdapterKind.DEMO, "adapter_config": {"demo": "aurora"}, "supports_vocals": True, "supports_instrumental": True, "max_duration_seconds": 60.0}
    defaults.update(fields)
    return ArenaSystem.objects.create(system=SystemFactory(name=name), **defaults)


def visitor_with_terms() -> tuple[Visitor, str]:
    return visitor_accept_terms(cookie=None, version=conf.get("ARENA_TERMS_VERSION"))


def visitor_client(cookie: str, *, csrf: bool = False) -> Client:
    client = Client(enforce_csrf_checks=csrf, REMOTE_ADDR="203.0.113.7")
    client.cookies[conf.get("ARENA_VISITOR_COOKIE")] = cookie
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
