"""How many conditions and votes a study needs to separate two systems, from a study's votes so far or a typed effect.

    python manage.py plan_study --study NAME --a SYS --b SYS [--dimension musicality]
    python manage.py plan_study --study NAME --a SYS --b SYS --effect 0.6 [--condition-sd 0.5] [--power 0.9] [--json]
"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Study
from common.errors import ServiceError
from scoring.results_section import plan_section
from scoring.results_view import plan_sentence


class Command(BaseCommand):
    help = "Plan a study: the fewest conditions, per number of votes on each, that separate two systems with the power asked for."

    def add_arguments(self, parser):
        parser.add_argument("--study", required=True, help="the pilot study (slug)")
        parser.add_argument("--a", required=True, help="first system")
        parser.add_argument("--b", required=True, help="second system")
        parser.add_argument("--dimension", default="musicality", help="dimension to plan for (default %(default)s)")
        parser.add_argument("--effect", help="a's win rate over b (pairwise) or a's mean minus b's (rating); default: the pilot's")
        parser.add_argument("--condition-sd", help="spread between conditions (logit scale, or rating points); default: the pilot's")
        parser.add_argument("--tie-rate", help="share of ties (pairwise); default: the pilot's")
        parser.add_argument("--rating-sd", help="spread of one rating (rating studies); default: the pilot's")
        parser.add_argument("--power", help="power to reach (default 0.8)")
        parser.add_argument("--alpha", help="level of the test (default 0.05 over the study's number of comparisons)")
        parser.add_argument("--json", action="store_true", help="print the plan as JSON, as GET /api/studies/NAME/plan/ answers")

    def handle(self, *args, **opts):
        study = Study.objects.filter(name=opts["study"]).first()
        if study is None:
            raise CommandError(f"No study named {opts['study']!r}.")
        try:
            plan = plan_section(
                study=study, a=opts["a"], b=opts["b"], dimension=opts["dimension"], effect=opts["effect"], condition_sd=opts["condition_sd"],
                tie_rate=opts["tie_rate"], rating_sd=opts["rating_sd"], power=opts["power"], alpha=opts["alpha"],
            )  # fmt: skip
        except ServiceError as exc:
            raise CommandError(exc.message) from None
        if opts["json"]:
            self.stdout.write(json.dumps(plan, indent=2))
            return
        self.stdout.write(plan_sentence(plan) or plan["note"] or "No size up to 5,000 conditions reaches that power.")
        model = plan["model"]
        self.stdout.write(f"model ({model['source']}): " + ", ".join(f"{k} {v}" for k, v in model.items() if k != "source") + f"; alpha {plan['alpha']:.4g}; {plan['simulations']} simulated studies per size")
        self.stdout.write(f"{'per condition':>14} {'conditions':>11} {plan['unit']:>8} {'power':>7}")
        for r in plan["rows"]:
            self.stdout.write(f"{r['per_condition']:>14} {r['conditions'] or '-':>11} {r['total'] or '-':>8} {r['power'] if r['power'] is not None else '-':>7}")
