"""Request caps under a real uvicorn server: decided from the headers and the session, before the body is read."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.factories import UserFactory
from tests.live_uvicorn import send_until_answered, serving

pytestmark = pytest.mark.django_db(transaction=True)

IMPORT = "/admin/annotation/study/import-pairs/"
HUGE = 700 * 1024 * 1024
CHUNK = b"x" * 65536


def head(path: str, *, cookie: str = "", length: int | None = None, extra: str = "") -> bytes:
    lines = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", "Content-Type: multipart/form-data; boundary=zzz"]
    lines.append(f"Content-Length: {length}" if length is not None else "Transfer-Encoding: chunked")
    if cookie:
        lines.append(f"Cookie: {cookie}")
    return ("\r\n".join(lines) + "\r\n" + extra + "\r\n").encode()


def chunked(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def status(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1])


@pytest.mark.engine
@pytest.mark.parametrize("path", [IMPORT, "/manage/import/"])
def test_a_huge_declared_upload_with_a_bogus_session_cookie_is_refused_at_once_unread(path):
    with serving() as (port, app):
        answer, sent, seconds = send_until_answered(port, head(path, cookie="sessionid=bogus", length=HUGE), CHUNK, limit=HUGE)
    print(f"{path}: 700 MB declared, bogus cookie: {status(answer)} after {seconds * 1000:.1f} ms; {app.read:,} body bytes read by the application, {sent:,} sent by the client")
    assert status(answer) == 413 and b"nothing was read" in answer
    assert seconds < 1.0 and app.read < 1024 * 1024


@pytest.mark.engine
def test_a_huge_chunked_upload_with_a_bogus_session_cookie_is_cut_off_at_the_general_cap_with_413(settings):
    settings.AUDITORIUM_MAX_REQUEST_BYTES = 200_000
    with serving() as (port, app):
        answer, _, seconds = send_until_answered(port, head(IMPORT, cookie="sessionid=bogus"), chunked(CHUNK), limit=HUGE)
    assert status(answer) == 413
    assert seconds < 1.0 and app.read <= 200_000 + 256 * 1024  # the server hands the body over in reads of up to a few hundred KB


@pytest.mark.engine
def test_a_chunked_body_past_the_request_cap_gets_413_not_500(settings):
    settings.AUDITORIUM_MAX_REQUEST_BYTES = 200_000
    with serving() as (port, app):
        for path in ("/api/scoring/runs/", "/accounts/login/"):
            answer, _, _ = send_until_answered(port, head(path).replace(b"multipart/form-data; boundary=zzz", b"application/json"), chunked(CHUNK), limit=HUGE)
            assert status(answer) == 413, answer[:200]
    assert app.read < 1024 * 1024


def _session_cookie(user) -> str:
    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}"


@pytest.mark.engine
def test_a_signed_in_user_not_allowed_to_import_gets_the_small_cap(settings):
    settings.AUDITORIUM_MAX_REQUEST_BYTES = 200_000
    annotator = UserFactory(username="plain-annotator", is_staff=True)  # staff without the import permissions
    with serving() as (port, app):
        answer, _, seconds = send_until_answered(port, head(IMPORT, cookie=_session_cookie(annotator), length=HUGE), CHUNK, limit=HUGE)
    assert status(answer) == 413 and seconds < 1.0 and app.read < 1024 * 1024


@pytest.mark.engine
def test_an_importer_may_send_past_the_small_cap(settings):
    settings.AUDITORIUM_MAX_REQUEST_BYTES = 200_000
    admin = UserFactory(username="importing-admin", is_staff=True, is_superuser=True)
    body = b"--zzz\r\nContent-Disposition: form-data; name=\"study\"\r\n\r\nx\r\n--zzz\r\nContent-Disposition: form-data; name=\"pad\"\r\n\r\n" + b"p" * 300_000 + b"\r\n--zzz--\r\n"
    with serving() as (port, app):
        answer, sent, _ = send_until_answered(port, head(IMPORT, cookie=_session_cookie(admin), length=len(body)) + body, b"", limit=0)
    assert status(answer) != 413 and status(answer) < 500
    assert app.read == len(body)
