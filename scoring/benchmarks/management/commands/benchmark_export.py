from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from common.errors import ServiceError
from scoring.benchmarks import services

from ._common import benchmark_named


class Command(BaseCommand):
    help = "Write a benchmark's input package (items.jsonl, audio/, benchmark.json, MANIFEST.sha256) into a folder."

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--out", required=True)

    def handle(self, *args, **opts):
        benchmark = benchmark_named(opts["name"])
        try:
            out = services.export_to_dir(benchmark=benchmark, out=opts["out"])
        except ServiceError as exc:
            raise CommandError(exc.message) from None
        labels = "with labels (dev benchmark)" if benchmark.is_dev else "without labels"
        self.stdout.write(f"Wrote {benchmark.n_items} items and {len(benchmark.manifest)} clips to {out}, {labels}.")
