"""The annotation app's Celery task names, and queueing those tasks by name.

Services queue work through here and tasks.py registers its tasks under these names, so services
never import tasks (tasks -> services -> jobs). AnnotationConfig imports tasks.py at start-up, so
every process (web, worker, eager tests) knows the names.
"""

from __future__ import annotations

from django.db import transaction

from auditorium.celery import task

EXPORT_BUILD = "annotation.tasks.study_export_build_task"


def export_build_on_commit(*, export_id: int) -> None:
    """Queue the archive's build once its row is committed; exports are CPU and disk work."""
    transaction.on_commit(lambda: task(EXPORT_BUILD).apply_async(args=[export_id], queue="cpu"))


PROLIFIC_WORK = "annotation.tasks.prolific_work_task"


def prolific_work_on_commit(*, tie_id: int) -> None:
    """Queue sending a Prolific tie's pending decisions and bonuses once the rows that ask for them are committed."""
    transaction.on_commit(lambda: task(PROLIFIC_WORK).apply_async(args=[tie_id], queue="cpu"))
