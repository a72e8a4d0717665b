from django.core.management.base import BaseCommand

from arena.release import release_export


class Command(BaseCommand):
    help = "Export the public battle log (battles.jsonl, battles.parquet and audio/) to a folder."

    def add_arguments(self, parser):
        parser.add_argument("out_dir")
        parser.add_argument("--no-audio", action="store_true", help="rows only")
        parser.add_argument("--no-parquet", action="store_true", help="JSONL only")
        parser.add_argument(
            "--include-seeded", action="store_true", help="also publish the seeded demo votes (source = seeded; no one listened); left out by default"
        )

    def handle(self, *args, **opts):
        result = release_export(out_dir=opts["out_dir"], audio=not opts["no_audio"], parquet=not opts["no_parquet"], include_seeded=opts["include_seeded"])
        self.stdout.write(f"{result['battles']} battles and {result['audio_files']} audio files written to {result['path']}")
        if result["seeded"]:
            self.stdout.write(f"{result['seeded']} of the battles are seeded demo votes (source = seeded)")
        elif result["seeded_left_out"]:
            self.stdout.write(f"{result['seeded_left_out']} seeded demo votes left out (--include-seeded publishes them)")
