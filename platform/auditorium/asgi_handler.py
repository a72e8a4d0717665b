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

Around it, ConnectionWatchASGI notes per request when the server reports the client gone, for the
counted audio streams (common/ranged.py), and the request's stage for the pool trace (auditorium.dbpool).
"""

from __future__ import annotations

import asyncio
import os
import time
from concurrent.futures import ThreadPoolExecutor

from asgiref.sync import ThreadSensitiveContext
from django.core.handlers.asgi import ASGIHandler

from common.ranged import ClientConnection, client_connection

from .dbpool import DEFAULT_THREADS, request_stage


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


class ConnectionWatchASGI:
    """Notes, per HTTP request, when the server reports the client gone (read by the counted file streams)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        state = ClientConnection()
        token = client_connection.set(state)
        stage = {"path": scope.get("path", ""), "response_started": None}
        stage_token = request_stage.set(stage)

        async def watched_receive():
            message = await receive()
            if message["type"] == "http.disconnect":
                state.disconnected = True
            return message

        async def watched_send(message):
            if message["type"] == "http.response.start":
                stage["response_started"] = time.monotonic()
            await send(message)
            if message["type"] == "http.response.body":
                # Once the client is gone the server's send returns at once, and a stream would run to its end in
                # one step without the disconnect ever being read: one turn of the loop lets it be seen first.
                await asyncio.sleep(0)

        try:
            return await self.app(scope, watched_receive, watched_send)
        finally:
            request_stage.reset(stage_token)
            client_connection.reset(token)
