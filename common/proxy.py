"""Whose address a request comes from: the peer's, unless the peer is a proxy this deployment names.

The web server's own proxy handling is off on every launch path (auditorium/serve.py), so
REMOTE_ADDR is the socket's peer. X-Forwarded-For is believed only with AUDITORIUM_BEHIND_PROXY
on and the peer among AUDITORIUM_TRUSTED_PROXIES; then the client is the rightmost address that
is not itself one of those proxies (each proxy appends the address it saw, so anything left of
that is whatever the client wrote).
"""

from __future__ import annotations

import ipaddress
from functools import lru_cache

from django.conf import settings


@lru_cache(maxsize=8)
def _networks(spec: tuple[str, ...]) -> tuple:
    return tuple(ipaddress.ip_network(item.strip(), strict=False) for item in spec if item.strip())


def is_trusted_proxy(address: str) -> bool:
    try:
        ip = ipaddress.ip_address(address.strip())
    except ValueError:
        return False
    return any(ip in network for network in _networks(tuple(getattr(settings, "AUDITORIUM_TRUSTED_PROXIES", ()))))


def client_address(request, *, trust_forwarded: bool | None = None) -> str:
    if request is None:
        return ""
    peer = request.META.get("REMOTE_ADDR", "") or ""
    if trust_forwarded is None:
        trust_forwarded = bool(getattr(settings, "AUDITORIUM_BEHIND_PROXY", False))
    if not trust_forwarded or not is_trusted_proxy(peer):
        return peer
    hops = [hop.strip() for hop in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if hop.strip()]
    for hop in reversed(hops):
        if not is_trusted_proxy(hop):
            return hop
    return peer
