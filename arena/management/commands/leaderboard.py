import json

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from arena.boards import boards_all
from arena.leaderboard import BOARDS, METHODS, MUSIC_ARENA
from arena.release import boards_from_release
from arena.selectors import vocal_systems, vote_rows
from arena.services import leaderboard_extras, leaderboard_options
from arena.style import COVARIATES, covariates_check

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
        parser.add_argument(
            "--style-control",
            action="store_true",
            help="add each board's style-controlled fit (arena/style.py): ratings, ranks and intervals with the style covariates, "
            "each covariate's coefficient, and the rank change (auditorium method)",
        )
        parser.add_argument("--covariates", help="comma-separated style covariates (default ARENA_STYLE_COVARIATES): " + ", ".join(COVARIATES))
        parser.add_argument("--categories", action="store_true", help="add the category boards: language, prebaked or typed prompt, genre and mood (auditorium method)")
        parser.add_argument(
            "--screen", action="store_true", help="add the outlier-voter screen and the board without flagged visitors, repeated prompts down-weighted (auditorium method)"
        )
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
        # Style control when asked for, and on --refresh as the live board has it (its options are the ones printed).
        wanted = opts["style_control"] or opts["covariates"] is not None or (opts["refresh"] and options.get("style"))
        if wanted and options["method"] == MUSIC_ARENA:
            raise CommandError("--style-control fits our method; Music Arena's method has no style control (use --method auditorium).")
        options.pop("style", None)
        if wanted:
            try:
                covariates = covariates_check(opts["covariates"].split(",")) if opts["covariates"] is not None else covariates_check(settings.ARENA_STYLE_COVARIATES)
            except ValueError as exc:
                raise CommandError(str(exc)) from None
            if not covariates:
                raise CommandError("no style covariate named: give --covariates or set ARENA_STYLE_COVARIATES")
            options["style"] = covariates
        extras = leaderboard_extras()
        for name in ("categories", "screen"):
            if opts[name] or (opts["refresh"] and options["method"] != MUSIC_ARENA):
                if options["method"] == MUSIC_ARENA:
                    raise CommandError(f"--{name} applies to our method only (use --method auditorium).")
                options[name] = extras[name]
                if name == "screen":
                    options[name] = {**options[name], "seed": options["seed"]}
        try:
            if opts["from_release"]:
                result = boards_from_release(opts["from_release"], **options)
            else:
                rows, hidden = vote_rows()
                result = boards_all(rows, hidden=hidden, vocal=vocal_systems(), **options)
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
            style = board.get("style")
            if style is not None:
                self._style(style)
        if "categories" in result:
            self._categories(result["categories"])
        if "screen" in result:
            self._screen(result["screen"])

    def _categories(self, categories: dict) -> None:
        for family in categories["families"].values():
            self.stdout.write(f"{family['label']}:")
            for value, board in family["values"].items():
                if board["too_few"]:
                    self.stdout.write(f"  {value}: {board['votes']} votes, too few for a board (needs {categories['min_votes']})")
                    continue
                order = ", ".join(f"{r['rank']}. {r['system']} {r['rating']:.0f}" for r in board["rows"]) or "no system listed"
                self.stdout.write(f"  {value} ({board['votes']} votes): {order}")

    def _screen(self, screen: dict) -> None:
        self.stdout.write(
            f"outlier screen: {screen['tested']} of {screen['visitors']} visitors tested (from {screen['min_votes']} decided votes), "
            f"{len(screen['flagged'])} flagged at a false-positive rate of {screen['fp_rate']:g}; "
            f"{screen['flagged_votes_left_out']} of their votes left out, {screen['repeated_votes']} repeated-prompt votes down-weighted"
        )
        for f in screen["flagged"]:
            self.stdout.write(f"  {f['visitor']}: {f['votes']} votes, log-likelihood {f['log_likelihood']:.1f} (expected {f['expected']:.1f}), p = {f['p_value']:.4f}")
        for name, board in screen["boards"].items():
            order = ", ".join(f"{r['rank']}. {r['system']} {r['rating']:.0f}" for r in board["rows"]) or "no system listed"
            self.stdout.write(f"  screened {name} ({board['votes']} votes, weighing {board['weighted_votes']:g}): {order}")

    def _style(self, style: dict) -> None:
        left = f", {style['left_out']} left out for a missing covariate" if style["left_out"] else ""
        self.stdout.write(f"  style-controlled ({style['votes']} votes{left}):")
        for row in style["rows"]:
            change = "" if row["rank_change"] is None else f"  rank {row['plain_rank']} -> {row['rank']}"
            low, high = row["interval"]
            self.stdout.write(f"  {row['rank']:>3}  {row['system']:<24} {row['rating']:8.1f}  [{low:.1f}, {high:.1f}]{change}")
        for name, c in style["covariates"].items():
            low, high = c["interval"]
            self.stdout.write(f"       {name:<20} {c['coefficient']:+.3f} log-odds per {c['scale']:g} {c['unit']}  [{low:+.3f}, {high:+.3f}]")
        if style["constant"]:
            self.stdout.write(f"       no variation on this board, not fitted: {', '.join(style['constant'])}")
