"""The database connection pool: its size per process, what a request does when it cannot get a connection, and its figures.

- **Size.** A process needs as many connections as it runs database work at once: the server's
  threads (gthread: --threads; uvicorn: the thread pool Django's sync code runs in, ASGI_THREADS).
  `pool_max_size` derives DB_POOL_MAX_SIZE from the same settings every launch path reads, so the
  pool and the server's concurrency cannot drift apart (platform/deploy/README.md).
- **A wait that runs out is a 503, never a 500.** `pool_timeout_response` is the one rule: the
  exception (raised from a view, a middleware or DRF) is recognised by its psycopg_pool type
  anywhere in its cause chain and answered 503 with Retry-After, and counted.
- **Figures.** `pool_figures()`: requests that had to wait, milliseconds waited, timeouts, 503s
  answered. With AUDITORIUM_POOL_REPORT set, each process writes them to stderr when it exits
  (bench/load.py reads them). With AUDITORIUM_POOL_TRACE set, each checkout is also attributed to
  the request that made it and to the response's stage when it was returned (a diagnostic: it
  costs a lock per checkout).
"""

from __future__ import annotations

import atexit
import contextvars
import json
import logging
import os
import sys
import threading
import time
from collections import defaultdict

log = logging.getLogger(__name__)

RETRY_AFTER_SECONDS = 2
_answered = {"503": 0}
_lock = threading.Lock()


def pool_max_size(environ=os.environ) -> int:
    """Connections per process: DB_POOL_MAX_SIZE if set, else the process's concurrent database work.

    gunicorn gthread runs --threads requests at once (GUNICORN_THREADS / WEB_THREADS); under uvicorn,
    Django runs sync code one request per thread, bounded by ASGI_THREADS (auditorium.asgi sets the
    executor from it). Two spare connections cover the end-of-response notes and Celery's eager tasks.
    """
    explicit = environ.get("DB_POOL_MAX_SIZE", "").strip()
    if explicit:
        return max(1, int(explicit))
    threads = environ.get("WEB_THREADS", "").strip() or environ.get("ASGI_THREADS", "").strip() or str(DEFAULT_THREADS)
    return max(1, int(threads)) + 2


# Sync work runs in this many threads per uvicorn process (ASGI_THREADS), and the pool is sized from it.
DEFAULT_THREADS = 8


def threads_from_gunicorn(environ=os.environ, argv=None) -> None:
    """Under gunicorn's WSGI workers, WEB_THREADS from its --threads (command line or GUNICORN_CMD_ARGS), unless set."""
    if environ.get("WEB_THREADS", "").strip():
        return
    words = [*(argv if argv is not None else sys.argv), *environ.get("GUNICORN_CMD_ARGS", "").split()]
    if not any("gunicorn" in word for word in words[:2]) and "GUNICORN_CMD_ARGS" not in environ:
        return
    threads = 1  # gunicorn's default: one request at a time per process
    for index, word in enumerate(words):
        if word == "--threads" and index + 1 < len(words):
            threads = words[index + 1]
        elif word.startswith("--threads="):
            threads = word.split("=", 1)[1]
    if str(threads).isdigit() and int(threads) > 0:
        environ["WEB_THREADS"] = str(threads)


def is_pool_timeout(exc: BaseException | None) -> bool:
    """Whether the error, or anything it was raised from, is the pool giving up waiting for a connection."""
    try:
        from psycopg_pool import PoolTimeout
    except ImportError:  # SQLite-only installs have no pool
        return False
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, PoolTimeout):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def pool_timeout_response(request, exc: BaseException | None):
    """503 with Retry-After for a pool timeout (counted), else None: the one rule every error path asks."""
    if not is_pool_timeout(exc):
        return None
    from django.http import JsonResponse

    with _lock:
        _answered["503"] += 1
    log.warning("database busy: answered 503 to %s %s (%s)", getattr(request, "method", "?"), getattr(request, "path", "?"), exc)
    response = JsonResponse(
        {"detail": "The server is busy. Please try again in a moment.", "code": "busy"}, status=503
    )
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


class PoolTimeoutMiddleware:
    """Views (and DRF, which re-raises what it does not handle): a pool timeout answers 503, not 500."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        return pool_timeout_response(request, exception)


def server_error(request):
    """handler500: errors raised outside a view (middleware, session, sign-in) pass through the same rule."""
    response = pool_timeout_response(request, sys.exc_info()[1])
    if response is not None:
        return response
    from django.views.defaults import server_error as default

    return default(request)


def _pools():
    from django.db import connections

    for alias in connections:
        pools = getattr(type(connections[alias]), "_connection_pools", None) or {}
        if alias in pools:
            yield alias, pools[alias]


def pool_figures() -> dict:
    """This process's pool figures: waits, milliseconds waited, timeouts (psycopg_pool's counts) and 503s answered."""
    figures = {"pid": os.getpid(), "answered_503": _answered["503"]}
    for alias, pool in _pools():
        stats = pool.get_stats()
        figures[alias] = {
            "max_size": pool.max_size,
            "requests": stats.get("requests_num", 0),
            "waited": stats.get("requests_queued", 0),
            "wait_ms": stats.get("requests_wait_ms", 0),
            "timeouts": stats.get("requests_errors", 0),
        }
    if _trace is not None:
        figures["holders"] = _trace.summary()
    return figures


# --- Diagnostic: who holds the connections --------------------------------------------------

request_stage: contextvars.ContextVar[dict | None] = contextvars.ContextVar("auditorium_request_stage", default=None)


class _Trace:
    """Per request path kind: checkouts, time held, and how much of it after the response had started going out."""

    def __init__(self):
        self.lock = threading.Lock()
        self.rows = defaultdict(lambda: {"checkouts": 0, "held_ms": 0.0, "held_after_start_ms": 0.0, "released_after_start": 0, "max_held_ms": 0.0})
        self.open: dict[int, tuple[float, dict | None]] = {}
        self.max_out = 0

    def got(self, conn) -> None:
        with self.lock:
            self.open[id(conn)] = (time.monotonic(), request_stage.get())
            self.max_out = max(self.max_out, len(self.open))

    def put(self, conn) -> None:
        now = time.monotonic()
        with self.lock:
            started, stage = self.open.pop(id(conn), (now, None))
            key = _path_kind(stage["path"]) if stage else "(no request)"
            row = self.rows[key]
            row["checkouts"] += 1
            held = (now - started) * 1000
            row["held_ms"] += held
            row["max_held_ms"] = max(row["max_held_ms"], held)
            if stage and stage.get("response_started") is not None:
                row["released_after_start"] += 1
                row["held_after_start_ms"] += (now - max(started, stage["response_started"])) * 1000

    def summary(self) -> dict:
        with self.lock:
            rows = {key: {k: round(v, 1) for k, v in row.items()} for key, row in self.rows.items()}
            now = time.monotonic()
            still_out = [
                {"path": _path_kind(stage["path"]) if stage else "(no request)", "held_ms": round((now - started) * 1000), "response_started": bool(stage and stage["response_started"])}
                for started, stage in self.open.values()
            ]
            return {"max_checked_out": self.max_out, "by_path": rows, "still_out": still_out[:20]}


def _path_kind(path: str) -> str:
    parts = [part for part in path.split("/") if part]
    return "/" + "/".join("*" if any(c.isdigit() for c in part) and len(part) > 3 or part.isdigit() else part for part in parts) + "/"


_trace: _Trace | None = None


def _install_trace() -> None:
    global _trace
    from psycopg_pool import ConnectionPool

    _trace = _Trace()
    getconn, putconn = ConnectionPool.getconn, ConnectionPool.putconn

    def traced_getconn(self, *args, **kwargs):
        conn = getconn(self, *args, **kwargs)
        _trace.got(conn)
        return conn

    def traced_putconn(self, conn):
        _trace.put(conn)
        return putconn(self, conn)

    ConnectionPool.getconn, ConnectionPool.putconn = traced_getconn, traced_putconn


_reported = {"done": False}


def report_if_asked() -> None:
    """The figures on stderr, once per process, if AUDITORIUM_POOL_REPORT (or _TRACE) is set. The ASGI lifespan's
    shutdown calls it: uvicorn ends on the signal it caught, which skips atexit."""
    if _reported["done"] or not (os.environ.get("AUDITORIUM_POOL_REPORT") or os.environ.get("AUDITORIUM_POOL_TRACE")):
        return
    _reported["done"] = True
    try:
        print("auditorium-pool " + json.dumps(pool_figures()), file=sys.stderr, flush=True)
    except Exception:  # the process is ending: a report that cannot be made is not worth a traceback
        pass


def install_reporting() -> None:
    """Called once per process by the ASGI and WSGI entry points."""
    if os.environ.get("AUDITORIUM_POOL_TRACE"):
        _install_trace()
    atexit.register(report_if_asked)
