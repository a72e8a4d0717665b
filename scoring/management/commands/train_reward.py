"""Train a reward model on a study's votes, in this process, and print its held-out accuracy beside its baselines.

    python manage.py train_reward --study NAME --features JUDGE_KEY [--seed S] [--seeds 0,1,2]
        [--split condition|prompt|system|time|export] [--text auto|judge|hashed] [--confidence-weight]
        [--epochs N] [--rounds R] --json

--seed is the training seed (the network's initialisation and order); --seeds the split seeds:
one split per seed, each with the network, two logistic models and the baselines trained and
measured on the same rows, then the mean and spread per figure. The model registered is the
first split seed's pick (per dimension, the best validation accuracy among the network and the
logistic models); it becomes a judge (kind reward) whose weights and card lie under
AUDITORIUM_MODEL_DIR/reward/<key>/. The same study, options and seeds print the same key.
"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Study
from common.errors import ServiceError
from scoring.evaluation import DIMENSIONS
from scoring.models import Judge, TrainingRun
from scoring.reward.baselines import BASELINES
from scoring.reward.data import SPLIT_MODES
from scoring.reward.services import training_create, training_execute
from scoring.reward.stages import STAGE_MODELS


def _f(value, digits=3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _ci(ci) -> str:
    return "[—]" if not ci or ci[0] is None else f"[{ci[0]:+.3f}, {ci[1]:+.3f}]"


def brief(run: TrainingRun) -> dict:
    """Per dimension: the model's mean and spread, each baseline's mean, paired differences with intervals, the pick, coverage."""
    seeds = run.metrics["seeds"]
    out = {
        "training": run.pk,
        "key": run.judge.key,
        "split_mode": run.options["split"],
        # The registered model's split (the first split seed): sides, sizes and what was left out.
        "split": run.metrics["split"],
        "training_seed": run.metrics["training_seed"],
        "split_seeds": run.metrics["split_seeds"],
        "single_seed": seeds["single_seed"],
        "registered_split_seed": run.metrics["registered"]["split_seed"],
        # What each split seed held out (the system split names its systems and fold).
        "held_out": [
            {"split_seed": s["split_seed"], "test_systems": s["split"].get("test_systems"), "fold": s["split"].get("fold"), "test_conditions": s["split"]["test_conditions"]}
            for s in run.metrics["per_seed"]
        ],
        "dimensions": {},
    }
    for dim in DIMENSIONS:
        block = seeds["dimensions"][dim]
        out["dimensions"][dim] = {
            "model": {k: block["model"][k] for k in ("mean", "sd", "min", "max", "values")},
            "model_n": block["n"],
            "model_ci": block["ci"],
            "baselines": {name: {"mean": b["mean"], "sd": b["sd"], "values": b["values"]} for name, b in block["baselines"].items()},
            "difference_to": {name: {"mean": d["mean"], "sd": d["sd"], "ci": d["ci"], "n": d["n"]} for name, d in block["differences"].items() if name in BASELINES + STAGE_MODELS},
            "registered": {"model": run.metrics["registered"]["picks"][dim], "picks_per_seed": block["picks"], "accuracy": block["registered"]},
            "coverage": block["coverage"],
        }
    out["stages"] = run.metrics.get("stages")
    return out


class Command(BaseCommand):
    help = "Train a reward model (a judge of kind reward) on a study's human votes; print its held-out accuracy beside its baselines."

    def add_arguments(self, parser):
        parser.add_argument("--study", required=True, help="study name (slug)")
        parser.add_argument("--features", required=True, metavar="JUDGE_KEY", help="judge whose clip features the model reads (signal, clap or muq_mulan kind)")
        parser.add_argument("--seed", type=int, default=0, help="training seed (initialisation and order); default %(default)s")
        parser.add_argument("--seeds", default="0", help="split seeds, comma-separated: one split per seed, mean and spread over them; default %(default)s")
        parser.add_argument("--split", default="condition", help=f"{', '.join(SPLIT_MODES)}; default %(default)s")
        parser.add_argument("--text", default="auto", help="prompt embedding: auto, judge (the feature judge's text encoder) or hashed; default %(default)s")
        parser.add_argument("--confidence-weight", action="store_true", help="weight each vote by its annotator confidence")
        parser.add_argument("--reliability-weight", action="store_true", help="weight each vote by its annotator's Dawid-Skene reliability (instead of confidence)")
        parser.add_argument("--epochs", type=int, help="at most this many epochs (early stopping may end sooner)")
        parser.add_argument("--rounds", type=int, default=1000, help="bootstrap rounds for the 95%% intervals (default %(default)s)")
        parser.add_argument("--pseudo-run", type=int, action="append", default=[], metavar="RUN_ID", help="stage 1: a pseudo-label run's kept labels (repeatable); the network is then two-stage")
        parser.add_argument("--smoothing", type=float, default=0.2, help="stage 1 label smoothing; default %(default)s")
        parser.add_argument("--mos-study", action="append", default=[], metavar="NAME", help="stage 2: a rating study whose MOS join the expert votes (repeatable)")
        parser.add_argument("--mos-weight", type=float, default=1.0, help="weight of the MOS regression loss in stage 2; default %(default)s")
        parser.add_argument("--json", action="store_true", help="print the result as JSON (--full: every figure of every seed)")
        parser.add_argument("--full", action="store_true", help="with --json: the whole run summary, every split seed's figures included")

    def handle(self, *args, **opts):
        study = Study.objects.filter(name=opts["study"]).first()
        if study is None:
            raise CommandError(f"No study named {opts['study']!r}.")
        judge = Judge.objects.filter(key=opts["features"]).first()
        if judge is None:
            raise CommandError(f"No judge {opts['features']!r}; `manage.py judges` lists them.")
        options = {"split": opts["split"], "split_seeds": opts["seeds"], "text": opts["text"], "rounds": opts["rounds"], "confidence_weight": opts["confidence_weight"],
                   "weight_by": "reliability" if opts["reliability_weight"] else "confidence"}  # fmt: skip
        if opts["epochs"] is not None:
            options["epochs"] = opts["epochs"]
        if opts["pseudo_run"] or opts["mos_study"]:
            options["stages"] = {"pseudo_runs": opts["pseudo_run"], "mos_studies": opts["mos_study"], "smoothing": opts["smoothing"], "mos_weight": opts["mos_weight"]}
        try:
            run = training_create(study=study, feature_judge=judge, seed=opts["seed"], options=options, queue=False)
        except ServiceError as exc:
            raise CommandError(exc.message) from None
        run = training_execute(training_id=run.pk)
        if run.state != TrainingRun.State.DONE:
            raise CommandError(f"training {run.pk} failed: {run.error}")
        if opts["json"]:
            result = {"training": run.pk, "key": run.judge.key, **run.metrics} if opts["full"] else {**brief(run), "heldout": run.metrics["heldout"], "heldout_majority": run.metrics["heldout_majority"]}
            self.stdout.write(json.dumps(result, indent=2, sort_keys=True))
            return
        self.write_text(run)

    def write_text(self, run: TrainingRun) -> None:
        summary = brief(run)
        seeds = ",".join(str(s) for s in summary["split_seeds"])
        label = "single split seed: no spread" if summary["single_seed"] else f"mean ± sd over split seeds {seeds}"
        self.stdout.write(f"model {summary['key']} (training {run.pk}; split {summary['split_mode']}; training seed {summary['training_seed']}; registered from split seed {summary['registered_split_seed']})")
        self.stdout.write(f"held-out accuracy against single votes, {label}; differences are the network minus the baseline, 95% intervals resampling test conditions, one per seed")
        for dim, block in summary["dimensions"].items():
            model = block["model"]
            spread = "" if model["sd"] is None else f" ± {model['sd']:.3f}"
            self.stdout.write(f"{dim}: network {_f(model['mean'])}{spread} (n={block['model_n']}); registered {block['registered']['model']} (per seed: {', '.join(block['registered']['picks_per_seed'])})")
            for name, b in block["baselines"].items():
                d = block["difference_to"][name]
                cis = " ".join(_ci(ci) for ci in d["ci"])
                share = block["coverage"][name][0]["share"]
                self.stdout.write(f"  {name:<22} {_f(b['mean'])}   network − it {_f(d['mean'])} {cis}   coverage {_f(share, 2)}")
