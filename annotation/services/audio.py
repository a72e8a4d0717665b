"""Audio in: probe a file, store it as a content-addressed clip, name its system."""

from __future__ import annotations

import hashlib
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf
from django.core.files import File
from django.db import IntegrityError, transaction

from auditorium.errors import ServiceError

from ..models import Clip, System

SUPPORTED_AUDIO = {".wav": "WAV", ".flac": "FLAC", ".ogg": "OGG", ".mp3": "MP3", ".aiff": "AIFF", ".aif": "AIFF"}


class AudioError(ServiceError):
    pass


@dataclass(frozen=True)
class AudioInfo:
    duration: float
    sample_rate: int
    channels: int
    frames: int
    extension: str


def audio_probe(path: Path | str) -> AudioInfo:
    """Open and fully decode an audio file; raise AudioError with a readable reason if it is unusable."""
    path = Path(path)
    ext = path.suffix.lower()
    if ext not in SUPPORTED_AUDIO:
        raise AudioError(f"unsupported audio format {ext or '(no extension)'!r}; use one of {', '.join(sorted(SUPPORTED_AUDIO))}", code="unsupported_format")
    if not path.is_file():
        raise AudioError(f"audio file not found: {path.name}", code="missing_file")
    if path.stat().st_size == 0:
        raise AudioError(f"audio file is empty (0 bytes): {path.name}", code="empty_audio")
    try:
        with sf.SoundFile(str(path)) as handle:
            sample_rate, channels = handle.samplerate, handle.channels
            frames = 0
            # Decode everything: a truncated or corrupt body fails here, not at play time.
            for block in handle.blocks(blocksize=65536, dtype="float32", always_2d=True):
                if not np.isfinite(block).all():
                    raise AudioError(f"audio contains NaN or infinite samples: {path.name}", code="corrupt_audio")
                frames += len(block)
    except AudioError:
        raise
    except Exception as exc:  # soundfile raises LibsndfileError / RuntimeError / ValueError
        raise AudioError(f"audio cannot be decoded ({exc}): {path.name}", code="unreadable_audio") from None
    if frames == 0 or sample_rate <= 0:
        raise AudioError(f"audio has no samples: {path.name}", code="empty_audio")
    return AudioInfo(duration=frames / sample_rate, sample_rate=sample_rate, channels=channels, frames=frames, extension=ext)


def file_sha256(path: Path | str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def clip_ingest(
    *,
    path: Path | str,
    system: System | None = None,
    kind: str = Clip.Kind.GENERATED,
    original_name: str = "",
    derived_from: Clip | None = None,
    degradation: dict | None = None,
    info: AudioInfo | None = None,
) -> tuple[Clip, bool]:
    """Store an audio file as a clip, deduplicated by content hash. Returns (clip, created)."""
    path = Path(path)
    info = info or audio_probe(path)
    sha = file_sha256(path)
    existing = Clip.objects.filter(sha256=sha).first()
    if existing is not None:
        return existing, False
    clip = Clip(
        sha256=sha,
        extension=info.extension,
        kind=kind,
        system=system,
        duration=info.duration,
        sample_rate=info.sample_rate,
        channels=info.channels,
        original_name=original_name[:500],
        derived_from=derived_from,
        degradation=degradation or {},
    )
    with open(path, "rb") as handle:
        clip.file.save(f"{sha}{info.extension}", File(handle), save=False)
    try:
        with transaction.atomic():
            clip.save()
    except IntegrityError:
        # Another process stored the same content meanwhile: one clip, not two.
        clip.file.delete(save=False)
        return Clip.objects.get(sha256=sha), False
    return clip, True


def clip_ingest_array(
    *, audio: np.ndarray, sample_rate: int, system: System | None = None, kind: str = Clip.Kind.GENERATED, fmt: str = "FLAC", **extra
) -> tuple[Clip, bool]:
    """Store a float waveform (frames[, channels]) as a clip."""
    suffix = {"FLAC": ".flac", "WAV": ".wav"}[fmt]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"clip{suffix}"
        sf.write(str(path), np.asarray(audio, dtype=np.float32), sample_rate, format=fmt, subtype="PCM_16")
        return clip_ingest(path=path, system=system, kind=kind, **extra)


def system_get_or_create(*, name: str, organisation: str = "") -> System:
    system, _ = System.objects.get_or_create(name=name.strip(), defaults={"organisation": organisation})
    return system

