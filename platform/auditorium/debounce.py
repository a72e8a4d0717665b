"""Trailing-edge debounce of a Celery task across processes, on the Django cache.

The first call in a window queues the task with countdown=delay and sets a flag; calls
while the flag is set are covered by that run. The task clears the flag (debounce_clear)
before it works, so a change landing during the run queues the next one: every change
is followed by at least one run.
"""

from __future__ import annotations

from django.core.cache import cache


def debounced_apply(task, *, key: str, delay: int, args: list | None = None) -> bool:
    """Queue task unless a run is already pending for key; True if this call queued it."""
    # The flag outlives the countdown, so a slow queue does not let a second run in early.
    if not cache.add(key, 1, timeout=max(delay, 1) * 3):
        return False
    try:
        task.apply_async(args=args or [], countdown=delay)
    except Exception:
        # Nothing is queued: without the flag, the next change tries again.
        cache.delete(key)
        raise
    return True


def debounce_clear(key: str) -> None:
    cache.delete(key)
