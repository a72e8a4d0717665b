"""The arena's Celery task names, and queueing a battle's generation by name.

Services queue tasks by these names (auditorium.celery.task) and tasks.py registers its tasks under them, so
services never import tasks and imports run one way: tasks -> services -> jobs. ArenaConfig
imports tasks.py at start-up, so every process (web, worker, eager tests) knows the names.
"""

from __future__ import annotations

from django.db import transaction

from auditorium.celery import task

GENERATE_SIDE = "arena.tasks.battle_generate_side"
LEADERBOARD_REFRESH = "arena.tasks.leaderboard_refresh_task"
SYSTEMS_HEALTH_CHECK = "arena.tasks.systems_health_check"
RELEASE_BUILD = "arena.tasks.release_build_task"
BOARD_SNAPSHOTS_MONTHLY = "arena.tasks.board_snapshots_monthly_task"

# Set while a leaderboard refit is queued (services.leaderboard_queue_refresh); the refit clears it before it fits.
LEADERBOARD_PENDING_KEY = "arena:leaderboard:pending"


def generate_side_on_commit(*, battle_id: int, side: str, queue: str) -> None:
    """Queue one side's generation once the battle row is committed, on the adapter's queue."""
    transaction.on_commit(lambda: task(GENERATE_SIDE).apply_async(args=[battle_id, side], queue=queue))
