"""Train a reward model on a study's votes, in this process, and print its held-out accuracy.

    python manage.py train_reward --study NAME --features JUDGE_KEY [--seed S] [--split condition|export]
        [--text auto|judge|hashed] [--confidence-weight] [--epochs N] [--rounds R] --json

The model becomes a judge (kind reward) whose key is printed; its weights and model card lie under
AUDITORIUM_MODEL_DIR/reward/<key>/. The same study, options and seed print the same key. The
scoring pages start the same training as a queued job on the gpu queue, with live progress.
"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Study
from auditorium.errors import ServiceError
from scoring.evaluation import DIMENSIONS
from scoring.models import Judge, TrainingRun
from scoring.reward.services import training_create, training_execute


class Command(BaseCommand):
    help = "Train a reward model (a judge of kind reward) on a study's human votes and print its held-out accuracy."

    def add_arguments(self, parser):
        parser.add_argument("--study", required=True, help="study name (slug)")
        parser.add_argument("--features", required=True, metavar="JUDGE_KEY", help="judge whose clip features the model reads (signal, clap or muq_mulan kind)")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--split", default="condition", help="condition (seeded, by condition) or export (the study's test split); default %(default)s")
        parser.add_argument("--text", default="auto", help="prompt embedding: auto, judge (the feature judge's text encoder) or hashed; default %(default)s")
        parser.add_argument("--confidence-weight", action="store_true", help="weight each vote by its annotator confidence")
        parser.add_argument("--epochs", type=int, help="at most this many epochs (early stopping may end sooner)")
        parser.add_argument("--rounds", type=int, default=1000, help="bootstrap rounds for the 95%% intervals (default %(default)s)")
        parser.add_argument("--json", action="store_true", help="print the result as JSON")

    def handle(self, *args, **opts):
        study = Study.objects.filter(name=opts["study"]).first()
        if study is None:
            raise CommandError(f"No study named {opts['study']!r}.")
        judge = Judge.objects.filter(key=opts["features"]).first()
        if judge is None:
            raise CommandError(f"No judge {opts['features']!r}; `manage.py judges` lists them.")
        options = {"split": opts["split"], "text": opts["text"], "rounds": opts["rounds"], "confidence_weight": opts["confidence_weight"]}
        if opts["epochs"] is not None:
            options["epochs"] = opts["epochs"]
        try:
            run = training_create(study=study, feature_judge=judge, seed=opts["seed"], options=options, queue=False)
        except ServiceError as exc:
            raise CommandError(exc.message) from None
        run = training_execute(training_id=run.pk)
        if run.state != TrainingRun.State.DONE:
            raise CommandError(f"training {run.pk} failed: {run.error}")
        result = {"training": run.pk, "key": run.judge.key, **run.metrics}
        if opts["json"]:
            self.stdout.write(json.dumps(result, indent=2, sort_keys=True))
            return
        epochs = ", ".join(f"{dim} {epoch}" for dim, epoch in run.metrics["best_epoch"].items())
        self.stdout.write(f"model {run.judge.key} (training {run.pk}; best epoch {epochs})")
        for view, name in (("heldout", "votes"), ("heldout_majority", "pair majorities")):
            parts = []
            for dim in DIMENSIONS:
                cell = run.metrics[view][dim]
                ci = cell.get("ci") or [None, None]
                acc = "—" if cell["accuracy"] is None else f"{cell['accuracy']:.3f}"
                parts.append(f"{dim} {acc} [{ci[0]}, {ci[1]}] n={cell['n']}")
            self.stdout.write(f"held-out accuracy over {name}: " + "; ".join(parts))
