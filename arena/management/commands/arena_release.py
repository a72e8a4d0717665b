from django.core.management.base import BaseCommand, CommandError

from arena.release import release_export
from common.errors import ServiceError


class Command(BaseCommand):
    help = "Export the public battle log (battles.jsonl, battles.parquet and audio/) to a folder."

    def add_arguments(self, parser):
        parser.add_argument("out_dir")
        parser.add_argument("--no-audio", action="store_true", help="rows only")
        parser.add_argument("--no-parquet", action="store_true", help="JSONL only")
        parser.add_argument(
            "--include-seeded", action="store_true", help="also publish the seeded demo votes (source = seeded; no one listened); left out by default"
        )

        parser.add_argument("--month", metavar="YYYY-MM", help="only the battles voted in this month (UTC); the release's README and stats.json give its statistics")

    def handle(self, *args, **opts):
        try:
            result = release_export(
                out_dir=opts["out_dir"], audio=not opts["no_audio"], parquet=not opts["no_parquet"], include_seeded=opts["include_seeded"], month=opts["month"]
            )
        except ServiceError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"{result['battles']} battles and {result['audio_files']} audio files written to {result['path']}")
        stats = result["stats"]
        votes = ", ".join(f"{n} {choice}" for choice, n in stats["votes"].items())
        self.stdout.write(
            (f"{stats['month']}: " if stats["month"] else "")
            + f"{stats['battles']} battles ({votes}), {stats['instrumental']} instrumental, {stats['vocal']} vocal, {stats['visitors']} visitors"
        )
        for name, n in stats["system_appearances"].items():
            self.stdout.write(f"  {name}: {n} clips")
        if result["seeded"]:
            self.stdout.write(f"{result['seeded']} of the battles are seeded demo votes (source = seeded)")
        elif result["seeded_left_out"]:
            self.stdout.write(f"{result['seeded_left_out']} seeded demo votes left out (--include-seeded publishes them)")
