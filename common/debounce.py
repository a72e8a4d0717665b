"""Trailing-edge debounce of a Celery task across processes, on the Django cache.

The first call in a window queues the task with countdown=delay and sets a flag; calls
while the flag is set are covered by that run. The task clears the flag (debounce_clear)
before it works, so a change landing during the run queues the next one: every change
is followed by at least one run.
"""

from __future__ import annotations

from django.core.cache import cache, caches
from django.core.cache.backends.locmem import LocMemCache


def debounced_apply(task, *, key: str, delay: int, args: list | None = None) -> bool:
    """Queue task unless a run is already pending for key; True if this call queued it."""
    seconds = _flag_seconds(delay)
    if seconds and not cache.add(key, 1, timeout=seconds):
        return False
    try:
        task.apply_async(args=args or [], countdown=delay)
    except Exception:
        # Nothing is queued: without the flag, the next change tries again.
        cache.delete(key)
        raise
    return True


def _flag_seconds(delay: int) -> int:
    """How long the flag holds off further calls.

    On a shared cache the flag outlives the countdown, so a slow queue does not let a second run in
    early; the task clears it. A process-local cache (the embedded set-up) is never cleared by a task
    running in the worker's process, so there the flag lapses when the countdown ends: every change
    made while it stood is committed before the run starts, and the next change queues the next run.
    """
    if isinstance(caches["default"], LocMemCache):
        return delay  # 0: no flag at all, every change queues its own run
    return max(delay, 1) * 3


def debounce_clear(key: str) -> None:
    cache.delete(key)
