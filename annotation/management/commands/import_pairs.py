"""python manage.py import_pairs FILE.jsonl [FILE.jsonl ...] --audio-root DIR [--study NAME] [--skip-invalid]"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotation.dataset import DEFAULT_STUDY, pairs_import
from common.errors import ServiceError


class Command(BaseCommand):
    help = "Import CMI-RewardBench / CMI-Pref JSONL pairs and votes. Every row is checked first; nothing is written unless all rows are valid."

    def add_arguments(self, parser):
        parser.add_argument("files", nargs="+", metavar="FILE.jsonl", help="One or more JSONL files (e.g. train.jsonl test.jsonl).")
        parser.add_argument("--audio-root", required=True, help="Folder the rows' audio paths are relative to.")
        parser.add_argument("--study", default=DEFAULT_STUDY, help=f"Study the pairs go into (created if missing; default {DEFAULT_STUDY}).")
        parser.add_argument("--skip-invalid", action="store_true", help="Import the valid rows and report the invalid ones.")

    def handle(self, *args, files, audio_root, study, skip_invalid, **options):
        try:
            report = pairs_import(files=files, audio_root=audio_root, study_name=study, skip_invalid=skip_invalid)
        except ServiceError as exc:
            raise CommandError(exc.message) from None
        for error in report.errors:
            self.stderr.write(f"error: {error}")
        for warning in report.warnings:
            self.stderr.write(f"warning: {warning}")
        self.stdout.write(report.summary())
        if report.errors:
            if report.imported:
                raise CommandError(f"{report.error_count} invalid rows were skipped; the {report.valid_rows} valid rows were imported.")
            raise CommandError(f"{report.error_count} invalid rows; nothing was imported. Fix them, or pass --skip-invalid to import the valid rows.")
