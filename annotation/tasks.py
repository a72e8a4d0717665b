"""Celery tasks of the annotation app: building a study's export archive.

The task takes an id and calls one service, which is idempotent: a job redelivered after its
worker died (acks_late) builds the archive again, or does nothing if it was finished.
"""

from __future__ import annotations

from celery import shared_task

from . import jobs
from .services.exports import study_export_build
from .services.prolific import prolific_work


@shared_task(name=jobs.EXPORT_BUILD, acks_late=True, reject_on_worker_lost=True, time_limit=3600, soft_time_limit=3500)
def study_export_build_task(export_id: int) -> str:
    return study_export_build(export_id=export_id).state


@shared_task(name=jobs.PROLIFIC_WORK, acks_late=True, reject_on_worker_lost=True, time_limit=1800, soft_time_limit=1700)
def prolific_work_task(tie_id: int) -> dict:
    return prolific_work(tie_id=tie_id)
