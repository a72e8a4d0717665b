"""Each battle side's loudness and true peak are measured on the clip as generated, and the arena's levelling
keeps every stored clip under the -1 dBTP ceiling. References: pyloudnorm and scipy's polyphase resampler, called here."""

from __future__ import annotations

import json

import numpy as np
import pyloudnorm
import pytest
import soundfile as sf
from django.conf import settings
from scipy.signal import resample_poly

from arena.models import Battle, Vote
from arena.release import release_export
from arena.levelling import prepare_audio
from arena.services import battle_create, battle_generate_side

from .conftest import arena_system, visitor_with_terms


def true_peak(audio: np.ndarray) -> float:
    """4x oversampled peak, dBTP (BS.1770-4 Annex 2), computed here."""
    return 20 * np.log10(np.abs(resample_poly(np.asarray(audio, dtype=np.float64), 4, 1, axis=0)).max())


def lufs(audio: np.ndarray, rate: int) -> float:
    return pyloudnorm.Meter(rate).integrated_loudness(np.asarray(audio, dtype=np.float64))


def test_a_loud_stereo_clip_is_measured_as_generated_then_levelled(settings):
    rate, seconds = 44100, 3.0
    t = np.arange(int(rate * 4.0)) / rate
    stereo = np.stack([0.9 * np.sin(2 * np.pi * 440 * t), 0.7 * np.sin(2 * np.pi * 660 * t)], axis=1)
    out, generated = prepare_audio(stereo, rate, seconds=seconds)
    kept = stereo[: int(rate * seconds)]
    # As generated: both channels at the system's own rate, the part the battle keeps.
    assert generated.lufs == pytest.approx(lufs(kept, rate), abs=1e-6)
    assert generated.true_peak_dbtp == pytest.approx(true_peak(kept), abs=1e-6)
    assert generated.lufs > -6
    # Stored: mono at the arena rate, at the target, under the ceiling.
    assert len(out) == int(settings.ARENA_SAMPLE_RATE * seconds)
    assert lufs(out, settings.ARENA_SAMPLE_RATE) == pytest.approx(settings.ARENA_TARGET_LUFS, abs=0.05)
    assert true_peak(out) <= -1.0 + 1e-3


def test_a_quiet_spiky_clip_is_boosted_only_up_to_the_ceiling(settings):
    rate = settings.ARENA_SAMPLE_RATE
    rng = np.random.default_rng(0)
    clip = 0.003 * rng.standard_normal(rate * 3)
    clip[::4000] = 0.5  # clicks: a high crest factor
    out, generated = prepare_audio(clip, rate, seconds=3.0)
    assert generated.lufs < -35
    assert true_peak(out) == pytest.approx(-1.0, abs=0.05)
    # The target would need more gain than the ceiling allows: it stays below -20 LUFS.
    assert lufs(out, rate) < settings.ARENA_TARGET_LUFS - 3


def test_a_clip_over_the_ceiling_below_the_target_is_lowered_to_the_ceiling(settings):
    rate = settings.ARENA_SAMPLE_RATE
    rng = np.random.default_rng(1)
    clip = 0.02 * rng.standard_normal(rate * 3)
    clip[1000] = 1.0
    assert true_peak(clip) > -1.0 and lufs(clip, rate) < settings.ARENA_TARGET_LUFS
    out, _ = prepare_audio(clip, rate, seconds=3.0)
    assert true_peak(out) == pytest.approx(-1.0, abs=0.05)


def test_silence_has_no_loudness_and_is_stored_as_it_is():
    out, generated = prepare_audio(np.zeros(32000 * 2), 32000, seconds=2.0)
    assert generated.lufs is None and generated.true_peak_dbtp is None and not out.any()


def test_a_generated_battle_stores_each_sides_loudness_as_generated_and_the_release_carries_it(db, tmp_path, django_capture_on_commit_callbacks):
    from annotation import demo

    arena_system("aurora", adapter_config={"demo": "aurora"})
    arena_system("clipper", adapter_config={"demo": "clipper"})
    visitor, _ = visitor_with_terms()
    with django_capture_on_commit_callbacks(execute=True):
        battle = battle_create(visitor=visitor, prompt="slow piano ballad, instrumental", lyrics="")
    battle = Battle.objects.get(pk=battle.pk)
    assert battle.status == Battle.Status.READY
    seconds, rate = battle.duration_requested, int(settings.ARENA_SAMPLE_RATE)
    for side in ("a", "b"):
        name = battle.system_for(side).adapter_config["demo"]
        rendered = demo.render(name, prompt=battle.prompt, lyrics="", seed=battle.seed, seconds=seconds, sample_rate=rate)
        assert getattr(battle, f"loudness_lufs_{side}") == pytest.approx(lufs(rendered, rate), abs=1e-6)
        assert getattr(battle, f"true_peak_{side}") == pytest.approx(true_peak(rendered), abs=1e-6)
        assert getattr(battle, f"vocals_{side}") is False
        stored, _ = sf.read(battle.clip_for(side).file.path)
        assert true_peak(stored) <= -1.0 + 0.01
    # Generating a side again changes nothing (the task is idempotent).
    before = Battle.objects.values("loudness_lufs_a", "true_peak_a").get(pk=battle.pk)
    battle_generate_side(battle_id=battle.pk, side="a")
    assert Battle.objects.values("loudness_lufs_a", "true_peak_a").get(pk=battle.pk) == before

    Vote.objects.create(battle=battle, visitor=visitor, choice="a", listen_seconds_a=6.0, listen_seconds_b=6.0)
    release_export(out_dir=tmp_path, audio=False, parquet=False)
    row = json.loads((tmp_path / "battles.jsonl").read_text().splitlines()[0])
    assert row["loudness_lufs_a"] == battle.loudness_lufs_a and row["true_peak_b"] == battle.true_peak_b
    assert row["vocals_a"] is False and row["duration_a"] == battle.clip_a.duration
