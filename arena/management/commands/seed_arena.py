from django.core.management.base import BaseCommand

from arena.seed import arena_seed
from arena.seed_votes import seeded_votes_seed


class Command(BaseCommand):
    help = (
        "Register the built-in demo systems and the prebaked prompt pool, and cast the seeded demo votes between the "
        "demo systems so the leaderboard ranks them (safe to run again: nothing is added twice)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--no-votes", action="store_true", help="systems and prompts only; no seeded demo votes")

    def handle(self, *args, **options):
        result = arena_seed()
        self.stdout.write(
            f"arena: {result['systems']} systems ({result['systems_created']} new), {result['prompts']} prebaked prompts ({result['prompts_created']} new)"
        )
        if options["no_votes"]:
            return
        from arena.selectors import leaderboard_latest
        from arena.services import leaderboard_refresh

        votes = seeded_votes_seed()
        self.stdout.write(
            f"arena: {votes['seeded']} seeded demo votes ({votes['created']} new; labelled source=seeded, left out of releases unless asked)"
        )
        # The board is read from its latest fit: refit now, so the first visit already shows the ranking.
        if votes["created"] or leaderboard_latest() is None:
            snapshot = leaderboard_refresh()
            self.stdout.write(f"arena: leaderboard fitted on {snapshot.votes} votes")
