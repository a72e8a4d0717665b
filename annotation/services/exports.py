"""A study's dataset export from the browser: asked for on the study page, built by a worker, downloaded.

The archive is the one `dataset_export_archive` writes for the API and the command line; building
it in a worker keeps a large study's copy-and-zip off the web request, and the row's step and
counts let the page show how far it got.
"""

from __future__ import annotations

import logging
import shutil
import time
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from common.errors import ServiceError

from .. import jobs
from ..dataset import DatasetError, dataset_export_archive
from ..models import Study, StudyExport
from ..selectors import study_exportable_by

logger = logging.getLogger(__name__)

# The page polls about twice a second; writing progress more often than this only costs the database.
PROGRESS_EVERY_S = 0.25


def export_path(export: StudyExport) -> Path:
    """Where a finished archive lives: under MEDIA_ROOT, which no URL serves; the download view checks access."""
    return Path(settings.MEDIA_ROOT) / "exports" / f"{export.public_id}.zip"


def study_export_record(*, study: Study, user, options: dict) -> StudyExport:
    """Record who took the study's data out through the API, and with which options (the archive streams back to them; none is kept)."""
    if not study_exportable_by(study=study, user=user):
        raise ServiceError(f"Only the owner of “{study.name}” or an administrator can export it.", code="forbidden", status=403)
    now = timezone.now()
    return StudyExport.objects.create(
        study=study, requested_by=user, options={**options, "via": "api"}, state=StudyExport.State.DONE, step="streamed", message="Downloaded through the API.", finished_at=now
    )


def study_export_request(
    *, study: Study, user, include_unvoted: bool = False, include_seeded: bool = False, balanced_test: int | None = None, seed: int | None = None
) -> StudyExport:
    """Record an export of `study` with these options and queue its build.

    A balanced test split needs its seed (the draw must be repeatable) and rewrites the pairs' split,
    as the command line's --balanced-test does. The person's earlier finished exports of this study
    are removed: one archive each is enough, and they can be large.
    """
    if not study_exportable_by(study=study, user=user):
        raise ServiceError(f"Only the owner of “{study.name}” or an administrator can export it.", code="forbidden", status=403)
    if balanced_test is not None and seed is None:
        raise ServiceError("A balanced test split needs a seed, so the draw can be repeated.", code="bad_balance", extra={"errors": {"seed": ["Give a seed."]}})
    if balanced_test is not None and balanced_test <= 0:
        raise ServiceError("The balanced test split needs a positive number of pairs.", code="bad_balance", extra={"errors": {"balanced_test": ["Give a positive number."]}})
    options = {"include_unvoted": bool(include_unvoted), "include_seeded": bool(include_seeded), "balanced_test": balanced_test, "seed": seed}
    with transaction.atomic():
        earlier = list(StudyExport.objects.filter(study=study, requested_by=user, state__in=[StudyExport.State.DONE, StudyExport.State.FAILED]).exclude(options__has_key="via"))
        export = StudyExport.objects.create(study=study, requested_by=user, options=options)
        for old in earlier:
            path = export_path(old)
            transaction.on_commit(lambda path=path: path.unlink(missing_ok=True))
        StudyExport.objects.filter(pk__in=[old.pk for old in earlier]).delete()
        jobs.export_build_on_commit(export_id=export.pk)
    return export


def study_export_build(*, export_id: int) -> StudyExport:
    """Build the archive of one requested export; a finished one is left as it is."""
    export = StudyExport.objects.select_related("study").get(pk=export_id)
    if export.state == StudyExport.State.DONE and export_path(export).exists():
        return export
    StudyExport.objects.filter(pk=export.pk).update(state=StudyExport.State.RUNNING, step="collecting votes", done=0, total=0, message="")
    last = [0.0]

    def progress(step: str, done: int, total: int) -> None:
        now = time.monotonic()
        if now - last[0] >= PROGRESS_EVERY_S or done == 0:
            last[0] = now
            StudyExport.objects.filter(pk=export.pk).update(step=step, done=done, total=total)

    options = export.options or {}
    try:
        archive = dataset_export_archive(
            studies=[export.study],
            include_unvoted=bool(options.get("include_unvoted")),
            include_seeded=bool(options.get("include_seeded")),
            balanced_test=options.get("balanced_test"),
            seed=options.get("seed"),
            progress=progress,
        )
    except (DatasetError, ServiceError) as exc:
        StudyExport.objects.filter(pk=export.pk).update(state=StudyExport.State.FAILED, message=exc.message, finished_at=timezone.now())
        export.refresh_from_db()
        return export
    except Exception:
        logger.exception("export %s of study %s failed", export.public_id, export.study.name)
        StudyExport.objects.filter(pk=export.pk).update(
            state=StudyExport.State.FAILED, message="The export failed on the server; the error is in the worker's log.", finished_at=timezone.now()
        )
        raise
    target = export_path(export)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".part")
    with archive, open(partial, "wb") as out:
        shutil.copyfileobj(archive, out, 1 << 20)
    # Renamed into place only when complete: a download never sees half an archive.
    partial.replace(target)
    StudyExport.objects.filter(pk=export.pk).update(
        state=StudyExport.State.DONE, step="ready", done=1, total=1, size_bytes=target.stat().st_size, finished_at=timezone.now()
    )
    export.refresh_from_db()
    return export
