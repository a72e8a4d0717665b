"""python manage.py seed_demo_judges [--study demo]"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from annotation.models import Study
from scoring import selectors
from scoring.demo import DEMO_BEST_OF_N, demo_best_of_n, demo_judges_seed, demo_signal_run


class Command(BaseCommand):
    help = "Add one judge of every kind (unavailable ones with their reason) and queue the signal judge on the demo study."

    def add_arguments(self, parser):
        parser.add_argument("--study", default="demo", help="The study the signal judge scores (default: demo).")

    def handle(self, *args, study: str, **options):
        demo_judges_seed()
        target = Study.objects.filter(name=study).first()
        if target is None:
            raise CommandError(f"No study {study!r}: run seed_demo first.")
        self.report(selectors.judge_list())
        run = demo_signal_run(study=target)
        if run is None:
            self.stdout.write(f"The signal judge has scored {study!r} already.")
        else:
            self.stdout.write(f"Signal judge queued on {study!r}: run #{run.pk}, {run.total} pairs.")
        owner = target.owner or get_user_model().objects.filter(is_superuser=True).order_by("pk").first()
        if owner is not None:
            experiment = demo_best_of_n(owner=owner)
            if experiment is not None:
                self.stdout.write(f"Best-of-N demo: {experiment.state}, page /scoring/studies/{DEMO_BEST_OF_N}/best-of-n/?include_seeded=1")

    def report(self, rows: list[dict]) -> None:
        """Ready judges on one line; the learned ones whose weights are absent (the normal state of a fresh
        demo) once, as information with the folder to put them in; any other reason per judge."""
        ready = [r["key"] for r in rows if r["available"]]
        missing: dict[str, list[str]] = {}
        for r in rows:
            if not r["available"] and r["reason"].startswith(MISSING_WEIGHTS):
                missing.setdefault(r["weights"], []).append(r["key"])
        self.stdout.write(f"  Judges ready: {', '.join(ready) or 'none'}.")
        if missing:
            keys = [key for group in missing.values() for key in group]
            self.stdout.write(f"  Not loaded, as expected on a fresh demo: {', '.join(keys)} (their weights are not on this machine).")
            self.stdout.write(f"  To use one, put its checkpoint folder in {settings.AUDITORIUM_MODEL_DIR}/ (the judges page picks it up):")
            for weights, group in missing.items():
                self.stdout.write(f"    {weights}/  for {', '.join(group)}")
        for r in rows:
            if not r["available"] and not r["reason"].startswith(MISSING_WEIGHTS):
                self.stdout.write(f"  Judge {r['key']} is unavailable: {r['reason']}")


# resolve_weights' reasons when a judge's checkpoint is simply not on this machine.
MISSING_WEIGHTS = ("weights not found", "no weights configured")
