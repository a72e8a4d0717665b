"""Serving audio files with HTTP Range support (206, Content-Range, 416), ETag and 304.

Browsers seek in <audio> and fetch() by Range requests; without 206 answers
seeking silently restarts from zero in Chrome and fails in Safari.
"""

from __future__ import annotations

import mimetypes
import os
import re

from django.http import FileResponse, HttpRequest, HttpResponse, HttpResponseNotModified, StreamingHttpResponse
from django.utils.http import quote_etag

_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")
CONTENT_TYPES = {".wav": "audio/wav", ".flac": "audio/flac", ".mp3": "audio/mpeg", ".ogg": "audio/ogg", ".opus": "audio/ogg"}


class _Window:
    """A file object reading only bytes [start, start+length)."""

    def __init__(self, handle, start: int, length: int, chunk: int = 64 * 1024):
        self.handle, self.remaining, self.chunk = handle, length, chunk
        handle.seek(start)

    def __iter__(self):
        while self.remaining > 0:
            data = self.handle.read(min(self.chunk, self.remaining))
            if not data:
                break
            self.remaining -= len(data)
            yield data

    def close(self) -> None:
        self.handle.close()


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


def ranged_file_response(request: HttpRequest, path: str, *, etag: str, content_type: str | None = None) -> HttpResponse:
    size = os.path.getsize(path)
    content_type = content_type or CONTENT_TYPES.get(os.path.splitext(path)[1].lower()) or mimetypes.guess_type(path)[0] or "application/octet-stream"
    quoted = quote_etag(etag)
    if request.headers.get("If-None-Match") in (quoted, f"W/{quoted}", "*"):
        response = HttpResponseNotModified()
        response["ETag"] = quoted
        return response

    header = request.headers.get("Range")
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

    handle = open(path, "rb")
    if byte_range is not None:
        start, end = byte_range
        response = StreamingHttpResponse(_Window(handle, start, end - start + 1), status=206, content_type=content_type)
        response["Content-Range"] = f"bytes {start}-{end}/{size}"
        response["Content-Length"] = str(end - start + 1)
    else:
        response = FileResponse(handle, content_type=content_type)
        response["Content-Length"] = str(size)
    response["Accept-Ranges"] = "bytes"
    response["ETag"] = quoted
    # Private: audio is access-checked per user, so shared caches must not keep it.
    response["Cache-Control"] = "private, max-age=3600"
    # Content-addressed files have no meaningful name; never leak the original one.
    response["Content-Disposition"] = "inline"
    return response
