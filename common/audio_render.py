"""Clips of one blind page rendered to one common shape, so that no response's size, type or length, and no gain the
page is told, can tell the clips apart beyond what a listener hears.

A page's shape is the highest sample rate and channel count among its clips and the length of the longest; each clip
is served as 16-bit PCM WAV in that shape: resampled (scipy's polyphase filter), a mono clip copied to every channel
and a clip with fewer channels filled with silent ones, padded with silence at the end, and with the page's loudness
gain multiplied into the samples, so the page plays every clip at 0 dB. The gain is the one computed on the clip as
stored. Measured again on the copy, a clip is as loud over its own length and channels; over the whole padded copy,
BS.1770 gates the silent blocks out but keeps the few that straddle the clip's end, which reads about 0.7 LU lower
for a 1 s clip padded to 2 s and under 0.1 LU for clips of 10 s or more; and a mono clip copied to two channels
reads 3 LU higher by BS.1770's channel sum while it plays as before (a browser sends a mono buffer to both speakers).

The rendered copies are cached under MEDIA_ROOT/blind-pages/, named by a digest of the source's content hash, the
shape, the gain and RENDER_VERSION: a copy is made once, written to a temporary name and moved into place, so a
reader never sees half a file and two processes rendering the same copy at once both end with the same bytes.
"""

from __future__ import annotations

import hashlib
import math
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf
from django.conf import settings

# Bump when the rendering changes: every cached copy is then made again under a new name.
RENDER_VERSION = 1
FOLDER = "blind-pages"
_LARGEST = 32767 / 32768  # the largest 16-bit sample, as a float


class RenderError(Exception):
    """A source clip that cannot be read or rendered; the message says which and why, without naming the file."""


@dataclass(frozen=True)
class Shape:
    sample_rate: int
    channels: int
    frames: int

    @property
    def duration(self) -> float:
        return self.frames / self.sample_rate


def shape_of(clips) -> Shape:
    """The common shape of a page's clips, from their stored sample rate, channel count and duration."""
    clips = list(clips)
    if not clips:
        raise ValueError("A page's shape needs at least one clip.")
    rate = max(int(clip.sample_rate) for clip in clips)
    channels = max(int(clip.channels) for clip in clips)
    # The tolerance keeps a duration stored as 1.25 s from becoming one frame more through float error.
    frames = max(max(1, math.ceil(float(clip.duration) * rate - 1e-6)) for clip in clips)
    return Shape(sample_rate=rate, channels=channels, frames=frames)


def render_key(*, content_hash: str, shape: Shape, gain_db: float) -> str:
    text = f"v{RENDER_VERSION}\n{content_hash}\n{shape.sample_rate}\n{shape.channels}\n{shape.frames}\n{gain_db:.1f}"
    return hashlib.sha256(text.encode()).hexdigest()


def rendered_path(key: str) -> Path:
    return Path(settings.MEDIA_ROOT) / FOLDER / key[:2] / f"{key}.wav"


def samples_in_shape(data: np.ndarray, rate: int, *, shape: Shape, gain_db: float) -> np.ndarray:
    """`data` (frames x channels, floats) at `rate` as float samples of `shape`, the gain applied and held within 16 bits."""
    if rate != shape.sample_rate:
        from scipy.signal import resample_poly

        common = math.gcd(shape.sample_rate, rate)
        data = resample_poly(data, shape.sample_rate // common, rate // common, axis=0)
    have = data.shape[1]
    if have == 1 and shape.channels > 1:
        data = np.repeat(data, shape.channels, axis=1)
    elif have < shape.channels:
        data = np.hstack([data, np.zeros((data.shape[0], shape.channels - have))])
    elif have > shape.channels:
        data = data[:, : shape.channels]
    out = np.zeros((shape.frames, shape.channels))
    take = min(shape.frames, data.shape[0])
    out[:take] = data[:take]
    out *= 10.0 ** (gain_db / 20.0)
    return np.clip(out, -1.0, _LARGEST)


def render(*, source: str, content_hash: str, shape: Shape, gain_db: float) -> tuple[Path, str]:
    """The cached copy of the clip at `source` in `shape` with `gain_db` in its samples: (path, key), made if missing.

    The key names the copy's content (source hash, shape, gain, version): an ETag made from it changes when the copy does."""
    key = render_key(content_hash=content_hash, shape=shape, gain_db=gain_db)
    path = rendered_path(key)
    if path.is_file():
        return path, key
    try:
        data, rate = sf.read(source, dtype="float64", always_2d=True)
    except (OSError, RuntimeError, ValueError, sf.SoundFileError) as exc:
        raise RenderError(f"The clip's audio file cannot be read ({type(exc).__name__}); it is missing or damaged on the server.") from None
    if data.size == 0 or not np.isfinite(data).all():
        raise RenderError("The clip's audio file holds no samples, or samples that are not numbers.")
    samples = samples_in_shape(data, int(rate), shape=shape, gain_db=gain_db)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{key}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        sf.write(str(temporary), samples, shape.sample_rate, subtype="PCM_16", format="WAV")
        os.replace(temporary, path)
    finally:
        if temporary.exists():
            temporary.unlink()
    return path, key
