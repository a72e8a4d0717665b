"""The arena's one shape and level for every clip, whatever made it: mono, one sample rate, the battle's length at most, one loudness.

Only generation and catalog imports call it; scipy is imported inside, so web processes never load it.
"""

from __future__ import annotations

from math import gcd

import numpy as np
from django.conf import settings

from common import loudness

from .adapters import GenerationError


def prepare_audio(audio: np.ndarray, rate: int, *, seconds: float) -> tuple[np.ndarray, loudness.Loudness]:
    """The clip in the arena's one shape (mono, the arena sample rate, the requested length at most, one level),
    and its loudness and true peak as generated: measured on the kept part before anything changed it.

    The level follows common.loudness.playback_gain_db, the rule studies play clips by: to
    ARENA_TARGET_LUFS, never boosted past the -1 dBTP ceiling. A clip whose own true peak is above the
    ceiling is lowered to it, so no stored clip passes it (that rule leaves attenuation to the caller).
    """
    # Only generation needs scipy; web processes that never generate do not pay for importing it.
    from scipy.signal import resample_poly

    audio = np.asarray(audio, dtype=np.float64)
    if audio.ndim == 2 and audio.shape[1] > 8:
        audio = audio.T  # channels first
    if not np.isfinite(audio).all():
        raise GenerationError("generated audio contains NaN or infinite samples")
    audio = audio[: int(round(seconds * int(rate)))]
    generated = loudness.measure(audio, int(rate))
    if audio.ndim == 2:
        audio = audio.mean(axis=1)
    target = int(settings.ARENA_SAMPLE_RATE)
    if rate != target:
        g = gcd(int(rate), target)
        audio = resample_poly(audio, target // g, int(rate) // g)
    audio = audio[: int(round(seconds * target))]
    mono = loudness.measure(audio, target)
    gain = loudness.playback_gain_db(mono.lufs, mono.true_peak_dbtp, target_lufs=float(settings.ARENA_TARGET_LUFS))
    if mono.true_peak_dbtp is not None:
        gain = min(gain, loudness.PEAK_CEILING_DBTP - mono.true_peak_dbtp)
    return (audio * 10 ** (gain / 20.0)).astype(np.float32), generated
