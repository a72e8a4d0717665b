"""Loudness (BS.1770), true peak and a gain-riding limiter: every system is mastered the same way before its faults."""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy.ndimage import minimum_filter1d, uniform_filter1d
from scipy.signal import sosfilt

TARGET_LUFS = -14.0
QUIET_LUFS = -30.0
# Leave 1 dB of headroom: a clean master never touches full scale.
PEAK_CEILING = 0.89


@lru_cache(maxsize=8)
def _k_weighting(sample_rate: int) -> np.ndarray:
    """BS.1770 K-weighting as pyloudnorm designs it for this rate, as one SOS filter."""
    from pyloudnorm.iirfilter import IIRfilter

    stages = (IIRfilter(4.0, 1 / np.sqrt(2), 1500.0, sample_rate, "high_shelf"), IIRfilter(0.0, 0.5, 38.0, sample_rate, "high_pass"))
    return np.stack([np.concatenate([np.asarray(f.b) / f.a[0], np.asarray(f.a) / f.a[0]]) for f in stages])


def loudness_lufs(audio: np.ndarray, sample_rate: int) -> float:
    """Integrated loudness (BS.1770-4 gating, the same blocks as pyloudnorm, vectorised: mastering measures it several times).

    Clips shorter than one 400 ms gating block fall back to RMS.
    """
    block = 0.4 * sample_rate
    n = len(audio)
    if n < int(block) + 1:
        rms = float(np.sqrt(np.mean(np.square(audio)))) if n else 0.0
        return -0.691 + 20.0 * math.log10(max(rms, 1e-9))
    weighted = sosfilt(_k_weighting(sample_rate), np.asarray(audio, dtype=np.float64))
    energy = np.concatenate([[0.0], np.cumsum(weighted * weighted)])
    blocks = int(round((n / sample_rate - 0.4) / 0.1)) + 1
    j = np.arange(blocks)
    lower = (0.4 * 0.25 * j * sample_rate).astype(int)
    upper = np.minimum((0.4 * (0.25 * j + 1) * sample_rate).astype(int), n)
    z = (energy[upper] - energy[lower]) / block
    with np.errstate(divide="ignore"):
        level = -0.691 + 10.0 * np.log10(z)
    gated = z[level >= -70.0]
    if len(gated) == 0:
        return float("-inf")
    relative = -0.691 + 10.0 * math.log10(gated.mean()) - 10.0
    kept = z[(level > relative) & (level > -70.0)]
    return -0.691 + 10.0 * math.log10(kept.mean()) if len(kept) else float("-inf")


_TP_OFFSETS = np.arange(-11, 13)
# Windowed-sinc kernels for the three points between samples (4x oversampling, BS.1770 Annex 2).
_TP_KERNELS = np.stack([np.sinc(frac - _TP_OFFSETS) * np.kaiser(len(_TP_OFFSETS), 6.0) for frac in (0.25, 0.5, 0.75)])


def _true_magnitude(x: np.ndarray, floor: float) -> np.ndarray:
    """|x| per sample, raised to the largest inter-sample value on either side (4x oversampled).

    Only samples above `floor` (and the gaps next to them) are interpolated: an inter-sample
    peak above the floor sits next to large samples, and this is far cheaper than
    oversampling the whole clip.
    """
    mag = np.abs(x)
    hot = mag >= floor
    hot[:-1] |= hot[1:]  # the gap before a large sample, as well as the one after it
    hot[-1] = False
    starts = np.flatnonzero(hot)
    if len(starts) == 0:
        return mag
    padded = np.pad(x, (11, 12))
    between = np.abs(padded[starts[:, None] + 11 + _TP_OFFSETS[None, :]] @ _TP_KERNELS.T).max(axis=1)
    out = mag.copy()
    np.maximum.at(out, starts, between)
    np.maximum.at(out, starts + 1, between)
    return out


def true_peak(x: np.ndarray) -> float:
    """Peak of the 4x oversampled signal: what a DAC will actually swing to."""
    peak = float(np.max(np.abs(x), initial=0.0))
    return float(_true_magnitude(x, 0.5 * peak).max(initial=0.0)) if peak > 0 else 0.0


def _limit(x: np.ndarray, magnitude: np.ndarray, ceiling: float, sample_rate: int, window_s: float = 0.01) -> np.ndarray:
    """Gain-riding limiter on the true (inter-sample) peak envelope `magnitude` of `x`.

    A waveshaper would leave flat tops that read as clipping; here the gain dips smoothly
    around loud peaks. The smoothed gain never exceeds the gain each sample needs (a moving
    average of a running minimum of the same width), so the waveform keeps its shape.
    """
    need = np.minimum(1.0, ceiling / np.maximum(magnitude, 1e-12))
    if need.min() >= 1.0:
        return x
    size = 2 * max(1, int(window_s * sample_rate / 2)) + 1
    gain = uniform_filter1d(minimum_filter1d(need, size, mode="nearest"), size, mode="nearest")
    return x * np.minimum(gain, need)


def master(audio: np.ndarray, sample_rate: int, *, target_lufs: float = TARGET_LUFS, ceiling: float = PEAK_CEILING) -> np.ndarray:
    """Bring to the loudness target with the true peak under the ceiling and no DC."""
    x = audio - audio.mean()
    level = loudness_lufs(x, sample_rate)
    if not math.isfinite(level):
        return x
    x = x * 10.0 ** ((target_lufs - level) / 20.0)
    aim = 0.99 * ceiling
    magnitude = _true_magnitude(x, 0.5 * aim)
    if magnitude.max() > aim:
        # Limit to a threshold such that, after making up the loudness the limiter took away,
        # the peaks land on the ceiling; the make-up gain moves slowly, so a few rounds settle it.
        unlimited, threshold = x, aim
        for _ in range(4):
            limited = _limit(unlimited, magnitude, threshold, sample_rate)
            makeup = 10.0 ** ((target_lufs - loudness_lufs(limited, sample_rate)) / 20.0)
            x = limited * makeup
            if abs(threshold * makeup - aim) < 0.003 * aim:
                break
            threshold = aim / makeup
    x = x - x.mean()
    over = true_peak(x)
    return x * (ceiling / over) if over > ceiling else x

