"""Rate strings and salted hashes, shared by the arena's rate limits and the sign-in throttle."""

from __future__ import annotations

import hashlib
import hmac

from django.conf import settings


def parse_rate(value: str) -> tuple[int, int]:
    """'20/60' -> (20 requests, 60 seconds)."""
    count, _, seconds = str(value).partition("/")
    return int(count), int(seconds or 60)


def salted_hash(label: str, value: str, *, length: int = 32) -> str:
    """HMAC of value under the project salt; the label keeps hashes of different things unlinkable."""
    salt = str(getattr(settings, "AUDITORIUM_HASH_SALT", settings.SECRET_KEY)).encode()
    return hmac.new(salt, f"{label}:{value}".encode(), hashlib.sha256).hexdigest()[:length]


def window_start(now: float, window: int) -> int:
    """The start of the fixed window of `window` seconds that holds `now`."""
    return int(now // window) * window
