"""Hard negatives: controlled degradations of a clip (AIR-Bench style mixing, AnyAudio-Judge catch items).

Pure numpy on (frames, channels) float arrays. Every degradation is described by a small dict
that is validated here and stored with the derived clip, so a catch pair says exactly what was
done to its wrong answer.

Kinds and parameters:
- noise:  snr_db (signal-to-noise ratio, dB, of the original's RMS over white noise), seed
- mix:    other_clip (id), lufs_diff (how many LU the other clip sits below the original), offset_s
- shift:  seconds (positive delays the audio and pads silence in front; the length is kept)
- splice: at_s, jump_s (at at_s, skip jump_s of audio so the beat stumbles; the tail is padded)
- clip:   gain_db (boost before hard clipping at full scale)
- cut:    start_s, length_s (that span is silenced)
"""

from __future__ import annotations

import numpy as np

KINDS = ("noise", "mix", "shift", "splice", "clip", "cut")

DEFAULTS = {
    "noise": {"snr_db": 10.0, "seed": 0},
    "mix": {"lufs_diff": 6.0, "offset_s": 0.0},
    "shift": {"seconds": 0.25},
    "splice": {"at_s": None, "jump_s": 0.3},
    "clip": {"gain_db": 18.0},
    "cut": {"start_s": None, "length_s": 0.5},
}

RANGES = {
    "snr_db": (-20.0, 60.0),
    "lufs_diff": (-30.0, 40.0),
    "offset_s": (0.0, 600.0),
    "seconds": (-30.0, 30.0),
    "at_s": (0.0, 3600.0),
    "jump_s": (0.01, 30.0),
    "gain_db": (0.5, 60.0),
    "start_s": (0.0, 3600.0),
    "length_s": (0.01, 600.0),
}


class DegradationError(ValueError):
    """The degradation spec cannot be applied; the message says which field to fix."""


def spec_clean(spec: dict, *, duration: float) -> dict:
    """A complete, validated spec: defaults filled in, numbers checked against the clip's duration."""
    if not isinstance(spec, dict):
        raise DegradationError("a degradation is an object such as {\"kind\": \"noise\", \"snr_db\": 10}")
    kind = spec.get("kind")
    if kind not in KINDS:
        raise DegradationError(f"kind must be one of {', '.join(KINDS)} (got {kind!r})")
    allowed = set(DEFAULTS[kind]) | {"kind"} | ({"other_clip"} if kind == "mix" else set())
    unknown = sorted(set(spec) - allowed)
    if unknown:
        raise DegradationError(f"{kind}: unknown field(s) {', '.join(unknown)}; allowed: {', '.join(sorted(allowed - {'kind'}))}")
    out = {"kind": kind, **DEFAULTS[kind], **{k: v for k, v in spec.items() if k != "kind"}}
    for key, value in list(out.items()):
        if key in ("kind", "other_clip"):
            continue
        if key == "seed":
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise DegradationError("seed must be a non-negative integer")
            continue
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value):
            raise DegradationError(f"{kind}: {key} must be a number")
        low, high = RANGES[key]
        if not low <= value <= high:
            raise DegradationError(f"{kind}: {key}={value} is outside {low:g}..{high:g}")
        out[key] = float(value)
    if kind == "mix" and not isinstance(out.get("other_clip"), int):
        raise DegradationError("mix: other_clip must be the id of the clip to mix in")
    if kind == "splice":
        out["at_s"] = duration / 2 if out["at_s"] is None else out["at_s"]
        if out["at_s"] + out["jump_s"] >= duration:
            raise DegradationError(f"splice: at_s + jump_s must stay inside the clip ({duration:.2f} s)")
    if kind == "cut":
        out["start_s"] = max(0.0, (duration - out["length_s"]) / 2) if out["start_s"] is None else out["start_s"]
        if out["start_s"] >= duration:
            raise DegradationError(f"cut: start_s must be inside the clip ({duration:.2f} s)")
    if kind == "shift" and abs(out["seconds"]) >= duration:
        raise DegradationError(f"shift: |seconds| must be shorter than the clip ({duration:.2f} s)")
    return out


def _rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(x, dtype=np.float64)))) if x.size else 0.0


def _loudness(x: np.ndarray, sr: int) -> float | None:
    import pyloudnorm

    try:
        value = pyloudnorm.Meter(sr).integrated_loudness(x)
    except ValueError:
        return None
    return float(value) if np.isfinite(value) else None


def _fit(other: np.ndarray, frames: int, channels: int) -> np.ndarray:
    if other.shape[1] != channels:
        other = np.repeat(other.mean(axis=1, keepdims=True), channels, axis=1)
    if len(other) < frames:
        reps = int(np.ceil(frames / max(len(other), 1)))
        other = np.tile(other, (reps, 1))
    return other[:frames]


def degrade(wave: np.ndarray, sr: int, spec: dict, *, other: np.ndarray | None = None) -> np.ndarray:
    """Apply a cleaned spec; the result has the input's shape and stays within [-1, 1]."""
    x = np.asarray(wave, dtype=np.float64)
    if x.ndim == 1:
        x = x[:, None]
    frames, channels = x.shape
    kind = spec["kind"]
    if kind == "noise":
        rng = np.random.default_rng(spec["seed"])
        noise = rng.standard_normal(x.shape)
        target = _rms(x) / (10 ** (spec["snr_db"] / 20.0))
        y = x + noise * (target / max(_rms(noise), 1e-12))
    elif kind == "mix":
        if other is None:
            raise DegradationError("mix: the other clip's audio is missing")
        offset = int(spec["offset_s"] * sr)
        o = _fit(np.asarray(other, dtype=np.float64).reshape(len(other), -1), max(frames - offset, 0), channels)
        base_l, other_l = _loudness(x, sr), _loudness(o, sr) if len(o) else None
        if base_l is not None and other_l is not None:
            gain = 10 ** ((base_l - spec["lufs_diff"] - other_l) / 20.0)
        else:
            # Too short for BS.1770 gating: fall back to RMS, the same relation in dB.
            gain = (_rms(x) / max(_rms(o), 1e-12)) * 10 ** (-spec["lufs_diff"] / 20.0)
        y = x.copy()
        y[offset : offset + len(o)] += o * gain
    elif kind == "shift":
        n = int(round(spec["seconds"] * sr))
        y = np.zeros_like(x)
        if n >= 0:
            y[n:] = x[: frames - n]
        else:
            y[: frames + n] = x[-n:]
    elif kind == "splice":
        at, jump = int(spec["at_s"] * sr), int(spec["jump_s"] * sr)
        y = np.concatenate([x[:at], x[at + jump :], np.zeros((jump, channels))])[:frames]
    elif kind == "clip":
        y = np.clip(x * 10 ** (spec["gain_db"] / 20.0), -1.0, 1.0)
    elif kind == "cut":
        start, length = int(spec["start_s"] * sr), int(spec["length_s"] * sr)
        y = x.copy()
        y[start : start + length] = 0.0
    else:  # pragma: no cover - spec_clean rejects it first
        raise DegradationError(f"unknown kind {kind!r}")
    peak = float(np.abs(y).max(initial=0.0))
    if kind != "clip" and peak > 1.0:
        # Normalise rather than clip, so a noise or mix negative carries only the intended fault.
        y = y / peak * 0.999
    return y.astype(np.float32)
