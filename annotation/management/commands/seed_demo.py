"""python manage.py seed_demo [--force]"""

from __future__ import annotations

import time

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from annotation.demo import ANNOTATORS, DEMO_STUDY, DEMO_VOTE_KEY, DEMO_VOTE_LABEL, USERS, seed_demo
from annotation.models import Clip, Condition, Judgment, Pair, Study, System


def _counts() -> dict[str, int]:
    return {
        "systems": System.objects.count(),
        "clips": Clip.objects.count(),
        "conditions": Condition.objects.count(),
        "studies": Study.objects.count(),
        "pairs": Pair.objects.count(),
        "users": get_user_model().objects.count(),
    }


class Command(BaseCommand):
    help = "Seed a demo study (six procedural music systems, eight conditions, users) into a database with no study yet."

    def add_arguments(self, parser):
        parser.add_argument(
            "--force", action="store_true", help="Seed even when studies exist; objects already there are kept, nothing is duplicated."
        )

    def handle(self, *args, force: bool, **options):
        before = _counts()
        started = time.monotonic()
        study = seed_demo(force=force)
        if study is None:
            self.stdout.write("The database already has studies: demo content not seeded (use --force to add it anyway).")
            return
        after = _counts()
        added = ", ".join(f"{after[k] - before[k]} {k}" for k in after)
        pairs = study.pairs.count()
        self.stdout.write(self.style.SUCCESS(f"Demo study {study.name!r} ready in {time.monotonic() - started:.1f} s: {pairs} pairs."))
        self.stdout.write(f"Added: {added}.")
        votes = Judgment.objects.filter(pair__study=study, idempotency_key__startswith=DEMO_VOTE_KEY).count()
        self.stdout.write(
            f"Demo votes: {votes} seeded answers (source 'seeded', no one listened), each rationale starting {DEMO_VOTE_LABEL!r}; "
            f"left out of exports and reports unless asked for (report: /scoring/studies/{study.name}/report/?include_seeded=1; export_dataset --include-seeded)."
        )
        self.stdout.write("Logins (change these before exposing the server):")
        for username, password, _superuser, groups in USERS:
            self.stdout.write(f"  {username} / {password}  ({', '.join(groups)})")
        names = ", ".join(name for name, _ in ANNOTATORS)
        self.stdout.write(f"  {names} / {ANNOTATORS[0][1]}  (annotators of {DEMO_STUDY!r}; each is asked for consent first)")
