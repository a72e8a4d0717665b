"""Which systems may meet in a battle: weights, capabilities, active and healthy only."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from arena.adapters import prompt_key
from arena.models import AdapterKind, CatalogClip, Health
from arena.moderation import is_instrumental
from arena.selectors import systems_eligible
from arena.services import ArenaError, pair_draw, systems_sample
from tests.factories import ClipFactory

from .conftest import arena_system

KEY = prompt_key("calm ambient pads")


def sample_many(n, *, instrumental=True, seed=0, key=KEY):
    rng = random.Random(seed)
    first = systems_sample(is_instrumental=instrumental, seconds=8.0, key=key, rng=rng)
    pool = systems_eligible(is_instrumental=instrumental, seconds=8.0, key=key)
    return [first] + [pair_draw(pool, rng=rng) for _ in range(n - 1)]


def test_weights_set_how_often_a_system_is_drawn(db):
    arena_system("light", weight=1.0)
    arena_system("heavy", weight=4.0)
    arena_system("other", weight=1.0)
    counts = Counter(s.name for pair in sample_many(3000) for s in pair)
    # Exact appearance probabilities for two draws without replacement, weights 1, 4, 1:
    # heavy 2/3 + 1/6*4/5*2 = 14/15, light and other 8/15 each.
    assert counts["heavy"] / 3000 == pytest.approx(14 / 15, abs=0.03)
    assert counts["light"] / 3000 == pytest.approx(8 / 15, abs=0.04)


def test_sides_are_randomised(db):
    arena_system("one")
    arena_system("two")
    firsts = Counter(pair[0].name for pair in sample_many(1000, seed=3))
    assert 400 < firsts["one"] < 600
    assert all(a.pk != b.pk for a, b in sample_many(200))


def test_vocal_prompts_only_get_vocal_systems(db):
    arena_system("singer1", supports_vocals=True)
    arena_system("singer2", supports_vocals=True, supports_instrumental=False)
    arena_system("pianist", supports_vocals=False)
    drawn = {s.name for pair in sample_many(300, instrumental=False) for s in pair}
    assert drawn == {"singer1", "singer2"}


def test_instrumental_prompts_only_get_instrumental_capable_systems(db):
    arena_system("keys", supports_vocals=False)
    arena_system("both")
    arena_system("always-sings", supports_vocals=True, supports_instrumental=False)
    drawn = {s.name for pair in sample_many(300) for s in pair}
    assert drawn == {"keys", "both"}


def test_inactive_unhealthy_zero_weight_and_too_short_systems_are_excluded(db):
    arena_system("ok1")
    arena_system("ok2")
    arena_system("off", is_active=False)
    arena_system("down", health=Health.UNHEALTHY)
    arena_system("paused", weight=0.0)
    arena_system("short", max_duration_seconds=5.0)
    arena_system("unchecked", health=Health.UNKNOWN)
    drawn = {s.name for pair in sample_many(400) for s in pair}
    assert drawn == {"ok1", "ok2", "unchecked"}


def test_catalog_systems_only_for_prompts_they_hold(db):
    arena_system("live1")
    arena_system("live2")
    cat = arena_system("cat", adapter_kind=AdapterKind.CATALOG)
    CatalogClip.objects.create(arena_system=cat, prompt_key=KEY, prompt="calm ambient pads", clip=ClipFactory(system=cat.system))
    assert "cat" in {s.name for pair in sample_many(200) for s in pair}
    assert "cat" not in {s.name for pair in sample_many(200, key=prompt_key("something else")) for s in pair}


def test_too_few_systems_is_a_clear_503(db):
    arena_system("lonely")
    with pytest.raises(ArenaError) as err:
        sample_many(1)
    assert err.value.status == 503 and err.value.code == "no_systems"


@pytest.mark.parametrize(
    "prompt,lyrics,instrumental",
    [
        ("calm ambient pads", "", True),
        ("pop song with a female singer", "", False),
        ("upbeat track", "la la la", False),
        ("chill house with vocal chops, instrumental", "", True),
        ("gospel choir", "", False),
        ("rock anthem, no vocals", "", True),
    ],
)
def test_routing_vocal_or_instrumental(prompt, lyrics, instrumental):
    assert is_instrumental(prompt, lyrics) is instrumental
