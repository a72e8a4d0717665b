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
import threading
import urllib.request
from contextlib import contextmanager
from types import SimpleNamespace
from urllib.parse import urlsplit

from django.conf import settings

from common.errors import ServiceError

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def _allowed_networks() -> list:
    return [ipaddress.ip_network(n, strict=False) for n in settings.BENCHMARK_ENDPOINT_PRIVATE_NETWORKS]


# The IANA special-purpose address registries (iana.org/assignments/iana-ipv4-special-registry and
# iana-ipv6-special-registry), plus multicast and the reserved 240/4: no outside judge lives in any of them, so every
# block is refused, those the registry calls globally reachable included (anycast relays, AS112, benchmarking).
SPECIAL_IPV4 = tuple(
    ipaddress.IPv4Network(n)
    for n in (
        "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12", "192.0.0.0/24",
        "192.0.2.0/24", "192.31.196.0/24", "192.52.193.0/24", "192.88.99.0/24", "192.168.0.0/16", "192.175.48.0/24",
        "198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4", "255.255.255.255/32",
    )
)  # fmt: skip
SPECIAL_IPV6 = tuple(
    ipaddress.IPv6Network(n)
    for n in (
        "::/128", "::1/128", "::ffff:0:0/96", "64:ff9b::/96", "64:ff9b:1::/48", "100::/64", "2001::/23", "2001:db8::/32",
        "2002::/16", "2620:4f:8000::/48", "3fff::/20", "5f00::/16", "fc00::/7", "fe80::/10", "fec0::/10", "ff00::/8",
    )
)  # fmt: skip
IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")
IPV4_TRANSLATED = ipaddress.IPv6Network("::ffff:0:0:0/96")
NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
TEREDO = ipaddress.IPv6Network("2001::/32")
# An ISATAP interface identifier (RFC 5214) is 0000:5efe or 0200:5efe followed by an IPv4 address; the mask
# leaves out the u and g bits of the modified EUI-64 format, so no spelling of either bit slips through.
ISATAP_MASK = 0xFCFF_FFFF
ISATAP_ID = 0x0000_5EFE


def embedded_ipv4(address: Address) -> list[tuple[str, ipaddress.IPv4Address]]:
    """The IPv4 addresses an IPv6 address carries, by form: a packet to it reaches (or is relayed to) those."""
    if address.version == 4:
        return []
    low = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address.ipv4_mapped is not None:
        return [("IPv4-mapped", address.ipv4_mapped)]
    if address in IPV4_TRANSLATED:
        return [("IPv4-translated", low)]
    if address in NAT64:
        return [("NAT64", low)]
    if address.sixtofour is not None:
        return [("6to4", address.sixtofour)]
    if address.teredo is not None:
        server, client = address.teredo
        return [("Teredo server", server), ("Teredo client", client)]
    if address in IPV4_COMPATIBLE and int(address) > 1:
        return [("IPv4-compatible", low)]
    return []


def isatap_ipv4(address: Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address in an ISATAP interface identifier (the low 64 bits ...:0:5efe:a.b.c.d or ...:200:5efe:a.b.c.d), or None.

    Any /64 prefix can carry one, and an ISATAP router forwards to the IPv4 address, so it is judged on top of the
    prefix rather than instead of it. Teredo's low 64 bits are flags, port and client, never an ISATAP identifier."""
    if address.version == 4 or address in TEREDO:
        return None
    if (int(address) >> 32) & ISATAP_MASK != ISATAP_ID:
        return None
    return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)


def _ipv4_refusal(address: ipaddress.IPv4Address) -> str:
    block = next((n for n in SPECIAL_IPV4 if address in n), None)
    if block is not None:
        kind = "loopback" if address.is_loopback else "link-local" if address.is_link_local else "multicast" if address.is_multicast else "private" if block.subnet_of(ipaddress.IPv4Network("10.0.0.0/8")) or block.subnet_of(ipaddress.IPv4Network("172.16.0.0/12")) or block.subnet_of(ipaddress.IPv4Network("192.168.0.0/16")) else "special-purpose"
        return f"{address} is a {kind} address ({block} in the IANA special-purpose registry)"
    if not address.is_global:
        return f"{address} is a non-public address"
    return ""


def address_refusal(address: Address) -> str:
    """Why the server will not send to this address ("" when it may).

    An IPv6 address that carries an IPv4 address (IPv4-mapped, -translated and -compatible, NAT64, 6to4, Teredo) is
    judged by the IPv4 addresses it carries; any other IPv6 address must be global unicast (2000::/3) outside the
    special-purpose blocks. An ISATAP interface identifier must carry a public IPv4 address as well, whatever the
    prefix. BENCHMARK_ENDPOINT_PRIVATE_NETWORKS allows a network by the literal or the carried address."""
    allowed = _allowed_networks()
    carried = embedded_ipv4(address)
    if any(address in network for network in allowed if network.version == address.version):
        return ""
    isatap = isatap_ipv4(address)
    if isatap is not None and not any(isatap in network for network in allowed if network.version == 4):
        if why := _ipv4_refusal(isatap):
            return f"{address} carries {isatap} (ISATAP): {why}"
    if carried:
        for form, inner in carried:
            if any(inner in network for network in allowed if network.version == 4):
                continue
            if why := _ipv4_refusal(inner):
                return f"{address} carries {inner} ({form}): {why}"
        return ""
    if address.version == 4:
        return _ipv4_refusal(address)
    block = next((n for n in SPECIAL_IPV6 if address in n), None)
    if block is not None:
        kind = "loopback" if address.is_loopback else "link-local" if address.is_link_local else "multicast" if address.is_multicast else "unique-local" if block == ipaddress.IPv6Network("fc00::/7") else "special-purpose"
        return f"{address} is a {kind} address ({block} in the IANA special-purpose registry)"
    if address not in ipaddress.IPv6Network("2000::/3") or not address.is_global:
        return f"{address} is a non-public address"
    return ""


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


def endpoint_address(url: str, *, unresolved_ok: bool = False, allow_loopback: bool = False) -> Address | None:
    """The address a request to this URL goes to, after checking every address its host resolves to.

    With unresolved_ok (registration), a name that does not resolve yet passes (None); the run checks it again.
    allow_loopback lets a server on this machine through (a judge served by a local vLLM)."""
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
        if address.is_loopback and allow_loopback:
            continue
        if why := address_refusal(address):
            raise _refused(host, why)
    return addresses[0] if addresses else None


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None  # urllib then raises HTTPError with the 3xx code


_watched = threading.local()


@contextmanager
def deadline(seconds: float):
    """One deadline for everything a request does on this thread (connect, send, headers, body): when it passes, the
    request's sockets are shut down, so a judge that trickles its answer a byte at a time cannot stretch a per-read
    timeout into minutes. Yields a flag; `expired` is set once the deadline has cut the request."""
    state = SimpleNamespace(sockets=[], expired=False)
    lock = threading.Lock()

    def expire():
        with lock:
            state.expired = True
            for sock in state.sockets:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    _watched.state, _watched.lock = state, lock
    timer.start()
    try:
        yield state
    finally:
        timer.cancel()
        _watched.state = None


def _watch(sock) -> None:
    state = getattr(_watched, "state", None)
    if state is None:
        return
    with _watched.lock:
        state.sockets.append(sock)
        if state.expired:
            sock.shutdown(socket.SHUT_RDWR)


def _pinned(base, address: Address):
    class Pinned(base):
        def connect(self):
            # Connect to the checked address; Host header and TLS server name stay the URL's host.
            self.sock = socket.create_connection((str(address), self.port), self.timeout, self.source_address)
            _watch(self.sock)
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
