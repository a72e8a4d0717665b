"""The model backend with the signed-in user read from the cache instead of the database on every request.

Every authenticated request loads its user; on the annotation hot path that was one
query of five. The entry is dropped whenever the user row is saved or deleted (signals
wired in annotation/apps.py): a password change, deactivation or role flag change is
seen by the next request, and Django still checks the session against the password hash
of the user it gets. Groups and permissions are not cached here; they load as before.
"""

from __future__ import annotations

from django.contrib.auth.backends import ModelBackend

from .cache import cache_forget, cache_get, cache_set_many

TIMEOUT = 300


def _key(user_id) -> str:
    return f"auditorium:user:{user_id}"


class CachedModelBackend(ModelBackend):
    def get_user(self, user_id):
        key = _key(user_id)
        user = cache_get(key)
        if user is None:
            user = super().get_user(user_id)
            if user is not None:
                cache_set_many({key: user}, TIMEOUT)
        return user if user is not None and self.user_can_authenticate(user) else None


def user_forget(sender=None, instance=None, **kwargs) -> None:
    cache_forget(_key(instance.pk))
