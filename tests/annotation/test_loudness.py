"""Loudness at ingest: BS.1770 figures equal pyloudnorm's, true peak finds inter-sample peaks, and the gain rule."""

import numpy as np
import pyloudnorm
import pytest

from annotation.services.audio import clip_ingest_array
from common.loudness import integrated_lufs, measure, playback_gain_db, true_peak_dbtp

SR = 48000


def _tone(seconds=3.0, freq=997.0, amp=0.25, phase=0.0, rate=SR):
    t = np.arange(int(seconds * rate)) / rate
    return amp * np.sin(2 * np.pi * freq * t + phase)


def test_integrated_loudness_equals_pyloudnorm_mono_and_stereo():
    rng = np.random.default_rng(3)
    mono = _tone() + 0.01 * rng.standard_normal(3 * SR)
    stereo = np.stack([mono, 0.5 * _tone(freq=440.0)], axis=1)
    assert integrated_lufs(mono, SR) == pytest.approx(pyloudnorm.Meter(SR).integrated_loudness(mono), abs=1e-9)
    assert integrated_lufs(stereo, SR) == pytest.approx(pyloudnorm.Meter(SR).integrated_loudness(stereo), abs=1e-9)


def test_silence_and_short_clips_have_no_loudness():
    assert integrated_lufs(np.zeros(SR), SR) is None
    assert integrated_lufs(_tone(seconds=0.2), SR) is None
    assert measure(np.zeros(SR), SR).true_peak_dbtp is None


def test_true_peak_sees_between_samples():
    # A quarter-rate sine sampled 45 degrees off its crests: every sample is at 0.707, the wave reaches 1.0.
    x = np.sin(2 * np.pi * (SR / 4) * np.arange(SR) / SR + np.pi / 4)
    # Faded in and out: an abrupt start rings in any band-limited interpolator.
    fade = np.hanning(2 * 4800)
    x[:4800] *= fade[:4800]
    x[-4800:] *= fade[4800:]
    assert 20 * np.log10(np.abs(x).max()) == pytest.approx(-3.01, abs=0.01)
    assert true_peak_dbtp(x, SR) == pytest.approx(0.0, abs=0.1)


def test_gain_reaches_target_but_never_lifts_peak_over_ceiling():
    assert playback_gain_db(-9.0, -0.1, target_lufs=-23.0) == pytest.approx(-14.0)
    assert playback_gain_db(-30.0, -12.0, target_lufs=-23.0) == pytest.approx(7.0)
    # A +7 dB boost would put a -3 dBTP peak at +4: held at the -1 dBTP ceiling.
    assert playback_gain_db(-30.0, -3.0, target_lufs=-23.0) == pytest.approx(2.0)
    assert playback_gain_db(None, None, target_lufs=-23.0) == 0.0


@pytest.mark.django_db
def test_ingest_stores_loudness_and_true_peak():
    audio = _tone(amp=0.5)
    clip, created = clip_ingest_array(audio=audio, sample_rate=SR, fmt="WAV")
    assert created
    clip.refresh_from_db()
    assert clip.loudness_lufs == pytest.approx(pyloudnorm.Meter(SR).integrated_loudness(audio), abs=0.05)
    assert clip.true_peak_dbtp == pytest.approx(20 * np.log10(0.5), abs=0.05)
