"""Serving audio files with HTTP Range support (206, Content-Range, 416), ETag and 304.

Browsers seek in <audio> and fetch() by Range requests; without 206 answers
seeking silently restarts from zero in Chrome and fails in Safari.

What a response sent is known only at its end: `on_sent(first, last, total)` is called then with
the bytes handed to the server while the client was still connected (a chunk counts once the
server's send of it returned and the next one was asked for). Under ASGI the connection's state
comes from the wiring's connection watch (auditorium/asgi_handler.py), which notes the client's
disconnect as the server reports it; the server drops a send after that silently, so a client
that closes after the headers is credited with nothing sent after the close was seen.
"""

from __future__ import annotations

import contextvars
import logging
import mimetypes
import os
import re

from asgiref.sync import sync_to_async
from django.http import HttpRequest, HttpResponse, HttpResponseNotModified, StreamingHttpResponse
from django.utils.http import quote_etag

from . import audio_proof
from .deferred import deferred_rows

log = logging.getLogger(__name__)

_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")
CONTENT_TYPES = {".wav": "audio/wav", ".flac": "audio/flac", ".mp3": "audio/mpeg", ".ogg": "audio/ogg", ".opus": "audio/ogg"}


class ClientConnection:
    """Whether the server has reported the client of this request gone (set by the ASGI connection watch)."""

    disconnected = False


# Set per HTTP request by the wiring's ASGI connection watch (auditorium/asgi_handler.py); None elsewhere (WSGI, tests).
client_connection: contextvars.ContextVar[ClientConnection | None] = contextvars.ContextVar("auditorium_connection", default=None)


class _Window:
    """Bytes [start, start+length) of a file, counting those the server took while the client was connected."""

    def __init__(self, handle, start: int, length: int, *, on_sent=None, total: int = 0, chunk: int = 64 * 1024):
        self.handle, self.remaining, self.chunk = handle, length, chunk
        self.start, self.total, self.on_sent, self.sent = start, total, on_sent, 0
        handle.seek(start)

    def _read(self) -> bytes:
        data = self.handle.read(min(self.chunk, self.remaining)) if self.remaining > 0 else b""
        self.remaining -= len(data)
        return data

    def _took(self, size: int, connection: ClientConnection | None) -> None:
        if connection is None or not connection.disconnected:
            self.sent += size

    def _report(self) -> None:
        callback, self.on_sent = self.on_sent, None
        if callback is not None and self.sent > 0:
            try:
                callback(self.start, self.start + self.sent - 1, self.total)
            except Exception:  # the response is over: a failed note must not turn it into an error
                log.exception("recording the bytes sent failed")

    def __iter__(self):
        try:
            while data := self._read():
                yield data
                self._took(len(data), None)
        finally:
            self.close()

    def close(self) -> None:
        """Runs at the end of the response, however it ended (Django closes the response): the note is made here at the latest."""
        self.handle.close()
        self._report()


class _AsyncWindow(_Window):
    """The same, as an async stream for ASGI (not iterable synchronously, so Django does not read it whole first)."""

    __iter__ = None

    async def __aiter__(self):
        connection = client_connection.get()
        try:
            while data := self._read():
                yield data
                self._took(len(data), connection)
        finally:
            if deferred_rows.enabled:
                self.close()  # the note is queued, not written (common/deferred.py): no thread hop needed
            else:
                await sync_to_async(self.close, thread_sensitive=True)()


def _release_database() -> None:
    from django.db import connections

    for connection in connections.all(initialized_only=True):
        if not connection.in_atomic_block:
            connection.close_if_unusable_or_obsolete()


def parse_range(header: str, size: int) -> tuple[int, int] | None:
    """(start, end inclusive) for a single satisfiable byte range; None if unsatisfiable.

    Raises ValueError for a header that is not a single byte range (served whole, per RFC 9110).
    """
    match = _RANGE.match(header.strip())
    if not match or (not match.group(1) and not match.group(2)):
        raise ValueError(header)
    first, last = match.group(1), match.group(2)
    if first:
        start = int(first)
        end = min(int(last), size - 1) if last else size - 1
        if last and int(last) < start:
            raise ValueError(header)
    else:  # suffix range: the last N bytes
        suffix = int(last)
        if suffix == 0:
            return None
        start, end = max(size - suffix, 0), size - 1
    if start >= size:
        return None
    return start, end


def ranged_file_response(
    request: HttpRequest, path: str, *, etag: str, content_type: str | None = None, on_sent=None, proof_at=None, ranges: bool = True
) -> HttpResponse:
    """The file, whole or the requested range; `on_sent(first byte, last byte, file size)` runs at the end of a GET with what was sent.

    With `proof_at` (the time the fetch is recorded at), a GET's response carries the challenge a client answers to
    show it received the bytes (common/audio_proof.py). `ranges=False` always sends the whole file: for a route that
    keeps no record of what it sent, so a Range fetch of just the challenged bytes cannot answer a challenge."""
    size = os.path.getsize(path)
    content_type = content_type or CONTENT_TYPES.get(os.path.splitext(path)[1].lower()) or mimetypes.guess_type(path)[0] or "application/octet-stream"
    quoted = quote_etag(etag)
    if request.headers.get("If-None-Match") in (quoted, f"W/{quoted}", "*"):
        response = HttpResponseNotModified()
        response["ETag"] = quoted
        return response

    header = request.headers.get("Range") if ranges else None
    byte_range = None
    if header and request.headers.get("If-Range", quoted) == quoted:
        try:
            byte_range = parse_range(header, size)
        except ValueError:
            header = None  # malformed: ignore it and send the whole file
        else:
            if byte_range is None:
                response = HttpResponse(status=416)
                response["Content-Range"] = f"bytes */{size}"
                response["Accept-Ranges"] = "bytes"
                return response
    else:
        header = None

    # The body may take seconds to go out: the database connection the checks used goes back to the pool first.
    _release_database()
    handle = open(path, "rb")
    start, end = byte_range if byte_range is not None else (0, size - 1)
    # Under ASGI the body is an async stream (a sync one would be read whole before the first send).
    window_class = _AsyncWindow if getattr(request, "scope", None) is not None else _Window
    window = window_class(handle, start, end - start + 1, on_sent=on_sent if request.method == "GET" else None, total=size)
    response = StreamingHttpResponse(window, status=206 if byte_range is not None else 200, content_type=content_type)
    response["Content-Length"] = str(end - start + 1)
    if byte_range is not None:
        response["Content-Range"] = f"bytes {start}-{end}/{size}"
    response["Accept-Ranges"] = "bytes" if ranges else "none"
    response["ETag"] = quoted
    if proof_at is not None and request.method == "GET":
        response[audio_proof.HEADER] = audio_proof.challenge_token(path=request.path, first=start, last=end, issued=proof_at, ranges=audio_proof.challenge_ranges(start, end), source=path)
    # Private: audio is access-checked per user, so shared caches must not keep it.
    response["Cache-Control"] = "private, max-age=3600"
    # Content-addressed files have no meaningful name; never leak the original one.
    response["Content-Disposition"] = "inline"
    return response
