"""Oversized bodies are refused from their declared length, before CSRF, forms or DRF read a byte."""

from __future__ import annotations

import asyncio
import io

import pytest
from django.test import Client, override_settings

from common.limits import BodyLimitASGI, CappedUploadHandler, upload_cap
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

IMPORT = "/admin/annotation/study/import-pairs/"
HUGE = 700 * 1024 * 1024


class Tripwire(io.RawIOBase):
    """A request body that records every read; it never holds the bytes it claims."""

    def __init__(self):
        self.read_calls = 0

    def readable(self):
        return True

    def read(self, size=-1):
        self.read_calls += 1
        return b"x" * (size if size and size > 0 else 65536)

    def readline(self, size=-1):
        return self.read(size)


def post_declared(client: Client, path: str, length: int, body: Tripwire, content_type="multipart/form-data; boundary=zzz"):
    return client.generic("POST", path, b"", content_type=content_type, CONTENT_LENGTH=str(length), **{"wsgi.input": body})


def test_an_anonymous_huge_upload_with_a_bogus_csrf_token_is_refused_unread():
    body = Tripwire()
    client = Client(enforce_csrf_checks=True)
    client.cookies["csrftoken"] = "bogus" * 6
    response = post_declared(client, IMPORT, HUGE, body)
    assert response.status_code == 413 and b"nothing was read" in response.content
    assert body.read_calls == 0


@pytest.mark.parametrize("path", ["/api/scoring/runs/", "/arena/api/battles/", "/accounts/login/", IMPORT])
def test_every_path_refuses_a_declared_body_over_the_request_cap(path, settings):
    body = Tripwire()
    response = post_declared(Client(), path, settings.AUDITORIUM_MAX_REQUEST_BYTES + 1, body, content_type="application/json")
    assert response.status_code == 413 and body.read_calls == 0


def test_staff_may_send_an_import_up_to_the_upload_cap_but_not_past_it(settings):
    settings.AUDITORIUM_MAX_UPLOAD_BYTES = 64 * 1024 * 1024
    staff = UserFactory(username="importer", is_staff=True, is_superuser=True)
    client = Client()
    client.force_login(staff)
    refused = Tripwire()
    assert post_declared(client, IMPORT, upload_cap() + 1, refused).status_code == 413
    assert refused.read_calls == 0
    # Under the cap the request goes on to the form (which then reads it); the size rule is not what answers.
    response = client.post(IMPORT, {"study": "x"})
    assert response.status_code == 400 and b"This field is required" in response.content


def test_the_upload_handler_stops_a_multipart_parse_past_the_cap(settings):
    settings.AUDITORIUM_MAX_UPLOAD_BYTES = 1000
    handler = CappedUploadHandler()
    from django.core.files.uploadhandler import StopUpload

    handler.receive_data_chunk(b"x" * 1000, 0)
    with pytest.raises(StopUpload):
        for _ in range(upload_cap() // 1000 + 2):
            handler.receive_data_chunk(b"x" * 1000, 0)
    with pytest.raises(StopUpload):
        CappedUploadHandler().handle_raw_input(None, {}, upload_cap() + 1, b"zzz")


def _asgi(scope_headers, chunks, path="/api/scoring/runs/"):
    called, sent = [], []

    async def app(scope, receive, send):
        called.append(True)
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                sent.append("disconnect")
                return
            if not message.get("more_body"):
                sent.append("complete")
                return

    queue = [{"type": "http.request", "body": chunk, "more_body": i < len(chunks) - 1} for i, chunk in enumerate(chunks)]

    async def receive():
        return queue.pop(0)

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "path": path, "headers": scope_headers}
    asyncio.run(BodyLimitASGI(app)(scope, receive, send))
    return called, sent


def test_the_asgi_front_answers_413_from_the_declared_length_without_calling_django(settings):
    called, sent = _asgi([(b"content-length", str(HUGE).encode())], [b""])
    assert not called and sent[0]["status"] == 413


def test_the_asgi_front_cuts_off_an_undeclared_body_past_the_cap(settings):
    settings.AUDITORIUM_MAX_REQUEST_BYTES = 10_000
    called, sent = _asgi([], [b"x" * 4000] * 10)
    assert called and sent[0] == "disconnect" and sent[1]["status"] == 413
    called, sent = _asgi([], [b"x" * 4000] * 2)
    assert sent == ["complete"]


def test_without_a_signed_in_importer_the_import_path_gets_the_small_cap(settings):
    settings.AUDITORIUM_MAX_REQUEST_BYTES = 10_000
    length = [(b"content-length", b"20000")]
    called, sent = _asgi(length, [b"x" * 20000], path=IMPORT)
    assert not called and sent[0]["status"] == 413
    # A cookie alone is not a session: it is looked up before the large cap is given.
    called, sent = _asgi([*length, (b"cookie", b"sessionid=abc")], [b"x" * 20000], path=IMPORT)
    assert not called and sent[0]["status"] == 413


def test_the_deploy_files_set_request_limits():
    from pathlib import Path

    deploy = Path(__file__).resolve().parents[2] / "platform" / "deploy"
    assert "client_max_body_size 10m;" in (deploy / "nginx.conf").read_text()
    for name in ("Procfile", "docker-compose.yml", "systemd/auditorium-web.service"):
        assert "--limit-request-line" in (deploy / name).read_text(), name


@override_settings(AUDITORIUM_MAX_REQUEST_BYTES=5 * 1024 * 1024)
def test_ordinary_requests_pass():
    assert Client().get("/healthz/").status_code == 200


@pytest.mark.engine
@pytest.mark.slow
def test_the_production_server_refuses_a_huge_declared_body_from_its_headers(tmp_path):
    """gunicorn's uvicorn workers (and the demo) in front of the app: 413 after the headers, the body never read."""
    import os
    import socket
    import subprocess
    import sys
    import time
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "auditorium.test_settings", "PYTHONPATH": f"{root / 'platform'}:{root}", "SQLITE_PATH": str(tmp_path / "db.sqlite3")}
    server = subprocess.Popen(
        [sys.executable, "-m", "auditorium.serve", "--host", "127.0.0.1", "--port", str(port)],
        cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.time() + 60
        while True:
            try:
                conn = socket.create_connection(("127.0.0.1", port), timeout=1)
                break
            except OSError:
                assert time.time() < deadline and server.poll() is None, "the server did not start"
                time.sleep(0.3)
        with conn:
            conn.settimeout(10)
            started = time.monotonic()
            conn.sendall(
                f"POST {IMPORT} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: multipart/form-data; boundary=x\r\n"
                f"Content-Length: {HUGE}\r\nCookie: csrftoken=bogusbogusbogusbogusbogusbogus12\r\n\r\n".encode()
            )
            conn.sendall(b"x" * 65536)  # the first of 700 MB that never follow
            status_line = conn.recv(200).split(b"\r\n")[0]
            assert status_line == b"HTTP/1.1 413 Request Entity Too Large", status_line
            assert time.monotonic() - started < 5
    finally:
        server.terminate()
        server.wait(timeout=20)
