"""Expiring signed links to a benchmark's audio (outside judges over HTTP, dev listening)."""

from __future__ import annotations

from django.conf import settings
from django.core import signing
from django.urls import reverse

SALT = "benchmarks.audio"


def token(benchmark, clip) -> str:
    return signing.TimestampSigner(salt=SALT).sign_object({"c": str(clip.public_id), "b": benchmark.pk}, compress=True)


def unsign(value: str) -> str:
    """The clip's public id; raises signing.BadSignature (SignatureExpired included) when not valid now."""
    data = signing.TimestampSigner(salt=SALT).unsign_object(value, max_age=settings.BENCHMARK_AUDIO_URL_TTL)
    return data["c"]


def signed_url(request, benchmark, clip, *, base: str | None = None) -> str:
    path = reverse("benchmarks:benchmark-audio", args=[token(benchmark, clip)])
    if base:
        return base.rstrip("/") + path
    return request.build_absolute_uri(path) if request is not None else path
