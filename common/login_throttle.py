"""Sign-in throttling per account and per client address (salted hash), on the Django cache.

Enforced in the authentication backend, so every password check counts and is refused alike:
the sign-in form, the admin's, and HTTP Basic where a deployment turns it on. The forms ask
first, to say why in a sentence instead of "wrong password". While an account is locked even
the right password is refused: that is what stops guessing. Windows are fixed and counted as the
arena's rate limits are (common.rates); failures are counted, successes clear the account's count.
"""

from __future__ import annotations

import logging
import math
import time

from django import forms
from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.core.cache import cache
from django.core.exceptions import PermissionDenied

from .auth_backend import CachedModelBackend
from .proxy import client_address
from .rates import parse_rate, salted_hash, window_count, window_start

log = logging.getLogger(__name__)


def _scopes(request, username: str) -> list[tuple[str, str, str]]:
    """(setting, cache key stem, what) for each limit that applies."""
    scopes = []
    if username:
        scopes.append(("AUDITORIUM_LOGIN_ACCOUNT_RATE", "acct:" + salted_hash("login-user", username.strip().lower()), "this account"))
    ip = client_address(request)
    if ip:
        scopes.append(("AUDITORIUM_LOGIN_IP_RATE", "ip:" + salted_hash("login-ip", ip), "this network"))
    return scopes


def _key(stem: str, window: int, now: float) -> tuple[str, float]:
    start = window_start(now, window)
    return f"login:fail:{stem}:{start}", start + window


def _windows(request, username: str, now: float):
    """(cache key, limit, window seconds, window end, what) for each limit in force."""
    for setting, stem, what in _scopes(request, username):
        limit, window = parse_rate(getattr(settings, setting))
        if limit > 0:
            key, ends = _key(stem, window, now)
            yield key, limit, window, ends, what


def locked(request, username: str, *, now: float | None = None) -> tuple[str, int] | None:
    """(what is locked, seconds until it opens) when a limit is reached, else None."""
    now = time.time() if now is None else now
    for key, limit, _, ends, what in _windows(request, username, now):
        try:
            failures = cache.get(key, 0)
        except Exception:  # the cache is down: sign-in still works, unthrottled, and says so in the log
            log.warning("login throttle skipped: cache unavailable", exc_info=True)
            return None
        if failures >= limit:
            return what, max(1, math.ceil(ends - now))
    return None


def failure_record(request, username: str, *, now: float | None = None) -> None:
    now = time.time() if now is None else now
    for key, _, window, _, _ in _windows(request, username, now):
        try:
            window_count(key, window)
        except Exception:
            log.warning("login throttle skipped: cache unavailable", exc_info=True)


def success_record(request, username: str, *, now: float | None = None) -> None:
    now = time.time() if now is None else now
    limit, window = parse_rate(settings.AUDITORIUM_LOGIN_ACCOUNT_RATE)
    if username and limit > 0:
        key, _ = _key("acct:" + salted_hash("login-user", username.strip().lower()), window, now)
        try:
            cache.delete(key)
        except Exception:
            log.warning("login throttle reset skipped: cache unavailable", exc_info=True)


def lock_message(what: str, seconds: int) -> str:
    minutes = max(1, math.ceil(seconds / 60))
    return f"Too many failed sign-ins for {what}. Sign-in is paused for {minutes} minute{'s' if minutes != 1 else ''}; try again later."


class ThrottledModelBackend(CachedModelBackend):
    """The cached model backend that refuses any password check while the account or the address is locked, and counts failures."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if username is None:
            username = kwargs.get("username", "")
        state = locked(request, username or "")
        if state is not None:
            raise PermissionDenied(lock_message(*state))  # stops authenticate() trying other backends
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if user is None:
            failure_record(request, username or "")
            # Stop here: the plain ModelBackend listed after this one (it keeps sessions signed in
            # before this backend existed valid) must not check the same password a second time.
            raise PermissionDenied("wrong username or password")
        success_record(request, username or "")
        return user


class _ThrottleMessage:
    def clean(self):
        state = locked(self.request, self.data.get("username", "") or "")
        if state is not None:
            raise forms.ValidationError(lock_message(*state), code="throttled")
        return super().clean()


class ThrottledAuthenticationForm(_ThrottleMessage, AuthenticationForm):
    pass


class ThrottledAdminAuthenticationForm(_ThrottleMessage, AdminAuthenticationForm):
    pass
