"""Celery tasks for scoring. Each takes ids, calls one service, and is safe to run twice.

acks_late + reject_on_worker_lost (settings) return a job to the queue when its worker dies
mid-run; the services' uniqueness rules make the second run a no-op if the first had finished.
Routing: a run's jobs go to its judge's queue (`cpu` for signal judges, `gpu` for learned ones).
A run's pairs travel in chunks (pairs_score_task): one broker round trip, commit and progress push
per chunk instead of per pair; pair_score_task stays for single pairs and jobs already queued.
Services queue these by name (scoring.queueing), so nothing here is imported by them.
"""

from __future__ import annotations

import logging
import os
import threading

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded
from celery.signals import worker_process_init

from . import broadcast, queueing, services
from .reward import services as reward_services

logger = logging.getLogger(__name__)
# The warm-up's lines keep the worker's logger name, where operators look for them.
worker_logger = logging.getLogger("auditorium.worker")

COMMON = {
    "acks_late": True,
    "reject_on_worker_lost": True,
    "soft_time_limit": 900,
    "time_limit": 1000,
}


@shared_task(bind=True, name=queueing.RUN_START, max_retries=5, default_retry_delay=5, **COMMON)
def run_start(self, run_id: int) -> dict:
    return services.run_dispatch(run_id=run_id)


@shared_task(bind=True, name=queueing.CLIPS_PREWARM, max_retries=2, **COMMON)
def clips_prewarm_task(self, run_id: int, condition_id: int, clip_ids: list[int]) -> int:
    try:
        return services.clips_prewarm(run_id=run_id, condition_id=condition_id, clip_ids=clip_ids)
    except SoftTimeLimitExceeded:
        # The pair jobs compute what is still missing; a slow batch is not an error.
        return 0


@shared_task(bind=True, name=queueing.PAIR_SCORE, max_retries=3, **COMMON)
def pair_score_task(self, run_id: int, pair_id: int) -> dict:
    try:
        verdict = services.pair_score(run_id=run_id, pair_id=pair_id)
    except SoftTimeLimitExceeded:
        verdict = services.pair_fail(run_id=run_id, pair_id=pair_id, error="time limit exceeded")
    except Exception as exc:
        # Transient trouble (database, GPU memory): back off 10 s, 20 s, 40 s; then record the failure.
        if self.request.retries >= self.max_retries:
            logger.exception("pair %s of run %s failed after retries", pair_id, run_id)
            verdict = services.pair_fail(run_id=run_id, pair_id=pair_id, error=f"{type(exc).__name__}: {exc}")
        else:
            raise self.retry(exc=exc, countdown=10 * 2**self.request.retries) from exc
    return {"verdict": verdict.pk, "status": verdict.status}


@shared_task(bind=True, name=queueing.PAIRS_SCORE, max_retries=3, **COMMON)
def pairs_score_task(self, run_id: int, pair_ids: list[int]) -> dict:
    """A chunk of a run's pairs in one job (services.pairs_score); a redelivered chunk skips the pairs already scored."""
    try:
        verdicts = services.pairs_score(run_id=run_id, pair_ids=pair_ids)
    except SoftTimeLimitExceeded:
        verdicts = [services.pair_fail(run_id=run_id, pair_id=p, error="time limit exceeded") for p in pair_ids]
    except Exception as exc:
        if self.request.retries >= self.max_retries:
            logger.exception("pairs %s of run %s failed after retries", pair_ids, run_id)
            verdicts = [services.pair_fail(run_id=run_id, pair_id=p, error=f"{type(exc).__name__}: {exc}") for p in pair_ids]
        else:
            raise self.retry(exc=exc, countdown=10 * 2**self.request.retries) from exc
    return {"verdicts": len(verdicts)}


@shared_task(name=queueing.REPORT_CHANGED, acks_late=True, time_limit=60, soft_time_limit=50, ignore_result=True)
def report_changed_task(study_id: int, reason: str) -> None:
    broadcast.report_changed_push(study_id=study_id, reason=reason)


@shared_task(name=queueing.BEST_OF_N, acks_late=True, reject_on_worker_lost=True, soft_time_limit=3500, time_limit=3600)
def best_of_n_task(experiment_id: int) -> dict:
    """Queued on the ranker's queue: generation and ranking load models there."""
    from .best_of_n import best_of_n_execute

    experiment = best_of_n_execute(experiment_id=experiment_id)
    return {"experiment": experiment.pk, "state": experiment.state}


@shared_task(name=queueing.REWARD_TRAIN, acks_late=True, reject_on_worker_lost=True, soft_time_limit=3500, time_limit=3600)
def reward_train_task(training_id: int) -> dict:
    """Queued on `gpu` (training uses CUDA when the worker has it, else the CPU)."""
    run = reward_services.training_execute(training_id=training_id)
    return {"training": run.pk, "state": run.state, "judge": run.judge.key if run.judge_id else None}


@shared_task(name=queueing.SELECTION_REFRESH, acks_late=True, time_limit=600, soft_time_limit=550, ignore_result=True)
def selection_refresh_task(study_id: int, reason: str = "") -> dict:
    return reward_services.selection_refresh_by_id(study_id=study_id, reason=reason)


# --- Worker start: the judges of AUDITORIUM_WARM_JUDGES ---------------------------------------


def warm_judge_keys() -> list[str]:
    return [key.strip() for key in os.environ.get("AUDITORIUM_WARM_JUDGES", "").split(",") if key.strip()]


def _warm(keys: list[str]) -> None:
    from django.db import connection

    try:
        for key, result in services.judges_warm(keys=keys).items():
            if result == "ok":
                worker_logger.info("judge %s loaded and warmed in worker process %s", key, os.getpid())
            else:
                worker_logger.error("judge %s refused at worker start: %s", key, result)
    except Exception:  # a failed warm-up must not take the worker down; the first job loads instead
        worker_logger.exception("warm-up of judges %s failed", keys)
    finally:
        connection.close()


@worker_process_init.connect
def _warm_configured_judges(**_kwargs) -> threading.Thread | None:
    """Load the configured judges in the process that will run the jobs (a prefork child or the solo worker).

    Runs in a thread: prefork children must report ready within seconds, and loading a 7B model
    takes longer. A job for a judge still loading waits on the model cache's lock instead of
    loading a second copy. Never in the parent before forking: CUDA does not survive a fork.
    """
    keys = warm_judge_keys()
    if not keys:
        return None
    thread = threading.Thread(target=_warm, args=(keys,), name="judge-warm-up", daemon=True)
    thread.start()
    return thread
