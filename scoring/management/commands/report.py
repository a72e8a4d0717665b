"""Print a study's report: a short summary, the whole report as JSON, or one table as CSV.

    python manage.py report --study NAME                    # summary
    python manage.py report --study NAME --json [--out F]   # the same dict as GET /api/studies/NAME/report/
    python manage.py report --study NAME --table annotators # one table as CSV
    python manage.py report --study NAME --exclude PSEUDONYM --reason "..." --by USERNAME
    python manage.py report --study NAME --include PSEUDONYM --by USERNAME
"""

from __future__ import annotations

import json
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from annotation.models import AnnotatorProfile, Study
from common.errors import ServiceError
from scoring.agreement import THRESHOLD_HELP, Thresholds
from scoring.evaluation import DIMENSIONS
from scoring.report import report_build, report_options_parse
from scoring.report_tables import TABLES, report_tables, table_csv
from scoring.services import annotator_exclude, annotator_include


class Command(BaseCommand):
    help = "Human agreement, annotator quality and judge-vs-human figures for one study."

    def add_arguments(self, parser):
        parser.add_argument("--study", required=True, help="study name (slug)")
        output = parser.add_mutually_exclusive_group()
        output.add_argument("--json", action="store_true", help="print the whole report as JSON")
        output.add_argument("--table", choices=TABLES, help="print one table as CSV")
        parser.add_argument("--out", help="write to this file instead of standard output")
        defaults = Thresholds()
        parser.add_argument("--min-votes", type=int, default=defaults.min_votes, help=f"{THRESHOLD_HELP['min_votes']} (default %(default)s)")
        parser.add_argument("--agreement-p", type=float, default=defaults.agreement_p, help=f"{THRESHOLD_HELP['agreement_p']} (default %(default)s)")
        parser.add_argument("--gold-min", type=float, default=defaults.gold_min, help=f"{THRESHOLD_HELP['gold_min']} (default %(default)s)")
        parser.add_argument("--straightline-p", type=float, default=defaults.straightline_p, help=f"{THRESHOLD_HELP['straightline_p']} (default %(default)s)")
        parser.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples of pairs for 95%% intervals (default %(default)s)")
        parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default %(default)s)")
        parser.add_argument("--triage", type=int, default=10, help="disagreements listed per judge (default %(default)s)")
        parser.add_argument("--include-seeded", action="store_true", help="count the demo's seeded votes (no one listened) as demo data")
        exclusion = parser.add_mutually_exclusive_group()
        exclusion.add_argument("--exclude", metavar="PSEUDONYM", help="leave this annotator out of analysis and export (needs --reason and --by)")
        exclusion.add_argument("--include", metavar="PSEUDONYM", help="include an excluded annotator again (needs --by)")
        parser.add_argument("--reason", default="", help="why (recorded with the exclusion)")
        parser.add_argument("--by", help="username of the researcher making the change (recorded)")

    def handle(self, *args, **opts):
        study = Study.objects.filter(name=opts["study"]).first()
        if study is None:
            names = ", ".join(Study.objects.order_by("name").values_list("name", flat=True)[:20]) or "none yet"
            raise CommandError(f"No study named {opts['study']!r}. Studies: {names}.")
        try:
            options = report_options_parse(
                {
                    "min_votes": opts["min_votes"],
                    "agreement_p": opts["agreement_p"],
                    "gold_min": opts["gold_min"],
                    "straightline_p": opts["straightline_p"],
                    "bootstrap": opts["bootstrap"],
                    "seed": opts["seed"],
                    "triage": opts["triage"],
                    "include_seeded": "1" if opts["include_seeded"] else "",
                }
            )
            if opts["exclude"] or opts["include"]:
                self._exclusion(opts)
        except ServiceError as exc:
            raise CommandError(exc.message) from None

        report = report_build(study=study, options=options, use_cache=False)
        if opts["json"]:
            text = json.dumps(report, indent=2, ensure_ascii=False) + "\n"
        elif opts["table"]:
            text = table_csv(report_tables(report)[opts["table"]])
        else:
            text = self._summary(report)
        if opts["out"]:
            Path(opts["out"]).write_text(text, encoding="utf-8")
            self.stderr.write(f"wrote {opts['out']}")
        else:
            self.stdout.write(text, ending="")

    def _exclusion(self, opts) -> None:
        if not opts["by"]:
            raise CommandError("--by USERNAME is required: exclusions record who made them.")
        by = get_user_model().objects.filter(username=opts["by"]).first()
        if by is None:
            raise CommandError(f"No user named {opts['by']!r}.")
        pseudonym = opts["exclude"] or opts["include"]
        profile = AnnotatorProfile.objects.filter(pseudonym=pseudonym).first()
        if profile is None:
            raise CommandError(f"No annotator with pseudonym {pseudonym!r}.")
        if opts["exclude"]:
            annotator_exclude(profile=profile, by=by, reason=opts["reason"])
            self.stderr.write(f"{pseudonym} excluded")
        else:
            annotator_include(profile=profile, by=by, reason=opts["reason"])
            self.stderr.write(f"{pseudonym} included again")

    @staticmethod
    def _summary(report: dict) -> str:
        def pct(value):
            return "–" if value is None else f"{100 * value:.1f}%"

        s = report["study"]
        lines = [f"{s['title']} ({s['name']}): {s['votes']} votes on {s['pairs_with_votes']} of {s['pairs']} pairs by {s['annotators']} annotators"]
        if s["excluded_annotators"]:
            lines.append(f"  excluded: {s['excluded_annotators']} annotators, {s['excluded_votes']} votes")
        for dim in DIMENSIONS:
            a = report["agreement"][dim]
            lines.append(
                f"  {dim:<10} pairs>=2 {a['pairs']}, vote pairs {a['vote_pairs']}, agreement {pct(a['agreement_rate'])} {a['agreement_ci']}, alpha {a['alpha']} {a['alpha_ci']}"
            )
        cross = report["confidence"]["cross_dimension"]
        lines.append(f"  alignment and musicality pick the same clip in {pct(cross['agreement_rate'])} of votes")
        flagged = [a for a in report["annotators"] if a["flags"] and not a["excluded"]]
        lines.append(f"  annotators flagged: {len(flagged)}" + (": " + ", ".join(f"{a['pseudonym']} ({a['flag_codes']})" for a in flagged) if flagged else ""))
        for judge in report["judges"]:
            dims = ", ".join(f"{d} {pct(judge['dimensions'][d]['accuracy'])} (n={judge['dimensions'][d]['n']})" for d in DIMENSIONS)
            lines.append(f"  judge {judge['label']}: {dims}; discarded {pct(judge['discard_rate'])}")
        for result_set in report["external"]:
            for f in result_set["figures"]:
                if f["metric"] in ("accuracy", "srcc"):
                    lines.append(f"  {result_set['name']} {f['subset']} {f['dimension']} {f['metric']}({f['score']}) = {f['value']} (published {f['published']}, n={f['n']})")
        lines.extend(Command._systems(report.get("systems") or {}))
        return "\n".join(lines) + "\n"

    @staticmethod
    def _systems(section: dict) -> list[str]:
        """Which system won, as the page says it: strengths by rank, then one sentence per comparison."""
        if len(section.get("systems", [])) < 2:
            return []
        lines = ["  which system won:"]
        for dim, block in section["dimensions"].items():
            if section["kind"] == "pairwise":
                order = ", ".join(f"{r['rank']}. {r['system']} {r['strength']:+.2f}" + (f" [{r['lower']:+.2f}, {r['upper']:+.2f}]" if r["lower"] is not None else "") for r in block["strengths"] if r["strength"] is not None)
                lines.append(f"    {dim} strengths: {order or 'no votes between systems yet'}")
                lines.extend(f"      {sentence}" for sentence in block["sentences"])
                if (block.get("weighted") or {}).get("disagrees"):
                    lines.append("      weighted by annotator reliability, the answer changes:")
                    lines.extend(f"        {sentence}" for sentence in block["weighted"]["sentences"])
            else:
                lines.append(f"    {dim}:")
                lines.extend(f"      {row['sentence']}" for row in block["differences"])
        return lines
