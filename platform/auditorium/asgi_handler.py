"""Django's ASGI handler with a fixed set of threads for its sync code, sized with the database pool.

Django runs each request's sync code (views, middleware, the end-of-response close that returns
the database connection) in a thread of its own, made for the request and ended with it. A
connection still checked out when that thread ends is never returned to the pool: measured
under uvicorn at 50 clients (bench/load.py --pool-trace), all 8 of a process's connections were
held for minutes by requests long answered (7 audio GETs, 1 listening post), and every later
request waited 10 s and failed. Here each request is handed to one of ASGI_THREADS long-lived
threads (the least busy), so a thread's connection is reused by its next request, never lost, and
at most ASGI_THREADS connections are out at once: the pool is sized from the same number
(auditorium.dbpool.pool_max_size).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

from asgiref.sync import ThreadSensitiveContext
from django.core.handlers.asgi import ASGIHandler

from .dbpool import DEFAULT_THREADS


def asgi_threads(environ=os.environ) -> int:
    return max(1, int(environ.get("ASGI_THREADS", "").strip() or DEFAULT_THREADS))


class ThreadedASGIHandler(ASGIHandler):
    def __init__(self, threads: int | None = None):
        super().__init__()
        self.count = threads or asgi_threads()
        self._start()

    def _start(self) -> None:
        # One worker each: thread-sensitive code of one request must run on one thread, in order.
        self.executors = [ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"django-sync-{i}") for i in range(self.count)]
        self.busy = [0] * self.count
        self.pid = os.getpid()

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not {scope['type']}.")
        if self.pid != os.getpid():
            # A fork (gunicorn --preload, a forked test server) copies the executors but not their
            # threads: an executor that had started its thread would queue work that never runs.
            self._start()
        index = min(range(len(self.busy)), key=self.busy.__getitem__)
        self.busy[index] += 1
        try:
            async with ThreadSensitiveContext(executor=self.executors[index]):
                await self.handle(scope, receive, send)
        finally:
            self.busy[index] -= 1
