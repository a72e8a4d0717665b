"""python manage.py seed_demo_benchmark [--study demo]"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from common.errors import ServiceError
from scoring.benchmarks.demo import demo_benchmark_seed


class Command(BaseCommand):
    help = "Create the demo judge benchmark (demo data) from the demo study's test split, with a demo team, a coin-flip file and the signal judge's run."

    def add_arguments(self, parser):
        parser.add_argument("--study", default="demo")

    def handle(self, *args, study: str, **options):
        try:
            seeded = demo_benchmark_seed(study_name=study)
        except ServiceError as exc:
            raise CommandError(exc.message) from None
        bench = seeded["benchmark"]
        self.stdout.write(f"Demo judge benchmark {bench.name!r} (demo data): {bench.n_items} items, team {seeded['team'].name!r}.")
        for sub in seeded["submissions"]:
            self.stdout.write(f"  {sub.label}: {sub.get_state_display().lower()}")
