"""python manage.py best_of_n --name NAME --prompt "..." [--prompt ...] --n 4 --systems a,b --ranker KEY [--dimension musicality]"""

from __future__ import annotations

import json

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from annotation.models import Study
from common.errors import ServiceError
from scoring import best_of_n
from scoring.models import BestOfNExperiment, Judge


class Command(BaseCommand):
    help = (
        "Generate (or take from --source-study) N candidates per prompt, rank them with a judge, and make the blind study of top-1 against a "
        "random candidate and against bottom-1; --report NAME prints an experiment's human check."
    )

    def add_arguments(self, parser):
        parser.add_argument("--name", help="Name of the experiment's study (lower case, digits, - and _).")
        parser.add_argument("--prompt", action="append", default=[], help="A prompt (repeat for more).")
        parser.add_argument("--prompts-file", help="A text file with one prompt per line.")
        parser.add_argument("--n", type=int, default=4)
        parser.add_argument("--systems", default="", help="Comma-separated arena systems that generate, in turn.")
        parser.add_argument("--source-study", help="Take each condition's clips of this study as its candidates instead.")
        parser.add_argument("--ranker", help="The judge that ranks (a key from `manage.py judges`).")
        parser.add_argument("--dimension", default="musicality", choices=("alignment", "musicality"))
        parser.add_argument("--seconds", type=float, default=6.0)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--owner", help="Username that owns the study (default: the first admin).")
        parser.add_argument("--report", metavar="NAME", help="Print the report of this experiment (its study name) as JSON and stop.")
        parser.add_argument("--include-seeded", action="store_true", help="With --report: count the demo's seeded votes.")

    def handle(self, *args, **options):
        if options["report"]:
            experiment = BestOfNExperiment.objects.filter(study__name=options["report"]).first()
            if experiment is None:
                raise CommandError(f"No best-of-N experiment with study {options['report']!r}.")
            report = best_of_n.best_of_n_report(experiment=experiment, include_seeded=options["include_seeded"])
            self.stdout.write(json.dumps(report, indent=2))
            return
        if not options["name"] or not options["ranker"]:
            raise CommandError("Give --name and --ranker (and --prompt/--prompts-file with --systems, or --source-study).")
        ranker = Judge.objects.filter(key=options["ranker"]).first()
        if ranker is None:
            raise CommandError(f"No judge {options['ranker']!r}.")
        prompts = list(options["prompt"])
        if options["prompts_file"]:
            try:
                with open(options["prompts_file"], encoding="utf-8") as handle:
                    prompts += handle.read().splitlines()
            except (OSError, UnicodeDecodeError) as exc:
                raise CommandError(f"Cannot read {options['prompts_file']}: {exc}") from None
        User = get_user_model()
        owner = User.objects.filter(username=options["owner"]).first() if options["owner"] else User.objects.filter(is_superuser=True).order_by("pk").first()
        if owner is None:
            raise CommandError("No owner: give --owner USERNAME.")
        source = None
        if options["source_study"]:
            source = Study.objects.filter(name=options["source_study"]).first()
            if source is None:
                raise CommandError(f"No study {options['source_study']!r}.")
        try:
            experiment = best_of_n.best_of_n_create(
                name=options["name"], owner=owner, prompts=prompts, n=options["n"], ranker=ranker, systems=options["systems"].split(","),
                source_study=source, dimension=options["dimension"], seconds=options["seconds"], seed=options["seed"], queue=False,
            )  # fmt: skip
        except ServiceError as exc:
            raise CommandError(exc.message) from None
        experiment = best_of_n.best_of_n_execute(experiment_id=experiment.pk)
        if experiment.state != BestOfNExperiment.State.DONE:
            raise CommandError(f"The experiment failed: {experiment.error}")
        pairs = experiment.study.pairs.count()
        self.stdout.write(f"Experiment {experiment.study.name!r}: {len(best_of_n.candidate_rows(experiment=experiment))} prompts ranked, {pairs} pairs in its study.")
