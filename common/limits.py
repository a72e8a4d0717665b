"""Request-size limits, enforced before the body is read.

Django reads a multipart body as soon as anything touches request.POST, and the CSRF check does
that first: without a limit in front, an anonymous 700 MB upload with a bogus token is read and
spooled to disk before the 403. So:

- every request's declared Content-Length is checked before any body is read: at most
  AUDITORIUM_MAX_REQUEST_BYTES, except on the upload paths (the dataset imports), which take
  AUDITORIUM_MAX_UPLOAD_BYTES plus room for the form fields, and only when the session is a
  signed-in user allowed to import there (a cookie alone is not enough: it is looked up first);
- a body sent without a length (chunked) is counted while it is read: the ASGI wrapper
  stops reading past the cap and answers 413, and the upload handler stops a multipart parse past it;
- in front of the application, the server's own limit (platform/deploy/nginx.conf) refuses it
  before it reaches a worker at all.
"""

from __future__ import annotations

from django.conf import settings
from django.core.files.uploadhandler import FileUploadHandler, StopUpload
from django.http import HttpResponse
from django.utils.module_loading import import_string

# Form fields (CSRF token, study name, flags) sent beside the upload's files.
FORM_ROOM = 1024 * 1024


def small_cap() -> int:
    return int(settings.AUDITORIUM_MAX_REQUEST_BYTES)


def upload_cap() -> int:
    return int(settings.AUDITORIUM_MAX_UPLOAD_BYTES) * 2 + FORM_ROOM  # the zip and the JSONL, each up to the limit


def is_upload_path(path: str) -> bool:
    return any(path.startswith(prefix) for prefix in settings.AUDITORIUM_UPLOAD_PATHS)


def may_upload(user, path: str) -> bool:
    """Whether this user gets the upload cap on this path: signed in, active, and allowed to import there."""
    if not is_upload_path(path) or user is None or not getattr(user, "is_authenticated", False) or not user.is_active:
        return False
    # Who may import is the annotation app's rule; named in the settings so this module imports no app.
    return import_string(settings.AUDITORIUM_UPLOAD_ALLOWED)(user=user, path=path)


def session_may_upload(cookie_header: bytes, path: str) -> bool:
    """The same rule from the raw Cookie header, before Django has read anything: the session is looked up."""
    from http.cookies import SimpleCookie
    from types import SimpleNamespace

    from django.contrib.auth import get_user

    jar = SimpleCookie()
    try:
        jar.load(cookie_header.decode("latin-1"))
    except Exception:
        return False
    morsel = jar.get(settings.SESSION_COOKIE_NAME)
    if morsel is None or not morsel.value:
        return False
    store = import_string(settings.SESSION_ENGINE + ".SessionStore")
    try:
        request = SimpleNamespace(session=store(morsel.value))
        user = get_user(request)  # checks the session's password hash, as AuthenticationMiddleware does
        return may_upload(user, path)
    finally:
        from django.db import connection

        connection.close()  # this runs in a pooled thread of its own: leave no connection behind in it


def declared_length(value) -> int | None:
    try:
        length = int(value)
    except (TypeError, ValueError):
        return None
    return length if length >= 0 else None


def too_large(cap: int) -> HttpResponse:
    response = HttpResponse(
        f"The request body is larger than the limit of {cap:,} bytes; nothing was read.\n", status=413, content_type="text/plain; charset=utf-8"
    )
    response["Connection"] = "close"
    return response


class RequestBodyLimitMiddleware:
    """Refuses an oversized declared body before CSRF, forms or DRF read it (placed after authentication)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        length = declared_length(request.META.get("CONTENT_LENGTH"))
        if length is not None:
            cap = small_cap()
            if may_upload(getattr(request, "user", None), request.path_info):
                cap = upload_cap()
            if length > cap:
                return too_large(cap)
        return self.get_response(request)


class CappedUploadHandler(FileUploadHandler):
    """First upload handler: stops a multipart parse once the body read passes the cap, declared length or not."""

    def __init__(self, request=None):
        super().__init__(request)
        self.received = 0
        self.cap = upload_cap()

    def handle_raw_input(self, input_data, META, content_length, boundary, encoding=None):
        if content_length is not None and content_length > self.cap:
            raise StopUpload(connection_reset=True)
        return None

    def receive_data_chunk(self, raw_data, start):
        self.received += len(raw_data)
        if self.received > self.cap:
            raise StopUpload(connection_reset=True)
        return raw_data

    def file_complete(self, file_size):
        return None


async def _send_413(send, cap: int, what: str) -> None:
    body = f"The request body is larger than the limit of {cap:,} bytes; {what}.\n".encode()
    await send({"type": "http.response.start", "status": 413, "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})


class BodyLimitASGI:
    """In front of Django's ASGI handler, which reads (and spools) the whole body before any middleware runs.

    The cap is decided from the headers alone: the upload paths get the large one only when the
    session cookie names a signed-in user allowed to import there (looked up in the session store).
    A declared length over the cap is answered 413 at once; an undeclared one is counted as it
    arrives, and once it passes the cap Django is told the client left and the answer is 413.
    """

    def __init__(self, app):
        self.app = app

    async def cap_for(self, scope) -> int:
        path = scope.get("path", "")
        if not is_upload_path(path):
            return small_cap()
        cookies = b"; ".join(value for name, value in scope.get("headers", []) if name == b"cookie")
        if settings.SESSION_COOKIE_NAME.encode() + b"=" not in cookies:
            return small_cap()
        from asgiref.sync import sync_to_async

        # Not thread-sensitive: outside Django's per-request context that would mean the process's one shared
        # thread, which a long synchronous job elsewhere (a consumer, another request) could be holding.
        allowed = await sync_to_async(session_may_upload, thread_sensitive=False)(cookies, path)
        return upload_cap() if allowed else small_cap()

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = dict(scope.get("headers", []))
        length = declared_length(headers.get(b"content-length", b"").decode("latin-1") or None)
        if length is not None and length > small_cap() and not is_upload_path(scope.get("path", "")):
            return await _send_413(send, small_cap(), "nothing was read")
        # The session is looked up only when the large cap could matter: a body past the small cap, or one of unknown length.
        fits = (length is not None and length <= small_cap()) or (length is None and b"transfer-encoding" not in headers)
        cap = small_cap() if fits else await self.cap_for(scope)
        if length is not None and length > cap:
            return await _send_413(send, cap, "nothing was read")
        received, cut, started = 0, False, False

        async def counted_receive():
            nonlocal received, cut
            if cut:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > cap:
                    cut = True
                    return {"type": "http.disconnect"}
            return message

        async def watched_send(message):
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        await self.app(scope, counted_receive, watched_send)
        if cut and not started:
            # Django stops at the "disconnect" without answering; the client is still there and gets told why.
            await _send_413(send, cap, "the rest was not read")
