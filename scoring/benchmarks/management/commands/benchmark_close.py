from __future__ import annotations

from django.core.management.base import BaseCommand

from scoring.benchmarks import services

from ._common import benchmark_named


class Command(BaseCommand):
    help = "Close a judge benchmark: no more submissions, and the leaderboard switches to the private part."

    def add_arguments(self, parser):
        parser.add_argument("name")

    def handle(self, *args, **opts):
        benchmark = benchmark_named(opts["name"])
        was_open = benchmark.is_open
        benchmark = services.benchmark_close(benchmark=benchmark, operator=True)
        when = benchmark.closed_at.isoformat(timespec="seconds") if benchmark.closed_at else "earlier"
        self.stdout.write(f"Benchmark {benchmark.name} {'is now closed' if was_open else 'was already closed'} ({when}): the leaderboard shows the private part.")
