"""Sampling system pairs where the board knows least, with a floor of weighted draws, recorded per battle."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from arena import sampling
from arena.adapters import prompt_key
from arena.models import Battle, LeaderboardSnapshot, Vote
from arena.release import release_rows
from arena.services import battle_create, systems_pick
from tests.factories import ClipFactory

from .conftest import arena_system, visitor_with_terms

KEY = prompt_key("calm ambient pads")


def test_weighted_pair_probabilities_are_the_two_draws_without_replacement():
    p = sampling.weighted_pairs({"x": 1.0, "y": 4.0, "z": 1.0, "off": 0.0})
    assert set(p) == {("x", "y"), ("x", "z"), ("y", "z")}
    assert p[("x", "y")] == pytest.approx(1 / 6 * 4 / 5 + 4 / 6 * 1 / 2)
    assert p[("x", "z")] == pytest.approx(2 * (1 / 6 * 1 / 5))
    assert sum(p.values()) == pytest.approx(1.0)


def test_interval_overlap():
    assert sampling.interval_overlap((0, 10), (5, 20)) == pytest.approx(0.5)
    assert sampling.interval_overlap((0, 10), (2, 4)) == 1.0
    assert sampling.interval_overlap((0, 1), (2, 3)) == 0.0
    assert sampling.interval_overlap(None, (2, 3)) == 1.0


def test_informative_pairs_favour_overlapping_intervals_and_keep_the_floor():
    weights = {"a": 1.0, "b": 1.0, "c": 1.0}
    intervals = {"a": (1000, 1100), "b": (1050, 1150), "c": (1400, 1450)}
    base = sampling.pair_probabilities(weights)
    p = sampling.pair_probabilities(weights, policy="informative", intervals=intervals, floor=0.2)
    assert sum(p.values()) == pytest.approx(1.0)
    assert p[("a", "b")] > base[("a", "b")] and p[("a", "c")] < base[("a", "c")]
    assert all(p[k] >= 0.2 * base[k] - 1e-12 for k in base)
    # No overlap anywhere: nothing to prefer, the weighted draw.
    apart = {"a": (0, 1), "b": (2, 3), "c": (4, 5)}
    assert sampling.pair_probabilities(weights, policy="informative", intervals=apart, floor=0.2) == pytest.approx(base)
    with pytest.raises(ValueError, match="sampling policy"):
        sampling.pair_probabilities(weights, policy="greedy")
    with pytest.raises(ValueError, match="floor"):
        sampling.pair_probabilities(weights, policy="informative", floor=1.5)


def _board(rows):
    LeaderboardSnapshot.objects.create(votes=100, payload={"boards": {"instrumental": {"rows": rows}, "vocal": {"rows": []}}})


def test_informative_draws_follow_the_recorded_probabilities(db, settings):
    settings.ARENA_SAMPLING = "informative"
    settings.ARENA_SAMPLING_FLOOR = 0.2
    systems = [arena_system(name) for name in ("near-1", "near-2", "far")]
    _board([
        {"system": "near-1", "lower": 1000, "upper": 1100}, {"system": "near-2", "lower": 1040, "upper": 1140}, {"system": "far", "lower": 1500, "upper": 1550},
    ])  # fmt: skip
    rng = random.Random(5)
    draws = [systems_pick(is_instrumental=True, seconds=8.0, key=KEY, rng=rng) for _ in range(3000)]
    counts = Counter(sampling.pair_key(a.pk, b.pk) for a, b, _, _ in draws)
    recorded = {sampling.pair_key(a.pk, b.pk): p for a, b, _, p in draws}
    assert {policy for _, _, policy, _ in draws} == {"informative"}
    assert sum(recorded.values()) == pytest.approx(1.0)
    for pair, probability in recorded.items():
        assert counts[pair] / 3000 == pytest.approx(probability, abs=0.03)
    near = sampling.pair_key(systems[0].pk, systems[1].pk)
    assert recorded[near] > 0.6
    assert Counter(a.pk for a, _, _, _ in draws)[systems[2].pk] > 0  # the floor still brings the far system


def test_battles_and_the_release_record_policy_and_probability(db, settings):
    systems = [arena_system("one", weight=1.0), arena_system("two", weight=3.0), arena_system("three", weight=1.0)]
    visitor, _ = visitor_with_terms()
    battle = battle_create(visitor=visitor, prompt="calm ambient pads", rng=random.Random(1))
    battle.refresh_from_db()
    expected = sampling.weighted_pairs({s.pk: s.weight for s in systems})[sampling.pair_key(battle.system_a_id, battle.system_b_id)]
    assert battle.sampling_policy == "weighted"
    assert battle.sampling_probability == pytest.approx(expected)
    # Voted: the release carries both columns.
    battle.clip_a, battle.clip_b = ClipFactory(system=battle.system_a.system), ClipFactory(system=battle.system_b.system)
    battle.status = Battle.Status.VOTED
    battle.save()
    Vote.objects.create(battle=battle, visitor=visitor, choice="a", listen_seconds_a=6.0, listen_seconds_b=6.0)
    row = release_rows()[0]
    assert (row["sampling_policy"], row["sampling_probability"]) == ("weighted", pytest.approx(expected))
