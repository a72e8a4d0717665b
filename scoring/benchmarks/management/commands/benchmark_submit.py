from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from common.errors import ServiceError
from scoring.benchmarks import runners, services
from scoring.benchmarks.models import Team
from scoring.models import Judge

from ._common import benchmark_named


class Command(BaseCommand):
    help = (
        "Submit for a team: a prediction file (MIREX layout or CMI-RewardBench results.jsonl), an in-platform judge "
        "(--judge KEY, run as a scoring run) or a registered outside judge of the team (--endpoint NAME)."
    )

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--team", required=True)
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--file")
        source.add_argument("--judge", help="Key of an in-platform judge or trained reward model.")
        source.add_argument("--endpoint", help="Name of an outside judge the team registered (on its team page).")
        parser.add_argument("--label", default="", help="The judge's name as shown on the leaderboard.")
        parser.add_argument("--create-team", action="store_true", help="Create the team when it does not exist.")
        parser.add_argument("--json", action="store_true")

    def _submit(self, benchmark, team, opts):
        if opts["judge"]:
            judge = Judge.objects.filter(key=opts["judge"]).first()
            if judge is None:
                raise ServiceError(f"No judge with key {opts['judge']!r} (see manage.py judges).")
            return runners.judge_submission_create(benchmark=benchmark, team=team, judge=judge, label=opts["label"])
        if opts["endpoint"]:
            endpoint = team.endpoints.filter(name=opts["endpoint"]).first()
            if endpoint is None:
                raise ServiceError(f"Team {team.name} has no registered endpoint named {opts['endpoint']!r}.")
            return runners.http_submission_create(benchmark=benchmark, endpoint=endpoint, label=opts["label"])
        data = services.submission_read_file(opts["file"])
        return services.submission_from_file(benchmark=benchmark, team=team, data=data, label=opts["label"])

    def handle(self, *args, **opts):
        benchmark = benchmark_named(opts["name"])
        if not opts["create_team"] and not Team.objects.filter(name=opts["team"]).exists():
            raise CommandError(f"No team named {opts['team']!r}; pass --create-team to create it.")
        try:
            # One transaction: a refused file or run leaves no new team behind.
            with transaction.atomic():
                team = Team.objects.filter(name=opts["team"]).first() or services.team_create(name=opts["team"])
                submission = self._submit(benchmark, team, opts)
        except ServiceError as exc:
            if opts["json"]:
                self.stdout.write(json.dumps({"ok": False, "error": exc.message, "errors": exc.extra.get("errors", [])}))
            raise CommandError(exc.message) from None
        submission.refresh_from_db()
        answered = submission.predictions.exclude(error__gt="").count()
        result = {
            "ok": True,
            "submission": submission.pk,
            "team": team.name,
            "kind": submission.kind,
            "state": submission.state,
            "format": submission.file_format,
            "answered": answered,
            "items": benchmark.n_items,
        }
        if opts["json"]:
            self.stdout.write(json.dumps(result))
        else:
            self.stdout.write(f"Submission {submission.pk} for {team.name} ({submission.kind}, {submission.state}): {answered} of {benchmark.n_items} items answered so far.")
