"""Battle audio in one shape for every system: 16-bit mono PCM WAV of the battle's length at the arena rate.

Before the vote nothing about a file may point at the system that made it: not its size,
not its header (a FLAC's frame sizes and block layout follow the signal and the encoder),
not its tags. So every side of every battle is served as the same 44-byte WAV header
followed by exactly round(duration x rate) samples: the stored clip decoded, mixed to
mono, resampled if need be, and trimmed or padded with silence to the battle's length.
"""

from __future__ import annotations

import os
import struct
import uuid
from math import gcd
from pathlib import Path

import numpy as np
import soundfile as sf
from django.conf import settings

from annotation.models import Clip

HEADER_BYTES = 44
SAMPLE_BYTES = 2  # 16-bit mono


def blind_frames(*, seconds: float, rate: int) -> int:
    return int(round(seconds * rate))


def wav_header(*, frames: int, rate: int) -> bytes:
    """The canonical 44-byte header of a 16-bit mono PCM WAV: RIFF, fmt and data chunks, nothing else."""
    data = frames * SAMPLE_BYTES
    return struct.pack(
        "<4sI4s4sIHHIIHH4sI", b"RIFF", 36 + data, b"WAVE", b"fmt ", 16, 1, 1, rate, rate * SAMPLE_BYTES, SAMPLE_BYTES, 16, b"data", data
    )


def blind_wav(clip: Clip, *, seconds: float, rate: int) -> Path:
    """The path of the clip rendered in the one battle shape; written once, then reused (by any battle with this clip and length)."""
    frames = blind_frames(seconds=seconds, rate=rate)
    folder = Path(settings.MEDIA_ROOT) / "arena-blind"
    path = folder / f"{clip.sha256}-{rate}-{frames}.wav"
    if path.exists():
        return path
    audio, source_rate = sf.read(clip.file.path, dtype="float64", always_2d=True)
    mono = audio.mean(axis=1)
    if source_rate != rate:
        from scipy.signal import resample_poly

        g = gcd(int(source_rate), rate)
        mono = resample_poly(mono, rate // g, int(source_rate) // g)
    out = np.zeros(frames)
    used = min(frames, len(mono))
    out[:used] = mono[:used]
    pcm = np.clip(np.round(out * 32767.0), -32768, 32767).astype("<i2")
    folder.mkdir(parents=True, exist_ok=True)
    # Written aside and renamed: a concurrent request for the same clip never reads half a file.
    partial = folder / f".{path.name}.{uuid.uuid4().hex}.part"
    with open(partial, "wb") as handle:
        handle.write(wav_header(frames=frames, rate=rate))
        handle.write(pcm.tobytes())
    os.replace(partial, path)
    return path
