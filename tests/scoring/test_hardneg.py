"""Hard-negative degradations: each does what its parameters say, and bad specs are refused."""

from __future__ import annotations

import numpy as np
import pyloudnorm
import pytest

from scoring.hardneg import DegradationError, degrade, spec_clean

SR = 16000


def music(seconds: float = 2.0) -> np.ndarray:
    t = np.arange(int(seconds * SR)) / SR
    return (0.2 * np.sin(2 * np.pi * 220 * t) + 0.1 * np.sin(2 * np.pi * 330 * t)).astype(np.float32)[:, None]


def rms(x) -> float:
    return float(np.sqrt(np.mean(np.square(x, dtype=np.float64))))


def test_noise_is_added_at_the_requested_snr():
    x = music()
    y = degrade(x, SR, spec_clean({"kind": "noise", "snr_db": 12}, duration=2.0))
    snr = 20 * np.log10(rms(x) / rms(y - x))
    assert snr == pytest.approx(12.0, abs=0.1)
    assert np.array_equal(y, degrade(x, SR, spec_clean({"kind": "noise", "snr_db": 12}, duration=2.0)))  # seeded


def test_mix_puts_the_other_clip_the_requested_loudness_below():
    x = music()
    t = np.arange(len(x)) / SR
    other = (0.5 * np.sin(2 * np.pi * 1000 * t)).astype(np.float32)[:, None]
    y = degrade(x, SR, spec_clean({"kind": "mix", "other_clip": 7, "lufs_diff": 10}, duration=2.0), other=other)
    meter = pyloudnorm.Meter(SR)
    added = y.astype(np.float64) - x
    assert meter.integrated_loudness(x) - meter.integrated_loudness(added) == pytest.approx(10.0, abs=0.2)


def test_shift_splice_clip_and_cut():
    x = music()
    shifted = degrade(x, SR, spec_clean({"kind": "shift", "seconds": 0.5}, duration=2.0))
    assert np.all(shifted[: SR // 2] == 0) and np.allclose(shifted[SR // 2 :], x[: -SR // 2], atol=1e-6)
    spliced = degrade(x, SR, spec_clean({"kind": "splice", "at_s": 1.0, "jump_s": 0.25}, duration=2.0))
    assert np.allclose(spliced[SR : SR + 100], x[SR + SR // 4 : SR + SR // 4 + 100], atol=1e-6) and len(spliced) == len(x)
    clipped = degrade(x, SR, spec_clean({"kind": "clip", "gain_db": 20}, duration=2.0))
    assert np.abs(clipped).max() == pytest.approx(1.0) and np.mean(np.abs(clipped) >= 0.999) > 0.3
    cut = degrade(x, SR, spec_clean({"kind": "cut", "start_s": 0.5, "length_s": 0.5}, duration=2.0))
    assert np.all(cut[SR // 2 : SR] == 0) and np.allclose(cut[:SR // 2], x[:SR // 2])


@pytest.mark.parametrize(
    "spec, message",
    [
        ({"kind": "reverb"}, "kind must be one of"),
        ({"kind": "noise", "snr_db": "ten"}, "snr_db must be a number"),
        ({"kind": "noise", "snr_db": 500}, "outside"),
        ({"kind": "noise", "gain_db": 3}, "unknown field"),
        ({"kind": "mix"}, "other_clip must be the id"),
        ({"kind": "splice", "at_s": 1.9, "jump_s": 0.5}, "inside the clip"),
        ({"kind": "shift", "seconds": 3}, "shorter than the clip"),
    ],
)
def test_bad_specs_are_refused(spec, message):
    with pytest.raises(DegradationError, match=message):
        spec_clean(spec, duration=2.0)


@pytest.mark.django_db
def test_command_builds_catch_pairs_for_a_study():
    from io import StringIO

    from django.core.management import CommandError, call_command

    from annotation.models import Clip, Pair
    from annotation.services import clip_ingest_array, condition_get_or_create, pair_get_or_create
    from tests.factories import StudyFactory

    study = StudyFactory(name="hn")
    condition, _ = condition_get_or_create(prompt="p")
    a = clip_ingest_array(audio=music()[:, 0], sample_rate=SR, fmt="WAV")[0]
    b = clip_ingest_array(audio=music()[:, 0] * 0.5, sample_rate=SR, fmt="WAV")[0]
    pair_get_or_create(study=study, condition=condition, clip_a=a, clip_b=b)
    out = StringIO()
    call_command("hardneg", "--study", "hn", "--degradation", '{"kind": "noise", "snr_db": 5}', stdout=out)
    catches = Pair.objects.filter(study=study, kind=Pair.Kind.CATCH)
    assert catches.count() == 2
    for catch in catches:
        assert catch.expected_musicality_id == catch.expected_alignment_id == catch.clip_a_id
        assert catch.clip_b.kind == Clip.Kind.DERIVED and catch.clip_b.derived_from_id == catch.clip_a_id
        assert catch.clip_b.degradation == {"kind": "noise", "snr_db": 5.0, "seed": 0}
    before = Clip.objects.count()
    with pytest.raises(CommandError, match="snr_db"):
        call_command("hardneg", "--clip", str(a.pk), "--degradation", '{"kind": "noise", "snr_db": 99}')
    assert Clip.objects.count() == before
