"""Names a blind listener's client may see for a clip: opaque, so that nothing in a URL or an ETag links a letter to
a system, to an open reference, or to the same clip under another letter or item.

A clip's content hash would do all three (the same file, the same hash, wherever it is served); an ETag here is a
keyed digest of the URL path it is served under and the file's hash, so it still changes when the file does (the
caches and Range requests stay right) but two URLs never share one."""

from __future__ import annotations

import hashlib
import hmac

from django.conf import settings
from django.core import signing


def opaque_etag(*, path: str, content_hash: str) -> str:
    key = hashlib.sha256(("auditorium.blind.etag:" + settings.SECRET_KEY).encode()).digest()
    return hmac.new(key, f"{path}\n{content_hash}".encode(), hashlib.sha256).hexdigest()[:40]


def letter_token(*, salt: str, assignment_id: int, label: str) -> str:
    """A URL segment for one letter (or the open reference, label "ref") of one assignment: signed, so a client cannot
    make one up, and holding nothing but the assignment and the letter the page already shows."""
    # Signer, not signing.dumps: dumps adds a timestamp, so the same letter's URL would change every second and a
    # page fetched twice would differ by its clock alone.
    return signing.Signer(salt=salt).sign_object({"a": assignment_id, "l": label}, compress=True)


def letter_of(*, salt: str, token: str) -> tuple[int, str] | None:
    try:
        data = signing.Signer(salt=salt).unsign_object(token)
    except signing.BadSignature:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("a"), int) or not isinstance(data.get("l"), str):
        return None
    return data["a"], data["l"]
