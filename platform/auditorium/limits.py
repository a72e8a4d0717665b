"""Request-size limits, enforced before the body is read.

Django reads a multipart body as soon as anything touches request.POST, and the CSRF check does
that first: without a limit in front, an anonymous 700 MB upload with a bogus token is read and
spooled to disk before the 403. So:

- every request's declared Content-Length is checked before any body is read: at most
  AUDITORIUM_MAX_REQUEST_BYTES, except on the upload paths (the admin dataset import), which
  take AUDITORIUM_MAX_UPLOAD_BYTES plus room for the form fields, and only from staff;
- a body sent without a length (chunked) is counted while it is read: the ASGI wrapper
  stops reading past the cap, and the upload handler stops a multipart parse past it;
- in front of the application, the server's own limit (platform/deploy/nginx.conf) refuses it
  before it reaches a worker at all.
"""

from __future__ import annotations

from django.conf import settings
from django.core.files.uploadhandler import FileUploadHandler, StopUpload
from django.http import HttpResponse

# Form fields (CSRF token, study name, flags) sent beside the upload's files.
FORM_ROOM = 1024 * 1024


def small_cap() -> int:
    return int(settings.AUDITORIUM_MAX_REQUEST_BYTES)


def upload_cap() -> int:
    return int(settings.AUDITORIUM_MAX_UPLOAD_BYTES) * 2 + FORM_ROOM  # the zip and the JSONL, each up to the limit


def is_upload_path(path: str) -> bool:
    return any(path.startswith(prefix) for prefix in settings.AUDITORIUM_UPLOAD_PATHS)


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
            if is_upload_path(request.path_info) and getattr(request, "user", None) is not None and request.user.is_staff:
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


class BodyLimitASGI:
    """In front of Django's ASGI handler, which reads (and spools) the whole body before any middleware runs.

    A declared length over the cap is answered 413 at once; an undeclared one is counted as it
    arrives and the request is cut off (as a client disconnect) once it passes the cap. Without a
    session cookie nobody can be staff, so the upload paths then get the small cap too.
    """

    def __init__(self, app):
        self.app = app

    def cap_for(self, scope) -> int:
        if not is_upload_path(scope.get("path", "")):
            return small_cap()
        cookies = b"".join(value for name, value in scope.get("headers", []) if name == b"cookie")
        if settings.SESSION_COOKIE_NAME.encode() + b"=" not in cookies:
            return small_cap()
        return upload_cap()

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        cap = self.cap_for(scope)
        headers = dict(scope.get("headers", []))
        length = declared_length(headers.get(b"content-length", b"").decode("latin-1") or None)
        if length is not None and length > cap:
            body = f"The request body is larger than the limit of {cap:,} bytes; nothing was read.\n".encode()
            await send({"type": "http.response.start", "status": 413, "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"connection", b"close")]})
            await send({"type": "http.response.body", "body": body})
            return
        received = 0

        async def counted_receive():
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > cap:
                    return {"type": "http.disconnect"}
            return message

        return await self.app(scope, counted_receive, send)
