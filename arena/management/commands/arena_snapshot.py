from django.core.management.base import BaseCommand, CommandError

from arena.history import board_snapshot_take, board_snapshots_fill
from common.errors import ServiceError


class Command(BaseCommand):
    help = "Snapshot every arena board (docs/arena.md, History): now, at the end of one month, or every month missing."

    def add_arguments(self, parser):
        which = parser.add_mutually_exclusive_group()
        which.add_argument("--month", metavar="YYYY-MM", help="the boards at the end of this month (replaces that month's snapshot)")
        which.add_argument("--missing", action="store_true", help="every month from the first vote to the last one ended that has no snapshot yet")

    def handle(self, *args, **opts):
        try:
            if opts["missing"]:
                taken = board_snapshots_fill()
                self.stdout.write(f"{len(taken)} monthly snapshots taken" + (f": {', '.join(taken)}" if taken else " (none missing)"))
                return
            snapshot = board_snapshot_take(month=opts["month"])
        except ServiceError as exc:
            raise CommandError(str(exc)) from None
        label = f"end of {snapshot.period}" if snapshot.period else "now"
        self.stdout.write(f"boards snapshot ({label}): {snapshot.votes} votes before {snapshot.cutoff.isoformat()}")
