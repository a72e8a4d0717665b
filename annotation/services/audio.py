"""Audio in: probe a file, store it without its metadata as a content-addressed clip, name its system."""

from __future__ import annotations

import hashlib
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import soundfile as sf
from django.core.files import File
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from common.errors import ServiceError
from common.loudness import measure, measure_file

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
        # libsndfile's message quotes the full path (an upload's scratch folder): keep only the file's name.
        reason = str(exc).replace(str(path), path.name)
        raise AudioError(f"audio cannot be decoded ({reason}): {path.name}", code="unreadable_audio") from None
    if frames == 0 or sample_rate <= 0:
        raise AudioError(f"audio has no samples: {path.name}", code="empty_audio")
    return AudioInfo(duration=frames / sample_rate, sample_rate=sample_rate, channels=channels, frames=frames, extension=ext)


def file_sha256(path: Path | str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


# Integer PCM is rewritten sample for sample in its own container; anything else (float WAV,
# lossy or exotic formats) is decoded and stored as 24-bit FLAC. libsndfile writes no tags
# unless asked, and float WAV would carry a PEAK chunk with the time of writing.
_LOSSLESS_INTEGER = ("PCM_S8", "PCM_U8", "PCM_16", "PCM_24", "PCM_32")
_KEPT_CONTAINERS = {"WAV": ".wav", "AIFF": ".aiff", "FLAC": ".flac"}


def audio_strip(path: Path | str, folder: Path | str) -> Path:
    """Write the audio of `path` into `folder` with nothing else: no tags, pictures, encoder strings or extra chunks.

    The output is deterministic and idempotent (stripping a stripped file gives the same
    bytes), so content hashes of stored clips are stable across imports and round trips.
    """
    path = Path(path)
    try:
        with sf.SoundFile(str(path)) as source:
            fmt, subtype = source.format, source.subtype
            if subtype in _LOSSLESS_INTEGER and fmt in _KEPT_CONTAINERS:
                out_format, out_subtype, dtype = fmt, subtype, "int32"
            elif subtype in _LOSSLESS_INTEGER and sf.check_format("FLAC", subtype):
                out_format, out_subtype, dtype = "FLAC", subtype, "int32"
            else:
                out_format, out_subtype, dtype = "FLAC", "PCM_24", "float64"
            target = Path(folder) / f"stripped{_KEPT_CONTAINERS[out_format]}"
            with sf.SoundFile(str(target), "w", samplerate=source.samplerate, channels=source.channels, format=out_format, subtype=out_subtype) as out:
                for block in source.blocks(blocksize=65536, dtype=dtype, always_2d=True):
                    # libsndfile wraps float samples beyond full scale around when writing integers.
                    out.write(block if dtype == "int32" else np.clip(block, -1.0, 1.0))
    except Exception as exc:  # soundfile raises LibsndfileError / RuntimeError / ValueError
        reason = str(exc).replace(str(path), path.name).replace(str(folder), "")
        raise AudioError(f"audio cannot be rewritten without its metadata ({reason}): {path.name}", code="unreadable_audio") from None
    return target


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
    """Store an audio file as a clip with its metadata stripped (audio_strip). Returns (clip, created).

    Annotators hear the stored file, so no title, artist or encoder string of the import
    can name its maker. Deduplicated twice: the same imported file finds its clip by
    `original_sha256` without being rewritten, and two files that differ only in their
    tags share one clip by the stored file's `sha256`.
    """
    path = Path(path)
    info = info or audio_probe(path)
    original = file_sha256(path)
    # An already stripped file (an export imported again) is its own stored content.
    existing = Clip.objects.filter(Q(original_sha256=original) | Q(sha256=original)).first()
    if existing is not None:
        return existing, False
    with tempfile.TemporaryDirectory() as tmp:
        stripped = audio_strip(path, tmp)
        sha = file_sha256(stripped)
        existing = Clip.objects.filter(sha256=sha).first()
        if existing is not None:
            return existing, False
        loudness = measure_file(stripped)
        clip = Clip(
            sha256=sha,
            original_sha256=original,
            extension=stripped.suffix,
            kind=kind,
            system=system,
            duration=info.duration,
            sample_rate=info.sample_rate,
            channels=info.channels,
            loudness_lufs=loudness.lufs,
            true_peak_dbtp=loudness.true_peak_dbtp,
            loudness_measured_at=timezone.now(),
            original_name=original_name[:500],
            derived_from=derived_from,
            degradation=degradation or {},
        )
        with open(stripped, "rb") as handle:
            clip.file.save(f"{sha}{stripped.suffix}", File(handle), save=False)
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


@dataclass
class LoudnessBackfill:
    """What `clip_loudness_backfill` did: clips measured (with a loudness, or silent / under 400 ms), files it could not read."""

    measured: int = 0
    unmeasurable: int = 0
    already: int = 0
    failed: list[tuple[int, str, str]] = field(default_factory=list)  # (clip id, hash prefix, reason)

    def summary(self) -> str:
        lines = [
            f"measured {self.measured + self.unmeasurable} clips: {self.measured} with a loudness, {self.unmeasurable} silent or under 400 ms (played as stored)",
            f"{self.already} clips were measured already",
        ]
        if self.failed:
            lines.append(f"{len(self.failed)} could not be read and stay unmeasured:")
            lines += [f"  clip {pk} ({sha}...): {reason}" for pk, sha, reason in self.failed]
        return "\n".join(lines)


def _clip_loudness(clip: Clip):
    """The stored file's BS.1770 figures, read with soundfile; AudioError with a readable reason when it cannot be read."""
    try:
        with clip.file.open("rb") as handle:
            audio, rate = sf.read(handle, dtype="float64", always_2d=True)
    except FileNotFoundError:
        raise AudioError(f"the stored file {clip.file.name} is missing", code="missing_file") from None
    except Exception as exc:  # soundfile raises LibsndfileError / RuntimeError / ValueError; storage errors vary
        # libsndfile names the handle ("Error opening <FieldFile: ...>: reason"); the file is named once, here.
        reason = str(exc).split(">: ", 1)[-1]
        raise AudioError(f"the stored file {clip.file.name} cannot be decoded ({reason})", code="unreadable_audio") from None
    if not np.isfinite(audio).all():
        raise AudioError(f"the stored file {clip.file.name} holds NaN or infinite samples", code="corrupt_audio")
    return measure(audio, rate)


def clip_loudness_backfill(*, clips=None, batch_size: int = 100, remeasure: bool = False, progress=None) -> LoudnessBackfill:
    """Measure the clips that were never measured (or, with `remeasure`, all of them) among `clips` (default: every clip).

    Idempotent: a measured clip is not read again unless asked. A file that cannot be read is
    reported and left unmeasured (its pages play it as stored), and the others go on. Each batch
    is written in its own transaction, so an interrupted run keeps what it measured.
    progress, if given, is called as (done, total) after each batch.
    """
    if batch_size < 1:
        raise ServiceError("The batch size must be at least 1.", code="bad_batch")
    scope = clips if clips is not None else Clip.objects.all()
    todo = scope if remeasure else scope.filter(loudness_measured_at__isnull=True)
    report = LoudnessBackfill(already=0 if remeasure else scope.filter(loudness_measured_at__isnull=False).count())
    total = todo.count()
    last, done = 0, 0
    while True:
        batch = list(todo.filter(pk__gt=last).order_by("pk")[:batch_size])
        if not batch:
            break
        last = batch[-1].pk
        measured = []
        for clip in batch:
            try:
                loudness = _clip_loudness(clip)
            except AudioError as exc:
                report.failed.append((clip.pk, clip.sha256[:12], exc.message))
                continue
            clip.loudness_lufs, clip.true_peak_dbtp, clip.loudness_measured_at = loudness.lufs, loudness.true_peak_dbtp, timezone.now()
            measured.append(clip)
            if loudness.lufs is None:
                report.unmeasurable += 1
            else:
                report.measured += 1
        with transaction.atomic():
            Clip.objects.bulk_update(measured, ["loudness_lufs", "true_peak_dbtp", "loudness_measured_at"])
        done += len(batch)
        if progress is not None:
            progress(done, total)
    return report


def system_get_or_create(*, name: str, organisation: str = "") -> System:
    system, _ = System.objects.get_or_create(name=name.strip(), defaults={"organisation": organisation})
    return system

