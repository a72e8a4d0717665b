"""Where an endpoint judge (option `family: openai`) may send requests from this server.

The outside-judge rules apply (scoring/benchmarks/endpoint_address.py): every address the endpoint's host resolves
to must be public, or in BENCHMARK_ENDPOINT_PRIVATE_NETWORKS. JUDGE_ENDPOINT_ALLOW_LOOPBACK also allows loopback
addresses, for a vLLM server on the worker's own machine; a private network needs the explicit network setting.
The request then connects to the address checked here, so a name that resolves differently a moment later does not
move it.
"""

from __future__ import annotations

from django.conf import settings

from common.errors import ServiceError

from .benchmarks.endpoint_address import endpoint_address
from .judges.base import JudgeUnavailable


def judge_endpoint_address(url: str):
    """The checked address to connect to, or JudgeUnavailable saying why the endpoint is refused."""
    allow_loopback = bool(settings.JUDGE_ENDPOINT_ALLOW_LOOPBACK)
    try:
        address = endpoint_address(url, allow_loopback=allow_loopback)
    except ServiceError as exc:
        hint = "" if allow_loopback or "loopback" not in exc.message else " Set JUDGE_ENDPOINT_ALLOW_LOOPBACK for a server on this machine."
        raise JudgeUnavailable(exc.message + hint) from None
    if address is None:
        raise JudgeUnavailable(f"the endpoint's host {url} resolves to no address")
    return address
