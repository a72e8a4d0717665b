"""Reading the arena's settings (rate strings and salted hashes are read by common.rates).

The settings themselves, typed and with their defaults, are the ARENA_* block of
platform/auditorium/settings.py; an unknown ARENA_* variable stops start-up there.
"""

from __future__ import annotations

from django.conf import settings


def get(name: str):
    """The current value (override_settings in tests changes it); a name no setting defines is an AttributeError."""
    return getattr(settings, name)
