from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from auditorium.errors import ServiceError
from scoring.benchmarks import services
from scoring.benchmarks.models import Team

from ._common import benchmark_named


class Command(BaseCommand):
    help = "Submit a prediction file (MIREX layout or CMI-RewardBench results.jsonl) for a team."

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--team", required=True)
        parser.add_argument("--file", required=True)
        parser.add_argument("--label", default="", help="The judge's name as shown on the leaderboard.")
        parser.add_argument("--create-team", action="store_true", help="Create the team when it does not exist.")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, **opts):
        benchmark = benchmark_named(opts["name"])
        team = Team.objects.filter(name=opts["team"]).first()
        if team is None:
            if not opts["create_team"]:
                raise CommandError(f"No team named {opts['team']!r}; pass --create-team to create it.")
            team = services.team_create(name=opts["team"])
        try:
            data = services.submission_read_file(opts["file"])
            submission = services.submission_from_file(benchmark=benchmark, team=team, data=data, label=opts["label"])
        except ServiceError as exc:
            if opts["json"]:
                self.stdout.write(json.dumps({"ok": False, "error": exc.message, "errors": exc.extra.get("errors", [])}))
            raise CommandError(exc.message) from None
        answered = submission.predictions.count()
        result = {"ok": True, "submission": submission.pk, "team": team.name, "format": submission.file_format, "answered": answered, "items": benchmark.n_items}
        if opts["json"]:
            self.stdout.write(json.dumps(result))
        else:
            self.stdout.write(f"Submission {submission.pk} for {team.name}: {submission.file_format} layout, {answered} of {benchmark.n_items} items answered.")
