"""What every screen's trials share: written as WAV for the page's players, and checked against the seed's answers."""

from __future__ import annotations

import io
from collections.abc import Callable

import numpy as np
import soundfile as sf


def sequence(intervals: list[np.ndarray], *, gap_seconds: float, sample_rate: int) -> np.ndarray:
    """(samples, 2) float32: the trial's stereo intervals one after another, silence between them."""
    gap = np.zeros((int(sample_rate * gap_seconds), 2))
    parts = [part for interval in intervals for part in (gap, interval)][1:]
    return np.concatenate(parts).astype(np.float32)


def wav(audio: np.ndarray, sample_rate: int) -> bytes:
    buffer = io.BytesIO()
    sf.write(buffer, audio, sample_rate, format="WAV", subtype="PCM_16")
    return buffer.getvalue()


def right(answers_for: Callable[[int, int], list[int]], seed: int, answers: list[int]) -> int:
    """How many answers name the trial's target (the seed's answers, rebuilt, never stored)."""
    return sum(int(a == t) for a, t in zip(answers, answers_for(seed, len(answers))))
