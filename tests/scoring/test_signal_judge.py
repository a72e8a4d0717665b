"""Signal-quality judge: its measurements, and its verdicts on the demo systems (aurora is clean by construction)."""

from __future__ import annotations

import numpy as np
import pytest

from annotation import demo
from annotation.models import Clip, Pair
from scoring import services
from scoring.judges.signal import clipping_ratio, signal_features, technical_score, true_peak_dbtp
from scoring.models import Judge, Verdict
from scoring.tasks import run_start

SR = 48000


def sine(amp: float = 0.5, freq: float = 1000.0, seconds: float = 2.0, sr: int = SR) -> np.ndarray:
    t = np.arange(int(seconds * sr)) / sr
    return (amp * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def test_loudness_and_peaks_of_a_known_sine():
    f = signal_features(sine(0.5), SR)
    # 1 kHz at -6 dBFS peak reads about -9.07 LUFS under BS.1770 (K-weighting lifts 1 kHz slightly).
    assert f["integrated_lufs"] == pytest.approx(-9.07, abs=0.1)
    assert f["sample_peak_dbfs"] == pytest.approx(-6.02, abs=0.01)
    assert f["sample_peak_dbfs"] - 0.01 <= f["true_peak_dbtp"] <= f["sample_peak_dbfs"] + 0.7
    assert f["clipping_ratio"] == 0.0 and f["silence_ratio"] == 0.0 and f["dc_offset"] < 1e-4
    assert f["spectral_centroid_hz"] == pytest.approx(1000, rel=0.05)
    assert f["spectral_flatness"] < 0.01


def test_true_peak_sees_intersample_overs():
    # A sine at fs/4 sampled 45 degrees off its crest: samples read 0.707 of the true peak (-3 dB).
    n = np.arange(4800)
    x = np.sin(2 * np.pi * n / 4 + np.pi / 4)
    assert 20 * np.log10(np.abs(x).max()) == pytest.approx(-3.01, abs=0.01)
    assert true_peak_dbtp(x) == pytest.approx(0.0, abs=0.3)


def test_faults_are_measured():
    clean = sine(0.3)
    clipped = np.clip(sine(0.3) * 4, -0.6, 0.6)
    assert clipping_ratio(clean) == 0.0
    assert clipping_ratio(clipped) > 0.5
    gapped = clean.copy()
    gapped[: SR // 2] = 0.0
    assert signal_features(gapped, SR)["silence_ratio"] == pytest.approx(0.25, abs=0.03)
    assert signal_features(clean + 0.05, SR)["dc_offset"] == pytest.approx(0.05, abs=1e-3)
    noisy = clean + 0.1 * np.random.default_rng(0).standard_normal(len(clean)).astype(np.float32)
    assert signal_features(noisy, SR)["spectral_flatness"] > signal_features(clean, SR)["spectral_flatness"]
    scores = {name: technical_score(signal_features(w, SR))[0] for name, w in (("clean", clean), ("clipped", clipped), ("noisy", noisy), ("gapped", gapped))}
    assert scores["clean"] == max(scores.values())
    assert all(0.0 <= s <= 1.0 for s in scores.values())


def test_a_clip_shorter_than_one_gating_block_still_scores():
    f = signal_features(sine(0.3, seconds=0.2), SR)
    assert f["integrated_lufs"] is None
    assert 0.0 <= technical_score(f)[0] <= 1.0


@pytest.mark.slow
@pytest.mark.django_db
def test_signal_judge_prefers_aurora_over_every_degraded_demo_clip_in_every_pair():
    # The demo pairs themselves: every pair in which aurora meets a degraded system.
    demo.seed_demo()
    pair_ids, aurora_clips = [], set()
    for pair in Pair.objects.select_related("clip_a__system", "clip_b__system"):
        names = {pair.clip_a.system.name if pair.clip_a.system else None, pair.clip_b.system.name if pair.clip_b.system else None}
        if demo.CLEAN_SYSTEM in names and len(names) == 2:
            pair_ids.append(pair.pk)
            aurora_clips.add(pair.clip_a_id if pair.clip_a.system.name == demo.CLEAN_SYSTEM else pair.clip_b_id)
    assert pair_ids, "no demo pair contains aurora"
    judge = Judge.objects.create(key="signal-demo", kind=Judge.Kind.SIGNAL)
    run = services.run_create(judge=judge, pair_ids=sorted(set(pair_ids)))
    run_start.apply(args=(run.pk,))
    verdicts = list(Verdict.objects.filter(run=run).select_related("pair"))
    assert len(verdicts) == len(set(pair_ids))
    assert {v.pair.clip_a_id in aurora_clips for v in verdicts} == {True, False}  # aurora shown on both sides
    losers = [
        (Clip.objects.get(pk=v.pair.other_clip_id(v.musicality_choice_id)).system.name if v.musicality_choice_id else None, v.pair_id)
        for v in verdicts
        if v.musicality_choice_id not in aurora_clips
    ]
    assert losers == [], f"aurora lost these pairs: {losers}"
    assert all(v.status == Verdict.Status.OK and v.details["technical"] for v in verdicts)
