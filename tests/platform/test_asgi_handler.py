"""The ASGI handler's fixed threads survive a fork (gunicorn --preload, a forked test server)."""

from __future__ import annotations

import asyncio
import os
import signal
import time

import pytest

from auditorium.asgi_handler import ThreadedASGIHandler


async def _get(handler, path: str) -> int:
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
        "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
        "headers": [(b"host", b"localhost")], "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80),
    }
    sent = []

    given = []

    async def receive():
        if given:  # after the body, the client stays connected until the response is done
            await asyncio.Event().wait()
        given.append(True)
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    await asyncio.wait_for(handler(scope, receive, send), timeout=20)
    return next(m["status"] for m in sent if m["type"] == "http.response.start")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_process_answers_on_threads_of_its_own():
    handler = ThreadedASGIHandler(threads=1)
    # The parent has used its thread: a fork copies the executor, which believes its thread exists.
    assert asyncio.run(_get(handler, "/healthz/")) == 200
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through its exit code
        try:
            code = 0 if asyncio.run(_get(handler, "/healthz/")) == 200 else 1
        except BaseException:
            code = 2
        os._exit(code)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            assert os.waitstatus_to_exitcode(status) == 0, "the forked process could not answer"
            return
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    pytest.fail("the forked process's request never ran (its executor had no thread)")
