"""Arena votes for the tests that need a board: many simulated visitors at once, or one listened-to vote."""

from __future__ import annotations

import random
from datetime import timedelta

from django.utils import timezone

from arena.services import vote_submit
from tests.arena.conftest import fetch_audio, ready_battle, send


def simulated_votes(n: int, seed: int = 0) -> None:
    """Votes from simulated visitors whose taste follows the demo systems' designed musicality ranking."""
    from annotation.demo import DEMO_SYSTEMS
    from arena.models import ArenaSystem, Battle, Visitor, Vote

    rank = {s.name: s.musicality_rank for s in DEMO_SYSTEMS}
    systems = list(ArenaSystem.objects.select_related("system"))
    rng = random.Random(seed)
    visitor = Visitor.objects.create(cookie_hash="sim" + "0" * 61, pseudonym="u-simulated", terms_version="1", terms_accepted_at=timezone.now())
    for k in range(n):
        a, b = rng.sample(systems, 2)
        p_a = 1 / (1 + 10 ** ((rank[a.name] - rank[b.name]) * 60 / 400))
        choice = rng.choices(["a", "b", "tie", "both_bad"], weights=[0.85 * p_a, 0.85 * (1 - p_a), 0.1, 0.05])[0]
        battle = Battle.objects.create(
            visitor=visitor, prompt=f"simulated {k}", is_instrumental=k % 4 != 0, duration_requested=3.0, seed=k, system_a=a, system_b=b,
            status=Battle.Status.VOTED, ready_at=timezone.now() - timedelta(seconds=30),
        )
        Vote.objects.create(battle=battle, visitor=visitor, choice=choice, listen_seconds_a=6.0, listen_seconds_b=6.0)


def voted(visitor, a, b, choice):
    battle = ready_battle(visitor, a, b, ready_ago=60)
    t0 = timezone.now() - timedelta(seconds=50)
    for side, offset in (("a", 0), ("b", 10)):
        fetch_audio(battle, side=side, at=t0)
        events = [(0, "play", side), (3, "pause", side), (4, "play", side), (7, "ended", side)]
        send(battle, visitor, [(offset + at, kind, s) for at, kind, s in events], start=t0)
    return vote_submit(battle=battle, visitor=visitor, choice=choice)
