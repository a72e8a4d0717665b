"""Rate limits on the Django cache, rate strings and salted hashes: the arena's limits and the sign-in throttle.

Windows are fixed. cache.add + cache.incr are atomic on Redis and per-process on LocMem, so
concurrent requests cannot both slip under a limit on the same backend. On Redis, the limits
of one request are counted by one server-side script (one round trip instead of two per
limit: an arena vote has three limits), with the same rules: in order, each counted,
stopping at the first one over.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import math
import time

from django.conf import settings
from django.core.cache import cache, caches

from .cache import RedisCache

log = logging.getLogger(__name__)


def parse_rate(value: str) -> tuple[int, int]:
    """'20/60' -> (20 requests, 60 seconds)."""
    count, _, seconds = str(value).partition("/")
    return int(count), int(seconds or 60)


def salted_hash(label: str, value: str, *, length: int = 32) -> str:
    """HMAC of value under the project salt; the label keeps hashes of different things unlinkable."""
    salt = str(getattr(settings, "AUDITORIUM_HASH_SALT", settings.SECRET_KEY)).encode()
    return hmac.new(salt, f"{label}:{value}".encode(), hashlib.sha256).hexdigest()[:length]


def window_start(now: float, window: int) -> int:
    """The start of the fixed window of `window` seconds that holds `now`."""
    return int(now // window) * window


def hit(*, scope: str, ident: str, rate: str, now: float | None = None) -> int:
    """Count one request; return 0 if allowed, else the seconds until the window resets (Retry-After)."""
    return hit_many([(scope, ident, rate)], now=now)[1]


def hit_many(limits: list[tuple[str, str, str]], *, now: float | None = None) -> tuple[int, int]:
    """Count one request against each (scope, ident, rate) in order, stopping at the first one over.

    Returns (index of the limit over, seconds until its window resets), or (-1, 0) if all allow it.
    """
    now = time.time() if now is None else now
    windows = []
    for position, (scope, ident, rate) in enumerate(limits):
        limit, window = parse_rate(rate)
        if limit > 0:
            start = window_start(now, window)
            windows.append((position, f"rl:{scope}:{ident}:{start}", limit, window, start))
    if not windows:
        return -1, 0
    try:
        over = _count_many([(key, limit, window) for _, key, limit, window, _ in windows])
    except Exception:
        # The cache (Redis) is down or restarting: let the request through rather than
        # lose votes; the daily cap and the one-vote-per-battle constraint still hold in the database.
        log.warning("rate limit skipped: cache unavailable", extra={"scope": limits[windows[0][0]][0]}, exc_info=True)
        return -1, 0
    if over is None:
        return -1, 0
    position, _, _, window, start = windows[over]
    return position, max(1, math.ceil(start + window - now))


# KEYS: the counters; ARGV: limit and expiry of each. Returns the 1-based index of the first over, or 0.
_COUNT_SCRIPT = """
for i, key in ipairs(KEYS) do
  local count = redis.call('INCR', key)
  if count == 1 then redis.call('EXPIRE', key, ARGV[2 * i]) end
  if count > tonumber(ARGV[2 * i - 1]) then return i end
end
return 0
"""
_script = None


def _count_many(counters: list[tuple[str, int, int]]) -> int | None:
    """Index of the first counter over its limit after counting this request, or None."""
    backend = caches["default"]
    if isinstance(backend, RedisCache):
        global _script
        client = backend._cache.get_client(write=True)
        if _script is None:
            # Registered once per process; it runs on whichever client is passed (it knows its hash).
            _script = client.register_script(_COUNT_SCRIPT)
        # The key outlives its window slightly, so a late count never restarts at 1.
        args = [value for _, limit, window in counters for value in (limit, window + 5)]
        over = int(_script(keys=[backend.make_and_validate_key(key) for key, _, _ in counters], args=args, client=client))
        return over - 1 if over else None
    for index, (key, limit, window) in enumerate(counters):
        if window_count(key, window) > limit:
            return index
    return None


def window_count(key: str, window: int) -> int:
    """Count one event in the counter `key` of a fixed window of `window` seconds; the count after it."""
    # The key outlives its window slightly, so a late incr never restarts a count at 1.
    if cache.add(key, 1, timeout=window + 5):
        return 1
    try:
        return cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.add(key, 1, timeout=window + 5)
        return 1
