"""python manage.py backfill_loudness [--study NAME] [--batch-size N] [--remeasure]"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Study
from annotation.selectors import study_clips
from annotation.services import clip_loudness_backfill
from common.errors import ServiceError


class Command(BaseCommand):
    help = (
        "Measure the BS.1770 loudness and true peak of clips stored before ingest measured them, so loudness-matched "
        "studies level them too. Clips measured already are left alone; a file that cannot be read is reported and skipped."
    )

    def add_arguments(self, parser):
        parser.add_argument("--study", help="Only the clips one study plays (default: every clip).")
        parser.add_argument("--batch-size", type=int, default=100, help="Clips read and written per transaction (default 100).")
        parser.add_argument("--remeasure", action="store_true", help="Measure every clip again, measured or not.")

    def handle(self, *args, study=None, batch_size=100, remeasure=False, **options):
        clips = None
        if study:
            found = Study.objects.filter(name=study).first()
            if found is None:
                raise CommandError(f"No study named {study!r}.")
            clips = study_clips(study=found)

        def progress(done: int, total: int) -> None:
            self.stdout.write(f"{done} of {total} clips read")

        try:
            report = clip_loudness_backfill(clips=clips, batch_size=batch_size, remeasure=remeasure, progress=progress)
        except ServiceError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(report.summary())
        if report.failed:
            self.stderr.write(f"{len(report.failed)} clip(s) could not be read: see above; fix or replace their files and run the command again.")
