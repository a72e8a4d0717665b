"""The default launch's uvicorn closes clients that send their headers or body too slowly."""

from __future__ import annotations

import socket
import time

import pytest

from tests.live_uvicorn import serving

pytestmark = [pytest.mark.engine, pytest.mark.django_db(transaction=True)]

HEADER_TIMEOUT = 1.0
BODY_TIMEOUT = 1.5


@pytest.fixture(params=["httptools", "h11"])
def server(request, monkeypatch):
    # Each of uvicorn's parsers has its own subclass with the deadlines: both are checked.
    monkeypatch.setenv("AUDITORIUM_HTTP", request.param)
    monkeypatch.setenv("AUDITORIUM_HEADER_TIMEOUT", str(HEADER_TIMEOUT))
    monkeypatch.setenv("AUDITORIUM_BODY_TIMEOUT", str(BODY_TIMEOUT))
    with serving() as (port, _app):
        yield port


def _read_until_closed(conn: socket.socket, limit: float) -> tuple[bytes, float]:
    started = time.monotonic()
    conn.settimeout(limit)
    data = b""
    while True:
        try:
            chunk = conn.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        data += chunk
    return data, time.monotonic() - started


def test_a_client_stalling_in_its_headers_is_closed_within_the_timeout(server):
    with socket.create_connection(("127.0.0.1", server), timeout=10) as conn:
        conn.sendall(b"GET /healthz/ HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        answer, seconds = _read_until_closed(conn, limit=10)
    assert answer == b""
    assert HEADER_TIMEOUT * 0.8 <= seconds < HEADER_TIMEOUT + 2


def test_a_slow_body_is_cut_off_with_408(server):
    with socket.create_connection(("127.0.0.1", server), timeout=10) as conn:
        conn.sendall(b"POST /accounts/login/ HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\n")
        started = time.monotonic()
        answer = b""
        conn.settimeout(0.2)
        # A byte every 0.2 s: each arrives well inside any idle timeout, the whole body never in time.
        while time.monotonic() - started < BODY_TIMEOUT + 5:
            try:
                conn.sendall(b"a")
            except (BrokenPipeError, ConnectionResetError):
                break
            try:
                chunk = conn.recv(65536)
            except socket.timeout:
                continue
            except ConnectionResetError:
                break
            if not chunk:
                break
            answer += chunk
        seconds = time.monotonic() - started
    assert seconds < BODY_TIMEOUT + 3
    assert answer.startswith(b"HTTP/1.1 408"), answer[:100]


def test_a_normal_request_still_works_and_keeps_alive(server):
    with socket.create_connection(("127.0.0.1", server), timeout=10) as conn:
        for _ in range(2):
            conn.sendall(b"GET /healthz/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = conn.recv(65536)
                assert chunk, "closed before answering"
                head += chunk
            assert head.startswith(b"HTTP/1.1 200"), head[:100]
            length = int(next(line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")))
            body = head.split(b"\r\n\r\n", 1)[1]
            while len(body) < length:
                body += conn.recv(65536)
    # A body sent at once is read as usual.
    with socket.create_connection(("127.0.0.1", server), timeout=10) as conn:
        conn.sendall(b"POST /healthz/ HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc")
        answer, _ = _read_until_closed(conn, limit=10)
    assert answer.startswith(b"HTTP/1.1 ") and b" 408 " not in answer.split(b"\r\n")[0]


def test_a_client_stalling_in_its_second_request_is_closed_within_the_timeout(server):
    # The second request's deadline is its own: the first one's answer re-arms it.
    with socket.create_connection(("127.0.0.1", server), timeout=10) as conn:
        conn.sendall(b"GET /healthz/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        head = b""
        while b"\r\n\r\n" not in head:
            head += conn.recv(65536)
        assert head.startswith(b"HTTP/1.1 200")
        conn.sendall(b"GET /healthz/ HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        started = time.monotonic()
        rest, _ = _read_until_closed(conn, limit=10)
        seconds = time.monotonic() - started
    assert b"HTTP/1.1" not in rest
    assert HEADER_TIMEOUT * 0.8 <= seconds < HEADER_TIMEOUT + 2


def test_the_launch_uses_the_protocol_with_configured_timeouts(monkeypatch):
    from auditorium.serve import uvicorn_options

    monkeypatch.delenv("AUDITORIUM_HTTP", raising=False)
    assert uvicorn_options()["http"].__name__ == "SlowClientHttpToolsProtocol"
    monkeypatch.setenv("AUDITORIUM_HTTP", "h11")
    assert uvicorn_options()["http"].__name__ == "SlowClientH11Protocol"
    monkeypatch.setenv("AUDITORIUM_HTTP", "curl")
    with pytest.raises(ValueError):
        uvicorn_options()
    monkeypatch.delenv("AUDITORIUM_HTTP")
    monkeypatch.setenv("AUDITORIUM_HEADER_TIMEOUT", "7")
    monkeypatch.delenv("AUDITORIUM_BODY_TIMEOUT", raising=False)
    options = uvicorn_options()
    assert options["http"].header_timeout == 7.0 and options["http"].body_timeout == 30.0
    assert options["limit_concurrency"] == 1000
    monkeypatch.setenv("AUDITORIUM_BODY_TIMEOUT", "0")
    with pytest.raises(ValueError):
        uvicorn_options()
