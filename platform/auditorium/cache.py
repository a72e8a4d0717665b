"""Redis connection pool shared by every cache instance of a process.

Under ASGI Django builds a fresh cache backend per request context, and Django's Redis
client keeps its pool on that instance: every request then opened a new TCP connection
to Redis (handshake, CLIENT SETINFO, a package-metadata lookup), which was a fifth of a
web worker's CPU under load. One pool per (URL, options) per process keeps connections.
redis-py pools notice a fork and reconnect in the child, so pre-forked workers are safe.
"""

from __future__ import annotations

import threading

import redis


class SharedConnectionPool(redis.ConnectionPool):
    _shared: dict[tuple, redis.ConnectionPool] = {}
    _lock = threading.Lock()

    @classmethod
    def from_url(cls, url: str, **kwargs):
        key = (url, tuple(sorted((name, repr(value)) for name, value in kwargs.items())))
        with cls._lock:
            pool = cls._shared.get(key)
            if pool is None:
                pool = cls._shared[key] = super().from_url(url, **kwargs)
        return pool
