"""Import published per-row judge results and print the CMI-RewardBench figures; or print a run's comparison."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from common.errors import ServiceError
from scoring import services
from scoring.models import ScoringRun


def headline(computed: dict) -> dict:
    """The four figures TuneJury publishes, from a computed external summary."""
    out = {}
    cmi = computed.get("CMI-Pref")
    if cmi:
        out["CMI-Pref musicality accuracy"] = cmi["musicality"]["all"]
        out["CMI-Pref alignment accuracy"] = cmi["alignment"]["all"]
    arena = computed.get("Music Arena")
    if arena:
        out["Music Arena musicality accuracy"] = arena["musicality"]
    for name in ("PAM", "MusicEval"):
        block = computed.get(name, {}).get("MI_vs_musicality_mos")
        if block:
            out[f"{name} SRCC (MI vs musicality MOS)"] = {"srcc": block["srcc"], "lcc": block["lcc"], "ktau": block["ktau"], "n": block["n"], "intervals": block.get("intervals")}
    return out


class Command(BaseCommand):
    help = (
        "compare_judges --import-results FILE [--name NAME] [--json]  |  compare_judges --run ID [--json]  |  compare_judges --ratings STUDY [--json]"
        "  |  compare_judges --distribution STUDY --judge KEY [--reference-dir FOLDER | --reference-system NAME] [--compute] [--json]"
    )

    def add_arguments(self, parser):
        parser.add_argument("--import-results", metavar="FILE", help="Per-row results in TuneJury's summary.json shape.")
        parser.add_argument("--name", default="", help="Name of the imported set (default: the file name).")
        parser.add_argument("--judge-name", default="", help="Which judge produced the results (e.g. MuQ-Eval-A1).")
        parser.add_argument("--run", type=int, help="Recompute and print a scoring run's comparison with human votes.")
        parser.add_argument("--ratings", metavar="STUDY", help="A rating study's judges against its MOS (clip and system level, intervals resampling clips).")
        parser.add_argument("--distribution", metavar="STUDY", help="FAD and KAD of each system's clips against a reference set, on an embedding judge's embeddings.")
        parser.add_argument("--judge", default="", help="With --distribution: the embedding judge (kind clap or muq_mulan).")
        parser.add_argument("--reference-dir", default="", help="With --distribution: a folder of reference audio (default: the study's reference clips).")
        parser.add_argument("--reference-system", default="", help="With --distribution: another system's clips as the reference.")
        parser.add_argument("--compute", action="store_true", help="With --distribution: embed clips the cache lacks with the judge's model (and cache them).")
        parser.add_argument("--rounds", type=int, default=200, help="With --distribution: bootstrap resamples (default 200).")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--json", action="store_true", help="Print JSON.")

    def handle(self, *args, **options):
        if sum(bool(options[k]) for k in ("import_results", "run", "ratings", "distribution")) != 1:
            raise CommandError("Give exactly one of --import-results FILE, --run ID, --ratings STUDY or --distribution STUDY.")
        if options["distribution"]:
            self._distribution(options)
            return
        if options["ratings"]:
            self._ratings(options["ratings"], as_json=options["json"])
            return
        if options["run"]:
            run = ScoringRun.objects.filter(pk=options["run"]).first()
            if run is None:
                raise CommandError(f"No scoring run {options['run']}.")
            summary = services.run_compare(run=run)
            self.stdout.write(json.dumps(summary, indent=2) if options["json"] else self._run_text(summary))
            return
        try:
            result_set, created = services.external_results_import(path=options["import_results"], name=options["name"], judge_name=options["judge_name"])
        except ServiceError as exc:
            raise CommandError(exc.message) from None
        figures = {
            "result_set": result_set.name,
            "created": created,
            "rows": result_set.rows.count(),
            "linked_pairs": result_set.rows.filter(pair__isnull=False).count(),
            "headline": headline(result_set.computed_summary),
            "published": result_set.published_summary.get("per_split", result_set.published_summary),
            "computed": result_set.computed_summary,
        }
        if options["json"]:
            self.stdout.write(json.dumps(figures, indent=2))
            return
        self.stdout.write(f"{'imported' if created else 'already imported (nothing changed)'}: {result_set.name}, {figures['rows']} rows")
        for name, value in figures["headline"].items():
            number = value.get("accuracy", value.get("srcc"))
            self.stdout.write(f"  {name:<40} {number:.4f}  (n={value['n']})" if number is not None else f"  {name:<40} —")

    def _ratings(self, name: str, *, as_json: bool) -> None:
        from annotation.models import Study
        from scoring.ratings_report import ratings_section

        study = Study.objects.filter(name=name).first()
        section = ratings_section(study=study, rounds=1000, seed=0) if study is not None else None
        if section is None:
            raise CommandError(f"No rating study named {name!r}.")
        if as_json:
            self.stdout.write(json.dumps(section["judges"], indent=2))
            return
        self.stdout.write(f"{name}: {section['ratings']} ratings of {section['clips']} clips; judges against the MOS (95 % intervals resample clips)")
        for row in section["judges"]:
            for level in ("clip", "system"):
                fig = row[level]
                cells = []
                for metric in ("lcc", "srcc", "ktau"):
                    interval = (fig.get("intervals") or {}).get(metric)
                    cells.append(f"{metric.upper()} {fig[metric]:.4f} [{interval[0]:.4f}, {interval[1]:.4f}]" if fig[metric] is not None and interval else f"{metric.upper()} —")
                self.stdout.write(f"  {row['judge']:<24} {row['dimension']:<11} {level:<6} n={fig['n']:<5} " + "  ".join(cells))

    def _distribution(self, options) -> None:
        from annotation.models import Study
        from scoring.distribution import distribution_compare

        study = Study.objects.filter(name=options["distribution"]).first()
        if study is None:
            raise CommandError(f"No study named {options['distribution']!r}.")
        if not options["judge"]:
            raise CommandError("--distribution needs --judge KEY (an embedding judge: kind clap or muq_mulan).")
        if options["rounds"] < 0:
            raise CommandError("--rounds must be 0 or more.")
        try:
            result = distribution_compare(
                study=study, judge_key=options["judge"], reference_dir=options["reference_dir"], reference_system=options["reference_system"],
                compute=options["compute"], rounds=options["rounds"], seed=options["seed"],
            )
        except ServiceError as exc:
            raise CommandError(exc.message) from None
        if options["json"]:
            self.stdout.write(json.dumps(result, indent=2))
            return
        self.stdout.write(
            f"{result['study']}: FAD and KAD on {result['judge']} ({result['kind']}, version {result['version'] or 'none cached'}) against {result['reference']} "
            f"({result['reference_clips']} clips); 95 % intervals resample clips ({result['rounds']} rounds, seed {result['seed']}); KAD x 100 as kadtk"
        )
        for row in result["rows"]:
            if row.get("fad") is None:
                self.stdout.write(f"  {row['system']:<24} clips {row['clips']:<5} {row.get('note', '')}")
                continue
            fad_ci = f"[{row['fad_lower']:.4f}, {row['fad_upper']:.4f}]" if "fad_lower" in row else ""
            kad_ci = f"[{row['kad_lower']:.4f}, {row['kad_upper']:.4f}]" if "kad_lower" in row else ""
            inf = "—" if row["fad_inf"] is None else f"{row['fad_inf']:.4f}"
            few = "  (no more clips than dimensions: FAD mostly measures the clip count; read KAD)" if row["few_clips"] else ""
            self.stdout.write(f"  {row['system']:<24} clips {row['clips']:<5} FAD {row['fad']:.4f} {fad_ci}  FAD∞ {inf}  KAD {row['kad']:.4f} {kad_ci}{few}")

    @staticmethod
    def _run_text(summary: dict) -> str:
        lines = [f"judge {summary['judge']}: {summary['human_rows']} human votes compared"]
        for dim in ("alignment", "musicality"):
            block = summary["preference"][dim]["all"]
            value = "—" if block["accuracy"] is None else f"{block['accuracy']:.4f}"
            lines.append(f"  {dim:<11} accuracy {value} (n={block['n']})")
        stats = summary["verdicts"]
        lines.append(f"  verdicts {stats['counts']}, discard share {stats['discarded_share']}")
        return "\n".join(lines)
