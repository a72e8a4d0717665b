"""Where an endpoint judge (option `family: openai`) may send requests from this server.

The outside-judge rules apply (scoring/benchmarks/endpoint_address.py): every address the endpoint's host resolves
to must be public, or in BENCHMARK_ENDPOINT_PRIVATE_NETWORKS. JUDGE_ENDPOINT_ALLOW_LOOPBACK also allows loopback
addresses, for a vLLM server on the worker's own machine; a private network needs the explicit network setting.
The request then connects to the address checked here, so a name that resolves differently a moment later does not
move it.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings

from .benchmarks.endpoint_address import address_refusal, resolve
from .judges.base import JudgeUnavailable


def judge_endpoint_address(url: str):
    """The checked address to connect to, or JudgeUnavailable saying why the endpoint is refused."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        addresses = resolve(host, port)
    except (OSError, UnicodeError, ValueError):
        raise JudgeUnavailable(f"the endpoint's host {host} could not be resolved") from None
    if not addresses:
        raise JudgeUnavailable(f"the endpoint's host {host} resolves to no address")
    for address in addresses:
        if address.is_loopback and settings.JUDGE_ENDPOINT_ALLOW_LOOPBACK:
            continue
        if why := address_refusal(address):
            hint = " (set JUDGE_ENDPOINT_ALLOW_LOOPBACK for a server on this machine)" if address.is_loopback else ""
            raise JudgeUnavailable(
                f"this server does not send judge requests to {host}: {why}{hint}; "
                "a private network must be named in BENCHMARK_ENDPOINT_PRIVATE_NETWORKS"
            )
    return addresses[0]
