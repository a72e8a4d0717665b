"""Fixed-window rate limits on the Django cache (LocMem embedded, Redis when REDIS_URL is set).

cache.add + cache.incr are atomic on Redis and per-process on LocMem, so
concurrent requests cannot both slip under the limit on the same backend.
"""

from __future__ import annotations

import logging
import math
import time

from django.core.cache import cache

from .conf import parse_rate

log = logging.getLogger(__name__)


def hit(*, scope: str, ident: str, rate: str, now: float | None = None) -> int:
    """Count one request; return 0 if allowed, else the seconds until the window resets (Retry-After)."""
    limit, window = parse_rate(rate)
    if limit <= 0:
        return 0
    now = time.time() if now is None else now
    start = int(now // window) * window
    key = f"arena:rl:{scope}:{ident}:{start}"
    try:
        count = _count(key, window)
    except Exception:
        # The cache (Redis) is down or restarting: let the request through rather than
        # lose votes; the daily cap and the one-vote-per-battle constraint still hold in the database.
        log.warning("rate limit skipped: cache unavailable", extra={"scope": scope}, exc_info=True)
        return 0
    if count > limit:
        return max(1, math.ceil(start + window - now))
    return 0


def _count(key: str, window: int) -> int:
    # The key outlives its window slightly, so a late incr never restarts a count at 1.
    if cache.add(key, 1, timeout=window + 5):
        return 1
    try:
        return cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.add(key, 1, timeout=window + 5)
        return 1
