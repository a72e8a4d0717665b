"""Health endpoints: /healthz/ (process up), /readyz/ (database, cache, broker), /healthz/workers/ (Celery queues answer).

The public gets the status only (200 or 503, {"ok": ...}): which database runs, which workers
exist and what an exception said help an attacker more than a load balancer. Staff get the
details here; operators get them from `manage.py check_deployment`.
"""

from __future__ import annotations

import time

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.http import JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe


def _timed(check):
    start = time.perf_counter()
    try:
        detail = check()
        ok = True
    except Exception as exc:  # a health check reports, never raises
        detail, ok = f"{type(exc).__name__}: {exc}", False
    return {"ok": ok, "ms": round((time.perf_counter() - start) * 1000, 1), **({"detail": detail} if detail else {})}


def check_database():
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return f"{connection.vendor}"


def check_cache():
    cache.set("healthz", "1", 5)
    if cache.get("healthz") != "1":
        raise RuntimeError("cache did not return what was stored")
    return None


def check_broker():
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return "tasks run in-process (no broker)"
    from auditorium.celery import app

    with app.connection_for_write() as conn:
        conn.ensure_connection(max_retries=1, timeout=2)
    return None


QUEUES = ("cpu", "gpu")


def check_workers(timeout: float = 2.0) -> dict:
    """Which queues have a worker answering.

    Brokers that broadcast (Redis, AMQP) are asked with Celery's active_queues control command. The
    others (the demo's SQLite broker: kombu's virtual transports have no fanout) never deliver a
    control command, so there a ping task goes through each queue and back through the result backend.
    """
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return {"mode": "in-process", "queues": dict.fromkeys(QUEUES, True)}
    from auditorium.celery import app

    with app.connection_for_read() as conn:
        broadcasts = "fanout" in conn.transport.implements.exchange_type
    if broadcasts:
        inspector = app.control.inspect(timeout=timeout)
        active = inspector.active_queues() or {}
        served = {queue["name"] for queues in active.values() for queue in queues}
        return {"mode": "broker", "workers": sorted(active), "queues": {name: name in served for name in QUEUES}}
    # Unclaimed pings expire, so a queue without a worker does not pile them up.
    sent = {name: app.send_task("auditorium.ping", queue=name, expires=timeout * 5) for name in QUEUES}
    deadline = time.monotonic() + timeout
    answered: dict[str, str | None] = {}
    for name, result in sent.items():
        try:
            answered[name] = result.get(timeout=max(0.05, deadline - time.monotonic()), interval=0.05, propagate=False)
        except Exception:  # no answer in time
            answered[name] = None
        finally:
            result.forget()
    return {"mode": "round trip", "workers": sorted({w for w in answered.values() if w}), "queues": {name: bool(who) for name, who in answered.items()}}


WORKERS_KEY = "healthz:workers"


def workers_state() -> dict:
    """check_workers, kept in the cache for AUDITORIUM_HEALTH_WORKERS_SECONDS: one check at a time whoever asks, so
    callers (anonymous ones included) cost a cache read, not a two-second broker round trip each."""
    state = cache.get(WORKERS_KEY)
    if state is not None:
        return state
    seconds = int(getattr(settings, "AUDITORIUM_HEALTH_WORKERS_SECONDS", 15))
    if not cache.add(WORKERS_KEY + ":lock", 1, timeout=10):
        # Another request is checking: wait for its answer rather than start a second check.
        for _ in range(60):
            time.sleep(0.05)
            state = cache.get(WORKERS_KEY)
            if state is not None:
                return state
        return {"error": "the worker check is still running"}
    try:
        try:
            state = check_workers()
        except Exception as exc:
            state = {"error": f"{type(exc).__name__}: {exc}"}
        cache.set(WORKERS_KEY, state, seconds)
        return state
    finally:
        cache.delete(WORKERS_KEY + ":lock")


@never_cache
@require_safe
def healthz(request):
    return JsonResponse({"ok": True})


def _may_see_details(request) -> bool:
    user = getattr(request, "user", None)
    return bool(user is not None and user.is_authenticated and user.is_staff)


def _answer(request, ok: bool, details: dict) -> JsonResponse:
    body = {"ok": ok, **details} if _may_see_details(request) else {"ok": ok}
    return JsonResponse(body, status=200 if ok else 503)


@never_cache
@require_safe
def readyz(request):
    checks = {"database": _timed(check_database), "cache": _timed(check_cache), "broker": _timed(check_broker)}
    ok = all(item["ok"] for item in checks.values())
    return _answer(request, ok, {"checks": checks})


@never_cache
@require_safe
def workers(request):
    result = workers_state()
    if "error" in result:
        return _answer(request, False, {"detail": result["error"]})
    return _answer(request, result["queues"].get("cpu", False), result)
