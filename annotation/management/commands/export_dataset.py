"""python manage.py export_dataset --out DIR [--study NAME] [--balanced-test N --seed S] [--include-unvoted]"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotation.dataset import dataset_export
from annotation.models import Study
from common.errors import ServiceError


class Command(BaseCommand):
    help = "Export votes as CMI-RewardBench JSONL (train.jsonl, test.jsonl), the audio they name, and a datasheet (README.md)."

    def add_arguments(self, parser):
        parser.add_argument("--out", required=True, help="A new or empty folder to write into.")
        parser.add_argument("--study", help="Export one study (default: all).")
        parser.add_argument(
            "--balanced-test", type=int, metavar="N", help="Redraw the test split: N pairs, a quarter per modality; stored on the pairs."
        )
        parser.add_argument("--seed", type=int, help="Seed of the balanced test draw (required with --balanced-test).")
        parser.add_argument(
            "--include-unvoted",
            action="store_true",
            help="Also write pairs without votes: one row each with empty user id, preferences, confidences and feedback.",
        )
        parser.add_argument(
            "--include-seeded",
            action="store_true",
            help="Also write the demo's seeded votes (no one listened), labelled as demo data; left out by default.",
        )

    def handle(self, *args, out, study, balanced_test, seed, include_unvoted, include_seeded=False, **options):
        studies = None
        if study:
            found = Study.objects.filter(name=study).first()
            if found is None:
                raise CommandError(f"No study named {study!r}.")
            studies = [found]
        try:
            report = dataset_export(out_dir=out, studies=studies, balanced_test=balanced_test, seed=seed, include_unvoted=include_unvoted, include_seeded=include_seeded)
        except ServiceError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(report.summary())
        self.stdout.write(f"written to {out}")
