"""python manage.py ratings_export STUDY --out DIR  |  python manage.py ratings_export --import DIR --name NAME"""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Study
from annotation.ratings import exports
from common.errors import ServiceError

FILES = ("datasheet.json", "mos.jsonl", "ratings.jsonl", "implied_pairs.jsonl")


class Command(BaseCommand):
    help = "Write a rating study's files (mos.jsonl, ratings.jsonl, implied_pairs.jsonl, datasheet.json) to DIR, or build a study from them (--import)."

    def add_arguments(self, parser):
        parser.add_argument("study", nargs="?", help="The rating study to export.")
        parser.add_argument("--out", help="Folder to write the files into (created if missing).")
        parser.add_argument("--import", dest="import_dir", help="Folder of an earlier export to build a new study from.")
        parser.add_argument("--name", help="Name of the study the import creates.")

    def handle(self, *args, study=None, out=None, import_dir=None, name=None, **options):
        try:
            if import_dir:
                if not name:
                    raise CommandError("--import needs --name for the new study.")
                folder = Path(import_dir)
                files = {f: (folder / f).read_bytes() for f in FILES if (folder / f).is_file()}
                made = exports.ratings_import(files=files, name=name)
                self.stdout.write(f"Imported study {made.name!r}: {made.rating_items.count()} items (closed; open it on its page when ready).")
                return
            if not study or not out:
                raise CommandError("Give a study and --out DIR (or --import DIR --name NAME).")
            found = Study.objects.filter(name=study).first()
            if found is None:
                raise CommandError(f"No study named {study!r}.")
            folder = Path(out)
            folder.mkdir(parents=True, exist_ok=True)
            for filename, data in exports.ratings_export(study=found).items():
                (folder / filename).write_bytes(data)
                self.stdout.write(f"  {folder / filename}  {len(data):,} bytes")
        except ServiceError as exc:
            raise CommandError(exc.message) from None
