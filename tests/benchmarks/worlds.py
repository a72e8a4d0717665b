"""Two-world tests of the disclosure rule: build a benchmark world, let a team member act and read every route the URL
conf has, roll the world back, build its twin that differs only in a secret, and compare what the member saw.

A world is built inside a savepoint that is rolled back afterwards; database sequences (PostgreSQL does not roll
them back), factory sequences and the cache are reset before each build, so both worlds get the same ids and
nothing computed in one is served in the other. What remains to normalise is time and per-request tokens.
"""

from __future__ import annotations

import io
import re
import uuid
import zipfile
from collections.abc import Callable
from itertools import product

import factory
from django.apps import apps
from django.core.cache import cache
from django.core.management.color import no_style
from django.db import connection, transaction
from django.test import Client
from django.urls import URLResolver, get_resolver, reverse

from tests import factories

TIME = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?")
CSRF = re.compile(r'(name="csrfmiddlewaretoken" value=")[^"]+(")')
NONCE = re.compile(r'(nonce=")[^"]+(")')
AUDIO_TOKEN = re.compile(r"/benchmarks/audio/[^/\"'\s]+/")


class _Rollback(Exception):
    pass


def _reset_sequences() -> None:
    statements = connection.ops.sequence_reset_sql(no_style(), apps.get_models())
    with connection.cursor() as cursor:
        for sql in statements:
            cursor.execute(sql)


def _reset_factories() -> None:
    for value in vars(factories).values():
        if isinstance(value, type) and issubclass(value, factory.base.BaseFactory) and value._meta.model is not None:
            value.reset_sequence(0, force=True)


def in_world(build: Callable[[], dict], act: Callable[[dict], dict]) -> dict:
    """Build a world, act in it and return what `act` returned; the world is rolled back."""
    _reset_sequences()
    _reset_factories()
    cache.clear()
    seen: dict = {}
    try:
        with transaction.atomic():
            world = build()
            seen = act(world)
            raise _Rollback
    except _Rollback:
        pass
    cache.clear()
    return seen


def _unzip(body: bytes) -> bytes:
    # A zip stores each member's time: compare the members instead.
    with zipfile.ZipFile(io.BytesIO(body)) as archive:
        return b"".join(name.encode() + b"\n" + normalise(archive.read(name)) + b"\n" for name in sorted(archive.namelist()))


def normalise(body: bytes) -> bytes:
    text = body.decode("utf-8", errors="replace")
    for pattern, repl in ((TIME, "<time>"), (CSRF, r"\1<csrf>\2"), (NONCE, r"\1<nonce>\2"), (AUDIO_TOKEN, "/benchmarks/audio/<token>/")):
        text = pattern.sub(repl, text)
    return text.encode()


def routes() -> list[tuple[str, str, frozenset]]:
    """(route name for reverse(), app namespace, URL keyword arguments) of every named route but the admin's."""

    def walk(patterns, namespace="", outer=frozenset()):
        for p in patterns:
            names = outer | set(getattr(p.pattern, "converters", {}))
            if isinstance(p, URLResolver):
                if p.app_name == "admin":
                    continue
                yield from walk(p.url_patterns, p.namespace or namespace, frozenset(names))
            elif p.name:
                yield (f"{namespace}:{p.name}" if namespace else p.name), namespace, frozenset(names)

    return list(walk(get_resolver().url_patterns))


def _values(route: str, key: str, world: dict) -> list:
    benchmark_route = route.startswith("benchmarks:") or "benchmark" in route
    fill = {
        "name": [world["bench"].name] if benchmark_route else [world["study"].name],
        "submission_id": world["submission_ids"],
        "team": world["team_names"],
        "token": [world["audio_token"]],
        "public_id": [uuid.UUID(int=0)],
        "pseudonym": ["nobody"],
        "table": ["overall"],
        "side": ["a"],
        "which": ["a"],
    }
    return fill.get(key, [1])


def route_urls(world: dict) -> list[tuple[str, str]]:
    """(route name, URL) for every route, with every world value its arguments can take, plus the leaderboard's filters."""
    out = []
    for name, _namespace, keys in routes():
        keys = sorted(keys)
        for combo in product(*(_values(name, k, world) for k in keys)):
            url = reverse(name, kwargs=dict(zip(keys, combo)))
            out.append((name, url))
            if name in ("benchmarks:benchmark-detail", "api-benchmark-leaderboard"):
                for dim, modality in product(("alignment", "musicality"), ("", "text", "text+lyrics", "text+ref", "text+lyrics+ref")):
                    out.append((name, f"{url}?dim={dim}&modality={modality}"))
    return out


def read_everything(client: Client, world: dict) -> dict:
    """GET every route as this client: {url: (status, content type, location, normalised body)}."""
    seen = {}
    for _name, url in route_urls(world):
        response = client.get(url)
        body = b"".join(response.streaming_content) if response.streaming else response.content
        kind = response.get("Content-Type", "")
        body = _unzip(body) if kind == "application/zip" else normalise(body)
        seen[url.replace(world["audio_token"], "<token>")] = (response.status_code, kind, response.get("Location", ""), body)
    return seen


def upload(client: Client, url: str, data: dict, body: bytes, *, follow: bool = False):
    return client.post(url, {**data, "file": io.BytesIO(body)}, follow=follow)


def differences(first: dict, second: dict) -> list[str]:
    out = []
    for key in sorted(set(first) | set(second)):
        if first.get(key) != second.get(key):
            a, b = first.get(key), second.get(key)
            detail = ""
            if a and b:
                x, y = a[-1], b[-1]
                at = next((i for i in range(min(len(x), len(y))) if x[i] != y[i]), min(len(x), len(y)))
                detail = f": {x[max(0, at - 80) : at + 80]!r} vs {y[max(0, at - 80) : at + 80]!r}"
            out.append(f"{key}{detail}")
    return out
