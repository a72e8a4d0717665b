"""Launch a scoring run from the command line (the admin action and the API do the same)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Study
from common.errors import ServiceError
from scoring import services
from scoring.models import Judge


class Command(BaseCommand):
    help = "score --judge KEY (--study NAME | --pairs 1,2,3) [--template T | --templates T1,T2]"

    def add_arguments(self, parser):
        parser.add_argument("--judge", required=True)
        parser.add_argument("--study")
        parser.add_argument("--pairs", help="Comma-separated pair ids.")
        parser.add_argument("--template", default="")
        parser.add_argument("--templates", default="", help="Several templates: one run each, spread measured.")
        parser.add_argument("--label", default="")

    def handle(self, *args, **options):
        judge = Judge.objects.filter(key=options["judge"]).first()
        if judge is None:
            raise CommandError(f"No judge {options['judge']!r}; `manage.py judges` lists them.")
        scope = {}
        if options["study"]:
            study = Study.objects.filter(name=options["study"]).first()
            if study is None:
                raise CommandError(f"No study named {options['study']!r}.")
            scope["study"] = study
        if options["pairs"]:
            try:
                scope["pair_ids"] = [int(x) for x in options["pairs"].split(",") if x.strip()]
            except ValueError:
                raise CommandError("--pairs takes comma-separated integers.") from None
        try:
            templates = [t.strip() for t in options["templates"].split(",") if t.strip()]
            if templates:
                runs = services.run_create_templates(judge=judge, templates=templates, label=options["label"], **scope)
            else:
                runs = [services.run_create(judge=judge, template=options["template"], label=options["label"], **scope)]
        except ServiceError as exc:
            raise CommandError(exc.message) from None
        for run in runs:
            run.refresh_from_db()
            self.stdout.write(f"run {run.pk}: {run.state}, {run.done} done, {run.failed} failed of {run.total}")
