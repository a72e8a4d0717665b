"""Redis cache clients shared by every cache instance of a process.

Under ASGI Django builds a fresh cache backend per request context, and Django's Redis
client keeps its pool on that instance: every request then opened a new TCP connection
to Redis (handshake, CLIENT SETINFO, a package-metadata lookup), which was a fifth of a
web worker's CPU under load. One pool per (URL, options) per process keeps connections.
redis-py pools notice a fork and reconnect in the child, so pre-forked workers are safe.

Django's client also builds a new `redis.Redis` object for every command (each one fills
a table of some two hundred response callbacks): 5% of a worker's CPU on the arena vote,
which makes eight cache calls. `RedisCache` keeps one client object per pool instead; a
`redis.Redis` over a pool is safe to share between threads (each command borrows a
connection from the pool).
"""

from __future__ import annotations

import logging
import threading

import redis
from django.core.cache import cache
from django.core.cache.backends.redis import RedisCache as DjangoRedisCache
from django.core.cache.backends.redis import RedisCacheClient


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


class _SharedClientRedisCacheClient(RedisCacheClient):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._clients: dict[int, redis.Redis] = {}

    def get_client(self, key=None, *, write=False):
        pool = self._get_connection_pool(write)
        client = self._clients.get(id(pool))
        if client is None:
            # A race here builds two equal clients over the same pool; either one serves.
            client = self._clients[id(pool)] = self._client(connection_pool=pool)
        return client


class RedisCache(DjangoRedisCache):
    """Django's Redis cache, with its client (pools and client objects) shared per process."""

    _clients: dict[tuple, RedisCacheClient] = {}
    _lock = threading.Lock()

    def __init__(self, server, params):
        super().__init__(server, params)
        self._class = _SharedClientRedisCacheClient
        self._client_key = (tuple(self._servers), repr(sorted(self._options.items())))

    @property
    def _cache(self):
        key = self._client_key
        client = self._clients.get(key)
        if client is None:
            with self._lock:
                client = self._clients.get(key)
                if client is None:
                    client = self._clients[key] = self._class(self._servers, **self._options)
        return client


# --- Read-through caches that never fail a request ------------------------------------
# The caches of rows (signed-in users, study settings, consent, arena visitors) only save
# database reads: with Redis down or restarting the request reads the database instead,
# and a write's invalidation that could not reach Redis leaves nothing behind worth more
# than the entry's timeout (a restarted Redis comes back empty).

log = logging.getLogger(__name__)


def cache_get(key: str):
    try:
        return cache.get(key)
    except Exception:
        log.warning("cache read skipped: cache unavailable", extra={"key": key.split(":", 2)[0]}, exc_info=True)
        return None


def cache_get_many(*keys: str) -> dict:
    try:
        return cache.get_many(list(keys))
    except Exception:
        log.warning("cache read skipped: cache unavailable", exc_info=True)
        return {}


def cache_set_many(values: dict, timeout: int) -> None:
    try:
        cache.set_many(values, timeout)
    except Exception:
        log.warning("cache write skipped: cache unavailable", exc_info=True)


def cache_forget(*keys: str) -> None:
    try:
        cache.delete_many(list(keys))
    except Exception:
        log.warning("cache invalidation skipped: cache unavailable", exc_info=True)
