"""Reading the arena's settings, and the helpers that interpret them.

The settings themselves, typed and with their defaults, are the ARENA_* block of
platform/auditorium/settings.py; an unknown ARENA_* variable stops start-up there.
"""

from __future__ import annotations

import hashlib
import hmac

from django.conf import settings


def get(name: str):
    """The current value (override_settings in tests changes it); a name no setting defines is an AttributeError."""
    return getattr(settings, name)


def parse_rate(value: str) -> tuple[int, int]:
    """'20/60' -> (20 requests, 60 seconds)."""
    count, _, seconds = str(value).partition("/")
    return int(count), int(seconds or 60)


def salted_hash(label: str, value: str, *, length: int = 32) -> str:
    """HMAC of value under the project salt; the label keeps hashes of different things unlinkable."""
    salt = str(getattr(settings, "AUDITORIUM_HASH_SALT", settings.SECRET_KEY)).encode()
    return hmac.new(salt, f"{label}:{value}".encode(), hashlib.sha256).hexdigest()[:length]
