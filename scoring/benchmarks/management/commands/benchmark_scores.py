from __future__ import annotations

import json

from django.core.management.base import BaseCommand

from scoring.benchmarks import selectors
from scoring.evaluation import DIMENSIONS

from ._common import benchmark_named


class Command(BaseCommand):
    help = "Print every submission's accuracy, interval, n and significance group per dimension (operator view: all parts)."

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--part", choices=selectors.PARTS, help="Default: the part the leaderboard shows (public while open, private after).")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, **opts):
        benchmark = benchmark_named(opts["name"])
        part = opts["part"] or (selectors.ALL if benchmark.is_dev else selectors.shown_part(benchmark))
        if benchmark.is_mos:
            return self._mos(benchmark, part, as_json=opts["json"])
        frame = selectors.load_frame(benchmark)
        names = {s.pk: s for s in frame.submissions}
        out = {"benchmark": benchmark.name, "version": benchmark.version, "state": benchmark.state, "part": part, "rounds": benchmark.bootstrap_rounds, "dimensions": {}}
        for dim in DIMENSIONS:
            table = selectors.scores(benchmark, part=part, dim=dim, frame=frame)
            rows = [
                {
                    "submission": r["submission"],
                    "team": names[r["submission"]].team.name,
                    "label": names[r["submission"]].label,
                    "accuracy": r["accuracy"],
                    "interval": r["ci"],
                    "n": r["n"],
                    "answered": r["answered"],
                    "group": r["rank"],
                    "errors": r["errors"],
                }
                for r in table["rows"]
            ]
            rows.sort(key=lambda r: (r["group"], -(r["accuracy"] or 0.0)))
            pairs = [
                {
                    "a": pair["a"],
                    "b": pair["b"],
                    "bootstrap_p_holm": pair["bootstrap_p"],
                    "mcnemar": {"a_right_b_wrong": pair["a_only"], "b_right_a_wrong": pair["b_only"], "p": pair["mcnemar_p"], "p_holm": pair["mcnemar_p_holm"]},
                }
                for pair in selectors.pair_rows(table, names)
            ]
            out["dimensions"][dim] = {"n": table["n"], "chance": table["chance"], "ceiling": table["ceiling"], "submissions": rows, "pairwise": pairs}
        if opts["json"]:
            self.stdout.write(json.dumps(out, indent=2))
            return
        for dim, block in out["dimensions"].items():
            self.stdout.write(f"{dim} ({part}, n={block['n']}, chance {block['chance']}, ceiling {block['ceiling']['accuracy']})")
            for r in block["submissions"]:
                ci = "—" if r["interval"] is None else f"[{r['interval'][0]:.3f}, {r['interval'][1]:.3f}]"
                acc = "—" if r["accuracy"] is None else f"{r['accuracy']:.3f}"
                self.stdout.write(f"  group {r['group']}  {r['team']}/{r['label'] or r['submission']}: {acc} {ci} answered {r['answered']}/{r['n']}")

    def _mos(self, benchmark, part: str, *, as_json: bool) -> None:
        """A MOS benchmark: SRCC, interval, n, answered and group per submission and dimension, with the human ceiling."""
        frame = selectors.load_mos_frame(benchmark)
        names = {s.pk: s for s in frame.submissions}
        out = {"benchmark": benchmark.name, "version": benchmark.version, "kind": benchmark.kind, "state": benchmark.state, "part": part, "rounds": benchmark.bootstrap_rounds, "dimensions": {}}
        for dim in DIMENSIONS:
            table = selectors.mos_scores(benchmark, part=part, dim=dim, frame=frame)
            rows = [{**r, "team": names[r["submission"]].team.name, "label": names[r["submission"]].label, "interval": r.pop("ci"), "group": r.pop("rank")} for r in (dict(r) for r in table["rows"])]
            rows.sort(key=lambda r: (r["group"], -(r["srcc"] or 0.0)))
            out["dimensions"][dim] = {"n": table["n"], "ceiling": table["ceiling"], "submissions": rows, "p": table["p"]}
        if as_json:
            self.stdout.write(json.dumps(out, indent=2))
            return
        for dim, block in out["dimensions"].items():
            self.stdout.write(f"{dim} ({part}, n={block['n']}, ceiling {block['ceiling']['srcc']} (halves {block['ceiling']['srcc_half']}))")
            for r in block["submissions"]:
                ci = "—" if not r["interval"] or r["interval"][0] is None else f"[{r['interval'][0]:.3f}, {r['interval'][1]:.3f}]"
                srcc = "—" if r["srcc"] is None else f"{r['srcc']:.3f}"
                self.stdout.write(f"  group {r['group']}  {r['team']}/{r['label'] or r['submission']}: SRCC {srcc} {ci} answered {r['answered']}/{r['n']}")
