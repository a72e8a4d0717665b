"""Failure throttles on the Django cache: wrong passwords, wrong resume codes.

A caller names its scopes: each a rate ("count/seconds"; a count of 0 turns it off), a key stem
(a salted hash, never the name or address itself) and how a refusal names it ("this network").
Failures are counted in each scope; while any scope has reached its limit, the caller refuses the
attempt, the right answer too (that is what stops guessing), until that scope's window ends.
Windows are fixed and counted as the arena's rate limits are (common.rates). When the cache is
down nothing is refused, and the log says so.

Addresses are counted by network: an IPv4 address alone, an IPv6 address by its /64, which is
what one subscriber or host is handed (counting single IPv6 addresses would give one machine 2**64
fresh budgets).
"""

from __future__ import annotations

import ipaddress
import logging
import math
import time
from dataclasses import dataclass

from django.core.cache import cache

from .rates import parse_rate, window_count, window_start

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Scope:
    rate: str
    stem: str
    what: str


def address_network(address: str) -> str:
    """The network a client address is counted under: the IPv4 address, or the IPv6 address's /64."""
    try:
        ip = ipaddress.ip_address((address or "").strip().split("%", 1)[0])
    except ValueError:
        return (address or "").strip()
    if ip.version == 6 and ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    if ip.version == 6:
        return str(ipaddress.IPv6Network((int(ip) >> 64 << 64, 64)))
    return str(ip)


def _windows(scopes: list[Scope], now: float):
    """(cache key, limit, window seconds, window end, what) for each scope in force."""
    for scope in scopes:
        limit, window = parse_rate(scope.rate)
        if limit > 0:
            start = window_start(now, window)
            yield f"fail:{scope.stem}:{start}", limit, window, start + window, scope.what


def locked(scopes: list[Scope], *, now: float | None = None) -> tuple[str, int] | None:
    """(what is paused, seconds until it opens) for the first scope at its limit, else None."""
    now = time.time() if now is None else now
    for key, limit, _, ends, what in _windows(scopes, now):
        try:
            failures = cache.get(key, 0)
        except Exception:
            log.warning("failure throttle skipped: cache unavailable", exc_info=True)
            return None
        if failures >= limit:
            return what, max(1, math.ceil(ends - now))
    return None


def record_failure(scopes: list[Scope], *, now: float | None = None) -> None:
    now = time.time() if now is None else now
    for key, _, window, _, _ in _windows(scopes, now):
        try:
            window_count(key, window)
        except Exception:
            log.warning("failure throttle skipped: cache unavailable", exc_info=True)


def clear(scopes: list[Scope], *, now: float | None = None) -> None:
    """Forget the failures counted in these scopes' current windows."""
    now = time.time() if now is None else now
    keys = [key for key, *_ in _windows(scopes, now)]
    if keys:
        try:
            cache.delete_many(keys)
        except Exception:
            log.warning("failure throttle reset skipped: cache unavailable", exc_info=True)


def minutes(seconds: int) -> str:
    """A pause in whole minutes, rounded up, for a message: "1 minute", "11 minutes"."""
    count = max(1, math.ceil(seconds / 60))
    return f"{count} minute{'s' if count != 1 else ''}"
