"""Celery tasks: generation (queue gpu for in-process models, cpu otherwise), leaderboard refits, health checks.

Tasks take ids and call one service; the services are idempotent, so a task
redelivered after a worker died (acks_late) does no double work. Services queue
these tasks by name (arena/jobs.py) and never import this module.
"""

from __future__ import annotations

from celery import shared_task
from django.db import OperationalError

from common.debounce import debounce_clear

from . import history, jobs, release_builds, services
from .consumers import leaderboard_broadcast
from .models import AdapterKind, ArenaSystem


@shared_task(name=jobs.GENERATE_SIDE, bind=True, acks_late=True, time_limit=900, soft_time_limit=840, max_retries=2, default_retry_delay=5)
def battle_generate_side(self, battle_id: int, side: str) -> str:
    try:
        return services.battle_generate_side(battle_id=battle_id, side=side).status
    except OperationalError as exc:  # database briefly unavailable or locked: try again
        raise self.retry(exc=exc)


@shared_task(name=jobs.LEADERBOARD_REFRESH, acks_late=True, time_limit=600, soft_time_limit=570)
def leaderboard_refresh_task() -> int:
    # Cleared before the fit: a vote landing during the fit queues the next one.
    debounce_clear(jobs.LEADERBOARD_PENDING_KEY)
    snapshot = services.leaderboard_refresh()
    leaderboard_broadcast(snapshot.payload)
    return snapshot.pk


@shared_task(name=jobs.SYSTEMS_HEALTH_CHECK, acks_late=True, time_limit=120, soft_time_limit=100)
def systems_health_check() -> dict:
    result = {}
    for system in ArenaSystem.objects.select_related("system").filter(is_active=True).exclude(adapter_kind=AdapterKind.TRANSFORMERS):
        result[system.name] = services.system_health_check(arena_system=system)
    return result


@shared_task(name=jobs.RELEASE_BUILD, acks_late=True, reject_on_worker_lost=True, time_limit=1800, soft_time_limit=1750)
def release_build_task(build_id: int) -> str:
    return release_builds.release_build_execute(build_id=build_id).state


@shared_task(name=jobs.BOARD_SNAPSHOTS_MONTHLY, acks_late=True, time_limit=3600, soft_time_limit=3500)
def board_snapshots_monthly_task() -> list[str]:
    # Idempotent: takes only the months that have ended and have no snapshot yet; schedule it daily.
    return history.board_snapshots_fill()
