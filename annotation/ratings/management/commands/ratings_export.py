"""python manage.py ratings_export STUDY --out DIR [--audio]  |  python manage.py ratings_export --import DIR --name NAME [--audio-root ROOT]"""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Study
from annotation.ratings import exports
from common.errors import ServiceError

FILES = ("datasheet.json", "mos.jsonl", "ratings.jsonl", "implied_pairs.jsonl")


class Command(BaseCommand):
    help = "Write a rating study's files (mos.jsonl, ratings.jsonl, implied_pairs.jsonl, datasheet.json, loudness.csv, with --audio its clips) to DIR, or build a study from them and their audio (--import)."

    def add_arguments(self, parser):
        parser.add_argument("study", nargs="?", help="The rating study to export.")
        parser.add_argument("--out", help="Folder to write the files into (created if missing).")
        parser.add_argument("--import", dest="import_dir", help="Folder of an earlier export to build a new study from.")
        parser.add_argument("--name", help="Name of the study the import creates.")
        parser.add_argument("--audio", action="store_true", help="Also write the clips the files name into DIR/audio/, so that an import elsewhere brings them.")
        parser.add_argument("--audio-root", help="Import: the folder the rows' audio/ paths are under (default: the imported folder itself).")

    def handle(self, *args, study=None, out=None, import_dir=None, name=None, audio=False, audio_root=None, **options):
        try:
            if import_dir:
                if not name:
                    raise CommandError("--import needs --name for the new study.")
                folder = Path(import_dir)
                files = {f: (folder / f).read_bytes() for f in FILES if (folder / f).is_file()}
                made = exports.ratings_import(files=files, name=name, audio_root=audio_root or folder)
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
            if audio:
                clips = exports.ratings_export_audio(study=found)
                for path, clip in clips.items():
                    (folder / path).parent.mkdir(parents=True, exist_ok=True)
                    with clip.file.open("rb") as handle:
                        (folder / path).write_bytes(handle.read())
                self.stdout.write(f"  {folder / 'audio'}  {len(clips)} clips")
        except ServiceError as exc:
            raise CommandError(exc.message) from None
