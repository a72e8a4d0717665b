import json

from django.core.management.base import BaseCommand, CommandError

from arena.leaderboard import BOARDS, METHODS, MUSIC_ARENA, boards_for_method
from arena.release import boards_from_release
from arena.selectors import vocal_systems, vote_rows
from arena.services import leaderboard_options

# Options only our method has: Music Arena's fixes them (both_bad dropped, mean centred at 1000).
AUDITORIUM_ONLY = ("both_bad", "anchor", "anchor_rating")


class Command(BaseCommand):
    help = "Print the arena leaderboard, fitted from the stored votes or rebuilt from a released battle log."

    def add_arguments(self, parser):
        parser.add_argument("--json", action="store_true", help="print JSON (system, rating, lower, upper, rank, votes per board)")
        parser.add_argument("--from-release", metavar="FILE", help="battles.jsonl or battles.parquet of a release")
        parser.add_argument("--board", choices=BOARDS, help="only this board")
        parser.add_argument(
            "--method",
            choices=METHODS,
            help="auditorium (ours: Bradley-Terry, percentile intervals, rank by interval overlap) or music-arena "
            "(Music Arena's: logistic regression with C=1, interval ± 1.96 sd, rank by rating, boards split by capability); "
            "default ARENA_LEADERBOARD_METHOD",
        )
        parser.add_argument("--rounds", type=int, help="bootstrap rounds (default ARENA_LEADERBOARD_ROUNDS)")
        parser.add_argument("--seed", type=int, help="bootstrap seed (default ARENA_LEADERBOARD_SEED)")
        parser.add_argument("--both-bad", choices=["exclude", "tie"], help="how both_bad votes count (auditorium method)")
        parser.add_argument("--anchor", help="system held at --anchor-rating instead of centring the mean at 1000 (auditorium method)")
        parser.add_argument("--anchor-rating", type=float)
        parser.add_argument("--min-votes", type=int, help="hide systems with fewer votes (music-arena default 30)")
        parser.add_argument("--refresh", action="store_true", help="also store the result as the live board and push it to open pages")

    def handle(self, *args, **opts):
        options = leaderboard_options(opts["method"])
        if options["method"] == MUSIC_ARENA:
            given = [f"--{key.replace('_', '-')}" for key in AUDITORIUM_ONLY if opts.get(key) is not None]
            if given:
                raise CommandError(f"{', '.join(given)} do not apply to --method music-arena: it drops both_bad votes and centres the mean at 1000.")
        for key in ("rounds", "seed", "both_bad", "anchor", "anchor_rating", "min_votes"):
            if opts.get(key) is not None:
                options[key] = opts[key]
        if options["rounds"] < 0:
            raise CommandError("--rounds must be 0 or more")
        try:
            if opts["from_release"]:
                result = boards_from_release(opts["from_release"], **options)
            else:
                rows, hidden = vote_rows()
                result = boards_for_method(rows, hidden=hidden, vocal=vocal_systems(), **options)
        except (OSError, ValueError, KeyError) as exc:
            raise CommandError(str(exc)) from None
        if opts["refresh"]:
            if opts["from_release"]:
                raise CommandError("--refresh stores the board of the stored votes; it cannot be combined with --from-release")
            from arena.consumers import leaderboard_broadcast
            from arena.services import leaderboard_refresh

            leaderboard_broadcast(leaderboard_refresh(**options).payload)
        if opts["board"]:
            result["boards"] = {opts["board"]: result["boards"][opts["board"]]}
        if opts["json"]:
            self.stdout.write(json.dumps(result, indent=2, sort_keys=True))
            return
        for name, board in result["boards"].items():
            self.stdout.write(f"{name} board ({result['method']}): {board['votes']} votes, {board['rounds']} bootstrap rounds")
            if board.get("seeded_votes"):
                self.stdout.write(f"  includes {board['seeded_votes']} seeded demo votes (source = seeded; no one listened)")
            if not board["rows"]:
                self.stdout.write("  (no system has enough votes yet)")
            for row in board["rows"]:
                self.stdout.write(
                    f"  {row['rank']:>3}  {row['system']:<24} {row['rating']:8.1f}  [{row['lower']:.1f}, {row['upper']:.1f}]  {row['votes']} votes"
                )
