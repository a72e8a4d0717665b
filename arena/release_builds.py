"""Writes for the release page: a build of the public battle log (arena/release.py), zipped, made by a worker.

One build at a time: a build is minutes of copying audio, and two at once would only race for the disk.
The zip is written under a temporary name and renamed when complete, so a download never gets half a file.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
import zipfile
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from common.errors import ServiceError
from common.roles import is_researcher

from . import jobs
from .models import ReleaseBuild
from .release import release_export

logger = logging.getLogger(__name__)

FOLDER = "arena-releases"
# Progress is saved at most this often (and on every stage change): the page polls, it need not see every clip.
SAVE_SECONDS = 0.5
# A build with no progress for this long has lost its worker (the task's own time limit is shorter).
STALE_AFTER = timedelta(hours=1)
ACTIVE = (ReleaseBuild.State.PENDING, ReleaseBuild.State.RUNNING)


def release_folder() -> Path:
    return Path(settings.MEDIA_ROOT) / FOLDER


def release_visible(user) -> bool:
    """Who may see the release page and download: researchers always, everyone when ARENA_RELEASE_PUBLIC is on."""
    return is_researcher(user) or bool(settings.ARENA_RELEASE_PUBLIC)


def release_build_create(*, user, audio: bool = True, parquet: bool = True, include_seeded: bool = False) -> ReleaseBuild:
    """Queue a build once the row is committed. Researchers only; refused while another build is under way."""
    if not is_researcher(user):
        raise ServiceError("Only researchers can build a release.", code="forbidden", status=403)
    with transaction.atomic():
        _stale_fail()
        running = ReleaseBuild.objects.filter(state__in=ACTIVE).first()
        if running is not None:
            raise ServiceError(f"Release #{running.pk} is still being built; wait for it to finish.", code="build_running", status=409)
        build = ReleaseBuild.objects.create(audio=bool(audio), parquet=bool(parquet), include_seeded=bool(include_seeded), created_by=user)
        transaction.on_commit(lambda: release_build_queue(build_id=build.pk))
    return build


def release_build_queue(*, build_id: int) -> None:
    jobs.task(jobs.RELEASE_BUILD).delay(build_id)


def _stale_fail() -> None:
    cutoff = timezone.now() - STALE_AFTER
    ReleaseBuild.objects.filter(state__in=ACTIVE, updated_at__lt=cutoff).update(
        state=ReleaseBuild.State.FAILED, error="No progress for an hour: the worker stopped. Build again.", finished_at=timezone.now()
    )


class _Progress:
    def __init__(self, build_id: int):
        self.build_id, self.stage, self.last = build_id, None, 0.0

    def __call__(self, stage: str, done: int, total: int) -> None:
        now = time.monotonic()
        if stage == self.stage and now - self.last < SAVE_SECONDS and done < total:
            return
        self.stage, self.last = stage, now
        ReleaseBuild.objects.filter(pk=self.build_id).update(stage=stage, done=done, total=total, updated_at=timezone.now())


def _archive(source: Path, target: Path, progress: _Progress) -> None:
    """Zip the release folder: text deflated, audio stored (it gains little and costs the most time)."""
    files = sorted(p for p in source.rglob("*") if p.is_file())
    partial = target.with_name(f".{target.name}.partial")
    with zipfile.ZipFile(partial, "w") as archive:
        for number, path in enumerate(files, start=1):
            method = zipfile.ZIP_STORED if path.parent.name == "audio" else zipfile.ZIP_DEFLATED
            archive.write(path, arcname=str(Path(source.name) / path.relative_to(source)), compress_type=method)
            progress("archive", number, len(files))
    os.replace(partial, target)


def release_build_execute(*, build_id: int) -> ReleaseBuild:
    """Build and zip the release. Idempotent: a finished build whose file exists is returned as is; a rerun starts over."""
    build = ReleaseBuild.objects.get(pk=build_id)
    folder = release_folder()
    if build.state == ReleaseBuild.State.DONE and build.file_name and (folder / build.file_name).exists():
        return build
    name = f"arena-battles-{build.created_at:%Y%m%d}-{build.pk}"
    work = folder / f".build-{build.pk}"
    ReleaseBuild.objects.filter(pk=build.pk).update(state=ReleaseBuild.State.RUNNING, stage="", done=0, total=0, error="", updated_at=timezone.now())
    progress = _Progress(build.pk)
    try:
        shutil.rmtree(work, ignore_errors=True)
        counts = release_export(out_dir=work / name, audio=build.audio, parquet=build.parquet, include_seeded=build.include_seeded, progress=progress)
        _archive(work / name, folder / f"{name}.zip", progress)
    except Exception as exc:
        logger.exception("release build %s failed", build.pk)
        ReleaseBuild.objects.filter(pk=build.pk).update(
            state=ReleaseBuild.State.FAILED, error=f"{type(exc).__name__}: {exc}"[:5000], finished_at=timezone.now(), updated_at=timezone.now()
        )
        return ReleaseBuild.objects.get(pk=build.pk)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    ReleaseBuild.objects.filter(pk=build.pk).update(
        state=ReleaseBuild.State.DONE,
        stage="done",
        battles=counts["battles"],
        audio_files=counts["audio_files"],
        size_bytes=(folder / f"{name}.zip").stat().st_size,
        file_name=f"{name}.zip",
        finished_at=timezone.now(),
        updated_at=timezone.now(),
    )
    return ReleaseBuild.objects.get(pk=build.pk)
