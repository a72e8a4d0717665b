"""Where the server may send an outside judge's requests: the endpoint's host is resolved and every address it gives
must be a public one, unless BENCHMARK_ENDPOINT_PRIVATE_NETWORKS names it. Loopback, private, link-local (cloud
metadata at 169.254.169.254), shared, reserved, multicast and unspecified addresses are refused by default, so a
registered URL cannot make the worker reach this machine or the network behind it.

The run connects to the address it checked (PinnedOpener), so a name that resolves differently a moment later
(DNS rebinding) does not move the request, and redirects are not followed (a redirect could point anywhere)."""

from __future__ import annotations

import http.client
import ipaddress
import socket
import urllib.request
from urllib.parse import urlsplit

from django.conf import settings

from auditorium.errors import ServiceError

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def _allowed_networks() -> list:
    return [ipaddress.ip_network(n, strict=False) for n in settings.BENCHMARK_ENDPOINT_PRIVATE_NETWORKS]


def _plain(address: Address) -> Address:
    mapped = getattr(address, "ipv4_mapped", None)  # ::ffff:127.0.0.1 is 127.0.0.1
    return mapped or address


def address_refusal(address: Address) -> str:
    """Why the server will not send to this address ("" when it may)."""
    address = _plain(address)
    if any(address in network for network in _allowed_networks()):
        return ""
    if address.is_global and not address.is_multicast:
        return ""
    kind = next(
        (
            name
            for name, flag in (
                ("loopback", address.is_loopback),
                ("link-local", address.is_link_local),
                ("private", address.is_private),
                ("multicast", address.is_multicast),
                ("unspecified", address.is_unspecified),
            )
            if flag
        ),
        "non-public",
    )
    return f"{address} is a {kind} address"


def resolve(host: str, port: int) -> list[Address]:
    """Every address the host resolves to (a literal address resolves to itself)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    seen: list[Address] = []
    for info in infos:
        address = ipaddress.ip_address(info[4][0].split("%", 1)[0])
        if address not in seen:
            seen.append(address)
    return seen


def _refused(host: str, why: str) -> ServiceError:
    return ServiceError(
        f"This server does not send judge requests to {host}: {why}. Outside judges must be reachable at a public address "
        "(a deployment can allow a network with BENCHMARK_ENDPOINT_PRIVATE_NETWORKS).",
        code="address_not_allowed",
    )


def endpoint_address(url: str, *, unresolved_ok: bool = False) -> Address | None:
    """The address a request to this URL goes to, after checking every address its host resolves to.

    With unresolved_ok (registration), a name that does not resolve yet passes (None); the run checks it again."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        addresses = resolve(host, port)
    except (OSError, UnicodeError, ValueError):
        if unresolved_ok:
            return None
        raise ServiceError(f"The endpoint's host {host} could not be resolved.", code="unresolved") from None
    for address in addresses:
        if why := address_refusal(address):
            raise _refused(host, why)
    return addresses[0] if addresses else None


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None  # urllib then raises HTTPError with the 3xx code


def _pinned(base, address: Address):
    class Pinned(base):
        def connect(self):
            # Connect to the checked address; Host header and TLS server name stay the URL's host.
            self.sock = socket.create_connection((str(address), self.port), self.timeout, self.source_address)
            if isinstance(self, http.client.HTTPSConnection):
                self.sock = self._context.wrap_socket(self.sock, server_hostname=self.host)

    return Pinned


def pinned_opener(address: Address) -> urllib.request.OpenerDirector:
    """An opener whose connections go to `address` only: no proxies, no redirects."""

    class HttpPinned(urllib.request.HTTPHandler):
        def http_open(self, req):
            return self.do_open(_pinned(http.client.HTTPConnection, address), req)

    class HttpsPinned(urllib.request.HTTPSHandler):
        def https_open(self, req):
            return self.do_open(_pinned(http.client.HTTPSConnection, address), req, context=self._context)

    return urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect(), HttpPinned(), HttpsPinned())
