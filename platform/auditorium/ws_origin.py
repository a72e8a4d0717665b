"""WebSockets only from pages of this very site: the Origin must match the request's scheme, host and port.

Channels' AllowedHostsOriginValidator compares only the Origin's host with ALLOWED_HOSTS, so a
page served from another port of the same host (another application, a developer's server) could
open the live pages' sockets with the visitor's cookies. Here the Origin must equal the origin the
request was made to (Host header, and the scheme: wss/https, or behind a trusted proxy its
X-Forwarded-Proto), or be listed in CSRF_TRUSTED_ORIGINS.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from channels.security.websocket import WebsocketDenier
from django.conf import settings

from common.proxy import is_trusted_proxy

DEFAULT_PORTS = {"http": 80, "https": 443}


def _origin(scheme: str, host: str, port: int | None) -> tuple[str, str, int]:
    return scheme, host.lower().strip("[]"), port if port is not None else DEFAULT_PORTS.get(scheme, 0)


def _parse(url: str) -> tuple[str, str, int] | None:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname:
        return None
    return _origin(parts.scheme, parts.hostname, port)


def expected_origin(scope) -> tuple[str, str, int] | None:
    headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope.get("headers", [])}
    host = headers.get("host")
    if not host:
        return None
    scheme = "https" if scope.get("scheme") == "wss" else "http"
    client = (scope.get("client") or ("", 0))[0]
    if getattr(settings, "AUDITORIUM_BEHIND_PROXY", False) and is_trusted_proxy(client):
        forwarded = headers.get("x-forwarded-proto", "").split(",")[0].strip().lower()
        if forwarded in DEFAULT_PORTS:
            scheme = forwarded
    return _parse(f"{scheme}://{host}")


def origin_allowed(scope) -> bool:
    headers = dict(scope.get("headers", []))
    origin = _parse(headers.get(b"origin", b"").decode("latin-1"))
    if origin is None:
        return False
    if origin == expected_origin(scope):
        return True
    return origin in {_parse(trusted) for trusted in getattr(settings, "CSRF_TRUSTED_ORIGINS", [])}


class SameOriginWebSocket:
    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] == "websocket" and not origin_allowed(scope):
            return await WebsocketDenier()(scope, receive, send)
        return await self.app(scope, receive, send)
