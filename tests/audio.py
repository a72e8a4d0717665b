"""Small audio helpers for tests: write real files soundfile can read."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import soundfile as sf


def tone(seconds: float = 1.0, *, freq: float = 440.0, sr: int = 16000, channels: int = 1, amp: float = 0.3) -> np.ndarray:
    t = np.arange(int(seconds * sr)) / sr
    mono = (amp * np.sin(2 * np.pi * freq * t)).astype(np.float32)
    return mono if channels == 1 else np.stack([mono] * channels, axis=1)


def write_tone(path: Path, seconds: float = 1.0, *, freq: float = 440.0, sr: int = 16000, channels: int = 1, fmt: str | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    sf.write(str(path), tone(seconds, freq=freq, sr=sr, channels=channels), sr, format=fmt)
    return path
