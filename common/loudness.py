"""Loudness of a clip as stored: BS.1770 integrated loudness (pyloudnorm) and true peak, and the one playback-gain rule.

Measured once, at ingest, on the file as it came in: study pages level clips from these figures,
and the arena's style covariates use them as the clip was generated, before any normalisation.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

# BS.1770-4 gates blocks of 400 ms: a shorter clip has no integrated loudness.
MIN_SECONDS = 0.4
# BS.1770-4 Annex 2 oversamples by 4 below 96 kHz to find inter-sample peaks.
TRUE_PEAK_OVERSAMPLE = 4
# No playback gain ever lifts a clip's true peak above this (dBTP): EBU R128's ceiling.
PEAK_CEILING_DBTP = -1.0


@dataclass(frozen=True)
class Loudness:
    lufs: float | None
    true_peak_dbtp: float | None


def _frames(audio: np.ndarray) -> np.ndarray:
    audio = np.asarray(audio, dtype=np.float64)
    if audio.ndim == 1:
        audio = audio[:, None]
    return audio


def true_peak_dbtp(audio: np.ndarray, rate: int) -> float | None:
    """The highest absolute sample after 4x oversampling (BS.1770-4 Annex 2), in dB relative to full scale."""
    from scipy.signal import resample_poly

    audio = _frames(audio)
    if audio.size == 0:
        return None
    factor = TRUE_PEAK_OVERSAMPLE if rate < 96000 else 1
    peak = float(np.abs(audio).max())
    if factor > 1 and len(audio) > 1:
        peak = max(peak, float(np.abs(resample_poly(audio, factor, 1, axis=0)).max()))
    if peak <= 0.0:
        return None
    return 20.0 * np.log10(peak)


def integrated_lufs(audio: np.ndarray, rate: int) -> float | None:
    """BS.1770-4 integrated loudness; None for silence or a clip shorter than one gating block."""
    import pyloudnorm

    audio = _frames(audio)
    if len(audio) < int(np.ceil(MIN_SECONDS * rate)) or not np.abs(audio).max() > 0.0:
        return None
    if audio.shape[1] > 5:
        audio = audio.mean(axis=1, keepdims=True)
    value = float(pyloudnorm.Meter(rate).integrated_loudness(audio if audio.shape[1] > 1 else audio[:, 0]))
    return value if np.isfinite(value) else None


def measure(audio: np.ndarray, rate: int) -> Loudness:
    return Loudness(lufs=integrated_lufs(audio, rate), true_peak_dbtp=true_peak_dbtp(audio, rate))


def measure_file(path: Path | str) -> Loudness:
    import soundfile as sf

    audio, rate = sf.read(str(path), dtype="float64", always_2d=True)
    return measure(audio, rate)


def playback_gain_db(lufs: float | None, true_peak: float | None, *, target_lufs: float, ceiling_dbtp: float = PEAK_CEILING_DBTP) -> float:
    """The gain that brings a clip to `target_lufs`, never lifting its true peak above `ceiling_dbtp`.

    A clip with no measurable loudness (silence, under 400 ms) is played as it is.
    Attenuation is never limited: only a boost can push a peak past the ceiling.
    """
    if lufs is None:
        return 0.0
    gain = float(target_lufs) - float(lufs)
    if true_peak is not None and gain > 0.0:
        gain = min(gain, max(0.0, float(ceiling_dbtp) - float(true_peak)))
    return round(gain, 3)


# Pages get the gain in steps of 0.1 dB: finer figures would say no more about a clip than its
# audio does, and 0.1 dB is far below what a listener hears as a level difference.
PAGE_GAIN_STEP_DB = 0.1


def page_gain_db(lufs: float | None, true_peak: float | None, *, target_lufs: float, ceiling_dbtp: float = PEAK_CEILING_DBTP) -> float:
    """`playback_gain_db` in steps of 0.1 dB, rounded to the nearest step unless that would lift the true peak over the ceiling."""
    gain = playback_gain_db(lufs, true_peak, target_lufs=target_lufs, ceiling_dbtp=ceiling_dbtp)
    steps = round(gain / PAGE_GAIN_STEP_DB)
    # A boost is only ever held by the ceiling, and rounding up may cross it by a fraction of a step.
    if gain > 0.0 and true_peak is not None and true_peak + steps * PAGE_GAIN_STEP_DB > ceiling_dbtp + 1e-9:
        steps -= 1
    return round(steps * PAGE_GAIN_STEP_DB, 1) + 0.0
