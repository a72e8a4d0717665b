"""List the configured judges and whether each can run here (and if not, why)."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand

from scoring import selectors, services


class Command(BaseCommand):
    help = "List judges with what they measure and their availability; --ensure-defaults adds the default judges."

    def add_arguments(self, parser):
        parser.add_argument("--ensure-defaults", action="store_true", help="Create the default judges (signal; MuQ-MuLan, SongEval, CMI-RM, audiobox-aesthetics from AUDITORIUM_MODEL_DIR).")
        parser.add_argument("--json", action="store_true", help="Print JSON instead of a table.")

    def handle(self, *args, **options):
        if options["ensure_defaults"]:
            services.judges_ensure_defaults()
        rows = [{k: v for k, v in j.items() if k != "judge"} for j in selectors.judge_list()]
        if options["json"]:
            self.stdout.write(json.dumps(rows, indent=2))
            return
        if not rows:
            self.stdout.write("No judge configured (try --ensure-defaults).")
        for row in rows:
            state = "available" if row["available"] else f"UNAVAILABLE: {row['reason']}"
            self.stdout.write(f"{row['key']:<24} {row['kind']:<13} queue={row['queue']:<3} dims={','.join(row['dimensions']):<21} {state}")
