"""python manage.py seed_demo_judges [--study demo]"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Study
from scoring import selectors
from scoring.demo import demo_judges_seed, demo_signal_run


class Command(BaseCommand):
    help = "Add one judge of every kind (unavailable ones with their reason) and queue the signal judge on the demo study."

    def add_arguments(self, parser):
        parser.add_argument("--study", default="demo", help="The study the signal judge scores (default: demo).")

    def handle(self, *args, study: str, **options):
        demo_judges_seed()
        target = Study.objects.filter(name=study).first()
        if target is None:
            raise CommandError(f"No study {study!r}: run seed_demo first.")
        for row in selectors.judge_list():
            state = "available" if row["available"] else f"unavailable: {row['reason']}"
            self.stdout.write(f"  judge {row['key']:<22} {state}")
        run = demo_signal_run(study=target)
        if run is None:
            self.stdout.write(f"The signal judge has scored {study!r} already.")
        else:
            self.stdout.write(f"Signal judge queued on {study!r}: run #{run.pk}, {run.total} pairs.")
