"""Sign-in throttling by account and address together, by address, and by account from new addresses.

Enforced in the authentication backend, so every password check counts and is refused alike:
the sign-in form, the admin's, and HTTP Basic where a deployment turns it on. The forms ask
first, to say why in a sentence instead of "wrong password". While a limit is reached even the
right password is refused: that is what stops guessing.

A lock on the account alone would let anyone lock anyone out, so the limits are:

- account + address (AUDITORIUM_LOGIN_ACCOUNT_ADDRESS_RATE): one address guessing one account.
  A stranger's failures pause that account from the stranger's address only;
- address (AUDITORIUM_LOGIN_IP_RATE): one address trying many accounts (password spraying);
- account (AUDITORIUM_LOGIN_ACCOUNT_RATE): many addresses guessing one account. It is set high,
  and counts and refuses only addresses the account has not signed in from in the last
  KNOWN_DAYS days, so the owner's usual addresses are never locked out by it.

The last two do not apply to an address the account signed in from lately: there only the
account + address limit counts. Addresses are counted by network (an IPv6 address by its /64;
common.failure_throttle) and as salted hashes. A right password clears the account + address
count and marks the address as known to the account; the other counts run to the end of their
windows.
"""

from __future__ import annotations

import logging

from django import forms
from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.core.cache import cache
from django.core.exceptions import PermissionDenied

from . import failure_throttle
from .auth_backend import CachedModelBackend
from .failure_throttle import Scope
from .proxy import client_address
from .rates import salted_hash

log = logging.getLogger(__name__)

KNOWN_DAYS = 30


def _names(request, username: str) -> tuple[str, str]:
    """(account, address network) as they are counted; either may be ""."""
    return (username or "").strip().lower(), failure_throttle.address_network(client_address(request))


def _known_key(account: str, network: str) -> str:
    return "login:known:" + salted_hash("login-known", f"{account}\n{network}")


def _known(account: str, network: str) -> bool:
    if not account or not network:
        return False
    try:
        return bool(cache.get(_known_key(account, network)))
    except Exception:  # the cache is down: the throttle is skipped anyway (failure_throttle.locked)
        return False


def _pair(account: str, network: str) -> list[Scope]:
    if not account or not network:
        return []
    stem = "login-pair:" + salted_hash("login-pair", f"{account}\n{network}")
    return [Scope(settings.AUDITORIUM_LOGIN_ACCOUNT_ADDRESS_RATE, stem, "this account from this network")]


def _scopes(request, username: str) -> list[Scope]:
    account, network = _names(request, username)
    scopes = _pair(account, network)
    if _known(account, network):
        return scopes
    if network:
        scopes.append(Scope(settings.AUDITORIUM_LOGIN_IP_RATE, "login-ip:" + salted_hash("login-ip", network), "this network"))
    if account:
        scopes.append(Scope(settings.AUDITORIUM_LOGIN_ACCOUNT_RATE, "login-acct:" + salted_hash("login-user", account), "this account from networks it has not signed in from lately"))
    return scopes


def locked(request, username: str, *, now: float | None = None) -> tuple[str, int] | None:
    """(what is paused, seconds until it opens) when a limit is reached, else None."""
    return failure_throttle.locked(_scopes(request, username), now=now)


def failure_record(request, username: str, *, now: float | None = None) -> None:
    failure_throttle.record_failure(_scopes(request, username), now=now)


def success_record(request, username: str, *, now: float | None = None) -> None:
    account, network = _names(request, username)
    if not account:
        return
    failure_throttle.clear(_pair(account, network), now=now)
    if network:
        try:
            cache.set(_known_key(account, network), 1, timeout=KNOWN_DAYS * 86400)
        except Exception:
            log.warning("login throttle: cache unavailable, address not remembered", exc_info=True)


def lock_message(what: str, seconds: int) -> str:
    return f"Too many failed sign-ins for {what}. Sign-in is paused for {failure_throttle.minutes(seconds)}; try again later."


class ThrottledModelBackend(CachedModelBackend):
    """The cached model backend that refuses any password check while a sign-in limit is reached, and counts failures."""

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
