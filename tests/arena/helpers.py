"""Arena votes for the tests that need a board: many simulated visitors at once, or one listened-to vote;
votes and battles whose clips differ in style (loudness as generated, length, ...), for the style-control tests."""

from __future__ import annotations

import math
import random
from datetime import timedelta

import numpy as np
from django.utils import timezone

from arena.leaderboard import VoteRow
from arena.services import vote_submit
from tests.arena.conftest import arena_system, fetch_audio, ready_battle, send, visitor_with_terms
from tests.factories import ClipFactory


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


# A weaker system that is loud, a stronger one that is quiet: the plain board is fooled by the level.
QUALITY = {"strong_quiet": 0.7, "mid": 0.3, "weak_loud": 0.0, "dull": -0.3, "low": -0.6}
LEVEL = {"strong_quiet": -26.0, "mid": -17.0, "weak_loud": -8.0, "dull": -17.0, "low": -20.0}
# Log-odds per LU of loudness difference: 10 LU louder wins about 2.2 : 1.
LOUDNESS_EFFECT = 0.08


def simulated(seed: int, n: int = 4000) -> list[VoteRow]:
    """Votes that follow quality plus loudness as generated; durations and generation times vary without effect."""
    rng = np.random.default_rng(seed)
    names = list(QUALITY)
    rows = []
    for _ in range(n):
        i, j = rng.choice(len(names), 2, replace=False)
        a, b = names[i], names[j]
        loud = (LEVEL[a] + rng.normal(0, 3), LEVEL[b] + rng.normal(0, 3))
        eta = QUALITY[a] - QUALITY[b] + LOUDNESS_EFFECT * (loud[0] - loud[1])
        # No ties here: the fit counts a tie as half a win each way, and ties that ignore the clips would
        # flatten every effect below the one simulated (the plain board's ratings shrink alike).
        vote = "a" if rng.random() < 1 / (1 + math.exp(-eta)) else "b"
        covariates = {"loudness": loud, "duration": tuple(8 - abs(rng.normal(0, 0.5, 2))), "generation_seconds": tuple(rng.gamma(2.0, 1.0, 2))}
        rows.append(VoteRow(a, b, vote, True, covariates=covariates))
    return rows


def styled_arena(n_battles=600, seed=5):
    """Battles whose clips differ in loudness, peak, length, vocals and waiting time; votes lean to the louder clip."""
    from arena.models import Battle, Vote

    rng = np.random.default_rng(seed)
    quality = {"ash": 0.6, "birch": 0.1, "cedar": -0.2, "dogwood": -0.5}
    level = {"ash": -22.0, "birch": -12.0, "cedar": -16.0, "dogwood": -14.0}
    systems = {name: arena_system(name) for name in quality}
    visitors = [visitor_with_terms()[0] for _ in range(5)]
    # A few takes per system, of different lengths, so length varies within every pair.
    clips = {name: [ClipFactory(system=systems[name].system, duration=seconds) for seconds in (6.0, 7.0, 8.0)] for name in quality}
    battles, votes = [], []
    for k in range(n_battles):
        a, b = rng.choice(sorted(quality), 2, replace=False)
        instrumental = k % 4 != 0
        side = {s: {"lufs": level[n] + rng.normal(0, 3), "gen": float(rng.gamma(2.0, 1.0))} for s, n in (("a", a), ("b", b))}
        for s in side.values():
            s["peak"] = s["lufs"] + 13 + rng.normal(0, 1.5)
        battles.append(
            Battle(
                visitor=visitors[k % 5], prompt=f"prompt {k % 40}", is_instrumental=instrumental, lyrics="" if instrumental else "la", duration_requested=8.0,
                seed=k, system_a=systems[a], system_b=systems[b], clip_a=clips[a][k % 3], clip_b=clips[b][(k // 3) % 3], status=Battle.Status.VOTED,
                generation_seconds_a=round(side["a"]["gen"], 3), generation_seconds_b=round(side["b"]["gen"], 3),
                loudness_lufs_a=side["a"]["lufs"], loudness_lufs_b=side["b"]["lufs"], true_peak_a=side["a"]["peak"], true_peak_b=side["b"]["peak"],
                # One vocal-capable system that sometimes does not sing: vocals vary on the vocal board.
                vocals_a=(not instrumental) and (a != "cedar" or k % 3 == 0), vocals_b=(not instrumental) and (b != "cedar" or k % 3 == 0),
                ready_at=timezone.now() - timedelta(seconds=60),
            )
        )
    battles = Battle.objects.bulk_create(battles)
    for battle in battles:
        a, b = battle.system_a.system.name, battle.system_b.system.name
        eta = quality[a] - quality[b] + 0.07 * (battle.loudness_lufs_a - battle.loudness_lufs_b)
        u = rng.random()
        choice = "both_bad" if u < 0.04 else "tie" if u < 0.12 else ("a" if rng.random() < 1 / (1 + math.exp(-eta)) else "b")
        votes.append(Vote(battle=battle, visitor=battle.visitor, choice=choice, listen_seconds_a=6.0, listen_seconds_b=6.0))
    Vote.objects.bulk_create(votes)
