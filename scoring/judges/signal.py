"""Signal-quality judge: technical faults measured from the waveform, no weights.

It measures recording faults (clipping, overs, noise, silence, DC, level), not musicality. As a
pairwise judge it fills only the musicality dimension, labelled technical, because a clean
recording is a precondition of good-sounding music, not evidence of it.
"""

from __future__ import annotations

import numpy as np

from .base import MUSICALITY, ClipAudio, ConditionInput, JudgeAdapter, read_audio

ANALYSIS_RATE = 48000
SILENCE_DBFS = -60.0
FRAME_SECONDS = 0.05


def _db(x: float) -> float:
    return float(20 * np.log10(x)) if x > 0 else float("-inf")


def _finite(x: float | None) -> float | None:
    return None if x is None or not np.isfinite(x) else float(x)


def clipping_ratio(wave: np.ndarray, *, min_run: int = 3) -> float:
    """Share of samples inside flat tops: runs of >= min_run samples within 0.1 % of the peak.

    A clipped waveform sits at its ceiling for many consecutive samples whatever the ceiling's
    level; an unclipped one touches its peak for at most a sample or two.
    """
    mono = np.abs(wave)
    peak = float(mono.max(initial=0.0))
    if peak <= 0:
        return 0.0
    hot = mono >= 0.999 * peak
    if not hot.any():
        return 0.0
    # Run lengths of consecutive True values.
    padded = np.concatenate([[False], hot, [False]])
    edges = np.flatnonzero(np.diff(padded.astype(np.int8)))
    starts, ends = edges[::2], edges[1::2]
    lengths = ends - starts
    return float(lengths[lengths >= min_run].sum() / len(mono))


def true_peak_dbtp(wave: np.ndarray) -> float:
    """BS.1770 Annex 2 style: 4x polyphase oversampling, then the absolute maximum."""
    from scipy.signal import resample_poly

    over = resample_poly(wave.astype(np.float64), 4, 1, axis=0)
    return _db(float(np.abs(over).max(initial=0.0)))


def spectral_stats(mono: np.ndarray, sr: int) -> dict:
    from scipy.signal import stft

    if len(mono) < 2048:
        mono = np.pad(mono, (0, 2048 - len(mono)))
    freqs, _, z = stft(mono, fs=sr, nperseg=2048, noverlap=1536, boundary=None, padded=False)
    power = np.abs(z) ** 2 + 1e-20
    frame_energy = power.sum(axis=0)
    # Silent frames would read as perfectly flat noise; judge only frames that carry sound.
    loud = frame_energy > frame_energy.max(initial=0) * 1e-6
    if not loud.any():
        return {"spectral_flatness": None, "spectral_centroid_hz": None, "spectral_rolloff_hz": None}
    p = power[:, loud]
    flatness = np.exp(np.mean(np.log(p), axis=0)) / np.mean(p, axis=0)
    centroid = (freqs[:, None] * p).sum(axis=0) / p.sum(axis=0)
    cumulative = np.cumsum(p, axis=0)
    rolloff = freqs[np.argmax(cumulative >= 0.85 * cumulative[-1], axis=0)]
    # High-band share: broadband hiss lifts the top octaves where music has little energy.
    high = p[freqs >= 8000].sum(axis=0) / p.sum(axis=0)
    return {
        "spectral_flatness": float(np.median(flatness)),
        "spectral_centroid_hz": float(np.median(centroid)),
        "spectral_rolloff_hz": float(np.median(rolloff)),
        "high_band_share": float(np.median(high)),
    }


def signal_features(wave: np.ndarray, sr: int) -> dict:
    """Technical measurements of one clip; `wave` is (frames, channels) float in [-1, 1]."""
    import pyloudnorm

    if wave.ndim == 1:
        wave = wave[:, None]
    mono = wave.mean(axis=1)
    meter = pyloudnorm.Meter(sr)
    try:
        lufs = meter.integrated_loudness(wave if wave.shape[1] <= 5 else mono)
    except ValueError:  # shorter than one 400 ms gating block
        lufs = None
    try:
        lra = meter.loudness_range(wave if wave.shape[1] <= 5 else mono)
    except (ValueError, IndexError):
        lra = None
    frame = max(1, int(FRAME_SECONDS * sr))
    n_frames = max(1, len(mono) // frame)
    framed = mono[: n_frames * frame].reshape(n_frames, -1) if len(mono) >= frame else mono[None, :]
    rms_db = 20 * np.log10(np.sqrt(np.mean(framed**2, axis=1)) + 1e-12)
    features = {
        "integrated_lufs": _finite(lufs),
        "loudness_range_lu": _finite(lra),
        "sample_peak_dbfs": _finite(_db(float(np.abs(wave).max(initial=0.0)))),
        "true_peak_dbtp": _finite(true_peak_dbtp(wave)),
        "clipping_ratio": max(clipping_ratio(wave[:, c]) for c in range(wave.shape[1])),
        "silence_ratio": float(np.mean(rms_db < SILENCE_DBFS)),
        "dc_offset": float(np.abs(wave.mean(axis=0)).max()),
    }
    features.update(spectral_stats(mono, sr))
    return features


def _level_penalty(lufs: float | None) -> float:
    """0 inside -23..-7 LUFS (broadcast to loud streaming masters); full 16 LU below or 8 LU above."""
    if lufs is None:
        return 1.0
    return float(min(1.0, max(0.0, -23.0 - lufs) / 16.0 + max(0.0, lufs + 7.0) / 8.0))


def technical_score(f: dict) -> tuple[float, dict]:
    """Composite in [0, 1] (1 = no technical fault found) and the penalty behind each part.

    Each penalty saturates at 1 for a fault no listener would accept: 1 % of samples in flat
    tops, a true peak 3 dB over full scale, an all-silent clip, a DC offset of 0.05, a noise
    floor as flat as white noise, or a level 16 LU under -23 LUFS / 8 LU over -7 LUFS.
    """
    penalties = {
        "clipping": min(1.0, f["clipping_ratio"] * 100.0),
        "overs": min(1.0, max(0.0, (f["true_peak_dbtp"] or -100.0) - 0.0) / 3.0),
        "silence": f["silence_ratio"],
        "dc": min(1.0, f["dc_offset"] / 0.05),
        "noise": min(1.0, max(0.0, (f["spectral_flatness"] or 0.0) - 0.02) / 0.3) if f["spectral_flatness"] is not None else 1.0,
        "hiss": min(1.0, max(0.0, (f.get("high_band_share") or 0.0) - 0.01) / 0.2),
        "level": _level_penalty(f["integrated_lufs"]),
    }
    weights = {"clipping": 0.3, "overs": 0.1, "silence": 0.15, "dc": 0.1, "noise": 0.15, "hiss": 0.1, "level": 0.1}
    score = 1.0 - sum(weights[k] * v for k, v in penalties.items())
    return float(np.clip(score, 0.0, 1.0)), penalties


class SignalJudge(JudgeAdapter):
    kind = "signal"
    title = "Signal quality (technical)"
    measures = (
        "Technical faults only: integrated loudness and loudness range (BS.1770), sample and true peak, "
        "clipping, silence, DC offset, spectral flatness/centroid/rolloff. Fills musicality, labelled technical."
    )
    dimensions = (MUSICALITY,)
    modalities = ("text", "text+lyrics", "text+ref", "text+lyrics+ref")
    needs_weights = False
    packages = ("pyloudnorm", "scipy")
    code_version = "1"

    # Counts decodes in this process: the benchmark and tests read it to check the cache.
    encode_calls = 0

    def score_clips(self, clips: list[ClipAudio], condition: ConditionInput) -> list[dict]:
        out = []
        for clip in clips:
            wave, sr = read_audio(clip.path)
            type(self).encode_calls += 1
            features = signal_features(wave, sr)
            score, penalties = technical_score(features)
            out.append({MUSICALITY: score, "technical": True, "features": features, "penalties": penalties})
        return out
