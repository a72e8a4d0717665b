"""The application under a real uvicorn server, in a thread of the test process, configured as every launch path runs it.

In-process, so the test's database (transactional_db), settings overrides and cache are the
server's too; the bytes Django's side reads of each request body are counted (`server.read`).
"""

from __future__ import annotations

import socket
import threading
import time
from contextlib import contextmanager

import uvicorn


class Counted:
    """Around the application: counts the request-body bytes the application pulled from the server."""

    def __init__(self, app):
        self.app, self.read = app, 0

    async def __call__(self, scope, receive, send):
        async def counted():
            message = await receive()
            if message["type"] == "http.request":
                self.read += len(message.get("body", b""))
            return message

        return await self.app(scope, counted, send)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def serving():
    """Yields (port, Counted); the server stops on exit."""
    from auditorium.asgi import application
    from auditorium.serve import uvicorn_options

    app = Counted(application)
    port = free_port()
    config = uvicorn.Config(app, **uvicorn_options(), host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.time() + 30
    while not server.started:
        assert time.time() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.02)
    try:
        yield port, app
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def send_until_answered(port: int, head: bytes, body_chunk: bytes, *, limit: int, timeout: float = 5.0, tries: int = 3) -> tuple[bytes, int, float]:
    """Send the head, then body chunks until the server answers (or `limit` bytes went out); returns (answer, bytes sent, seconds).

    A server that answers and closes with body bytes unread resets the connection, and the reset can
    discard its answer before it is read (TCP): then the request is sent again, up to `tries` times.
    """
    for _ in range(tries):
        answer, sent, seconds = _send_once(port, head, body_chunk, limit=limit, timeout=timeout)
        if answer:
            break
    return answer, sent, seconds


def _send_once(port: int, head: bytes, body_chunk: bytes, *, limit: int, timeout: float) -> tuple[bytes, int, float]:
    conn = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    with conn:
        started = time.monotonic()
        conn.sendall(head)
        conn.setblocking(False)
        sent, answer, pending = 0, b"", memoryview(b"")
        while time.monotonic() - started < timeout:
            try:
                more = conn.recv(65536)
                answer += more
                if answer or not more:
                    break
            except BlockingIOError:
                pass
            except ConnectionResetError:
                break
            if sent < limit:
                if not pending:
                    pending = memoryview(body_chunk)
                try:
                    n = conn.send(pending)
                    sent, pending = sent + n, pending[n:]
                except (BlockingIOError, InterruptedError):
                    time.sleep(0.001)
                except (BrokenPipeError, ConnectionResetError):
                    time.sleep(0.01)
            else:
                time.sleep(0.005)
        conn.setblocking(True)
        conn.settimeout(2)
        try:
            while b"\r\n\r\n" in answer and len(answer) < 4096:
                more = conn.recv(4096)
                if not more:
                    break
                answer += more
        except OSError:
            pass
        return answer, sent, time.monotonic() - started
