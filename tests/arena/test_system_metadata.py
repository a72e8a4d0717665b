"""Systems' metadata on the board and in the release: organisation, licence, training data, open weights, the
measured real-time factor; and a system whose audio is withheld from releases keeps its rows."""

from __future__ import annotations

import json
import statistics
from datetime import timedelta

import yaml
from django.utils import timezone

from arena.models import AdapterKind, Battle, Vote
from arena.release import release_export
from arena.selectors import systems_metadata
from arena.services import leaderboard_refresh
from tests.factories import ClipFactory

from .conftest import arena_system, visitor_with_terms


def arena_with_timings():
    fast = arena_system("fast", licence="MIT", training_data="licensed stock music", open_weights=True)
    fast.system.organisation = "Lab A"
    fast.system.save()
    slow = arena_system("slow", licence="proprietary", open_weights=False, withhold_audio=True)
    stored = arena_system("stored", adapter_kind=AdapterKind.CATALOG, adapter_config={})
    hidden = arena_system("hidden", is_private=True)
    visitor, _ = visitor_with_terms()
    waits = {"fast": [0.8, 1.2, 2.0, 4.4], "slow": [16.0, 24.0, 20.0, 18.0], "stored": [0.01, 0.02, 0.01, 0.02], "hidden": [1.0] * 4}
    systems = {"fast": fast, "slow": slow, "stored": stored, "hidden": hidden}
    pairs = [("fast", "slow"), ("slow", "stored"), ("stored", "fast"), ("hidden", "fast")]
    expected = {name: [] for name in systems}
    for k in range(4):
        for a, b in pairs:
            seconds = (8.0, 6.0)[k % 2]
            battle = Battle.objects.create(
                visitor=visitor, prompt=f"p {k}", is_instrumental=True, duration_requested=seconds, seed=k, system_a=systems[a], system_b=systems[b],
                clip_a=ClipFactory(system=systems[a].system, duration=seconds), clip_b=ClipFactory(system=systems[b].system, duration=seconds),
                generation_seconds_a=waits[a][k], generation_seconds_b=waits[b][k], status=Battle.Status.VOTED, ready_at=timezone.now() - timedelta(seconds=30),
            )
            Vote.objects.create(battle=battle, visitor=visitor, choice="a", listen_seconds_a=6.0, listen_seconds_b=6.0)
            expected[a].append(waits[a][k] / seconds)
            expected[b].append(waits[b][k] / seconds)
    return {name: statistics.median(values) for name, values in expected.items()}


def test_the_board_carries_each_public_systems_metadata_and_measured_real_time_factor(db):
    medians = arena_with_timings()
    meta = systems_metadata()
    assert set(meta) == {"fast", "slow", "stored"}  # the pre-release system is not named
    assert meta["fast"] == {
        "organisation": "Lab A", "licence": "MIT", "training_data": "licensed stock music", "open_weights": True,
        "real_time_factor": round(medians["fast"], 4), "real_time_factor_clips": 12, "audio_withheld": False,
    }
    assert meta["slow"]["real_time_factor"] == round(medians["slow"], 4) > 1 and meta["slow"]["open_weights"] is False
    # A catalog system serves stored clips: its waiting time is a lookup, not a generation.
    assert meta["stored"]["real_time_factor"] is None and meta["stored"]["open_weights"] is None
    assert leaderboard_refresh().payload["systems"] == meta


def test_a_withheld_systems_battles_stay_in_the_release_without_its_audio(db, tmp_path):
    medians = arena_with_timings()
    result = release_export(out_dir=tmp_path, parquet=False)
    rows = [json.loads(line) for line in (tmp_path / "battles.jsonl").read_text().splitlines()]
    assert len(rows) == 16 == result["battles"]
    slow_sides = [(r, s) for r in rows for s in "ab" if r[f"system_{s}"] == "slow"]
    assert len(slow_sides) == 8 and all(r[f"audio_{s}"] is None for r, s in slow_sides)
    others = [r[f"audio_{s}"] for r in rows for s in "ab" if r[f"system_{s}"] != "slow"]
    assert all(path and (tmp_path / path).is_file() for path in others)
    assert result["audio_files"] == len(others) == 24
    assert len(list((tmp_path / "audio").iterdir())) == 24
    registry = yaml.safe_load((tmp_path / "registry.yaml").read_text())
    assert registry["fast"]["organization"] == "Lab A" and registry["fast"]["license"] == "MIT" and registry["fast"]["access"] == "OPEN"
    assert registry["fast"]["training_data"] == {"description": "licensed stock music"}
    assert registry["slow"]["access"] == "PROPRIETARY" and registry["slow"]["audio_withheld"] is True
    assert registry["stored"]["real_time_factor"] is None and "access" not in registry["stored"]
    # Measured on the release's own battles, the same as the board's here (every battle was voted).
    assert registry["fast"]["real_time_factor"] == round(medians["fast"], 4)
    readme = (tmp_path / "README.md").read_text()
    assert "| slow | – | proprietary | closed |" in readme and "(audio withheld)" in readme
