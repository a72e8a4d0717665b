"""Pseudo-label runs: a judge labels pairs without votes in both orders; the consistent labels export as CMI-Pref-Pseudo.

    python manage.py pseudo_labels --judge KEY --study NAME          # the study's pairs without votes
    python manage.py pseudo_labels --judge KEY --pairs 12,13,14      # an imported pool, by pair id
    python manage.py pseudo_labels --run ID --bias [--json]          # the judge's position-bias table
    python manage.py pseudo_labels --run ID --export DIR             # pseudo.jsonl and the audio it names
"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Study
from common.errors import ServiceError
from scoring import pseudo, services
from scoring.models import Judge, ScoringRun


def _cell(block) -> str:
    if not block:
        return "—"
    ci = block.get("ci")
    return f"{block['value']:.3f}" + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "")


class Command(BaseCommand):
    help = "Pseudo-label pairs without votes with a judge (both orders, consistent labels kept); print its bias table or export the labels."

    def add_arguments(self, parser):
        parser.add_argument("--judge", help="judge key (any kind that gives pair preferences)")
        parser.add_argument("--study", help="label this study's regular pairs that have no votes")
        parser.add_argument("--pairs", help="label these pair ids (comma-separated; they must have no votes)")
        parser.add_argument("--run", type=int, help="an existing run, for --bias or --export")
        parser.add_argument("--bias", action="store_true", help="print the run's position-bias table")
        parser.add_argument("--export", metavar="DIR", help="write the run's kept labels as CMI-Pref-Pseudo JSONL into DIR (new or empty)")
        parser.add_argument("--rounds", type=int, default=1000, help="bootstrap rounds of the bias intervals; default %(default)s")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, **o):
        try:
            if o["run"] is None:
                run = self._create(o)
            else:
                run = ScoringRun.objects.select_related("judge").filter(pk=o["run"]).first()
                if run is None:
                    raise CommandError(f"No scoring run {o['run']}.")
            out = {"run": run.pk, "state": run.state, "purpose": run.purpose, "total": run.total}
            if o["bias"] or o["run"] is None:
                out["bias"] = pseudo.run_bias(run, rounds=o["rounds"])
            if o["export"]:
                out["export"] = pseudo.pseudo_export(run=run, out=o["export"])
        except ServiceError as exc:
            raise CommandError(exc.message) from None
        if o["json"]:
            self.stdout.write(json.dumps(out, indent=2))
            return
        self.stdout.write(f"run {run.pk} ({run.purpose}, {run.state}): {run.total} pairs")
        for dim, block in (out.get("bias") or {}).get("table", {}).items():
            self.stdout.write(
                f"  {dim:<11} pairs {block['pairs']:>5}  A {_cell(block.get('a_share'))}  B {_cell(block.get('b_share'))}  "
                f"tie {_cell(block.get('tie_share'))}  consistent {_cell(block.get('consistency'))}"
            )
        if "export" in out:
            e = out["export"]
            self.stdout.write(f"wrote {e['rows']} rows ({e['file']}, source {e['source']}) and {e['files']} audio files; left out: {e['left_out'] or 'none'}")

    def _create(self, o) -> ScoringRun:
        if not o["judge"]:
            raise CommandError("Give --judge (and --study or --pairs), or --run.")
        judge = Judge.objects.filter(key=o["judge"]).first()
        if judge is None:
            raise CommandError(f"No judge {o['judge']!r}.")
        study = pair_ids = None
        if o["study"]:
            study = Study.objects.filter(name=o["study"]).first()
            if study is None:
                raise CommandError(f"No study {o['study']!r}.")
        if o["pairs"]:
            try:
                pair_ids = [int(p) for p in o["pairs"].split(",") if p.strip()]
            except ValueError:
                raise CommandError("--pairs must be comma-separated pair ids.") from None
        run = services.pseudo_run_create(judge=judge, study=study, pair_ids=pair_ids)
        run.refresh_from_db()
        return run
