"""Celery tasks for benchmarks: take ids, call one service, safe to run twice."""

from __future__ import annotations

from celery import shared_task

from . import runners


@shared_task(bind=True, name=runners.COLLECT_TASK, max_retries=8640, acks_late=True, ignore_result=True)
def judge_collect_task(self, submission_id: int) -> None:
    # Polls the scoring run every 10 s (up to a day) rather than hooking into the run's own code.
    if not runners.judge_collect(submission_id=submission_id):
        raise self.retry(countdown=10)


@shared_task(name=runners.HTTP_TASK, acks_late=True, reject_on_worker_lost=True, soft_time_limit=3500, time_limit=3600)
def http_run_task(submission_id: int) -> dict:
    submission = runners.http_run(submission_id=submission_id)
    return {"submission": submission.pk, "timeouts": submission.n_timeouts, "errors": submission.n_errors}
