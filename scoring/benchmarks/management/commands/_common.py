"""Shared bits of the benchmark commands."""

from __future__ import annotations

from django.core.management.base import CommandError

from scoring.benchmarks.models import Benchmark


def benchmark_named(name: str) -> Benchmark:
    try:
        return Benchmark.objects.get(name=name)
    except Benchmark.DoesNotExist:
        known = ", ".join(Benchmark.objects.order_by("name").values_list("name", flat=True)[:20]) or "none yet"
        raise CommandError(f"No benchmark named {name!r} (known: {known}).") from None
