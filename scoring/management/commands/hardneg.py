"""Build degraded variants of clips (hard negatives), optionally as catch pairs in a study."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Clip, Pair, Study
from common.errors import ServiceError
from scoring import services
from scoring.hardneg import KINDS


class Command(BaseCommand):
    help = (
        "hardneg --clip ID --degradation '{\"kind\": \"noise\", \"snr_db\": 10}' [--study NAME]  |  "
        "hardneg --study NAME --kind clip [--limit N]: catch pairs for the first N clips of the study"
    )

    def add_arguments(self, parser):
        parser.add_argument("--clip", type=int, help="Clip id to degrade.")
        parser.add_argument("--degradation", help="JSON object: kind plus parameters (see scoring/hardneg.py).")
        parser.add_argument("--kind", choices=KINDS, help="Shortcut: this kind with its default parameters.")
        parser.add_argument("--study", help="Study in which to create catch pairs (expected answer: the original).")
        parser.add_argument("--limit", type=int, default=10, help="With --study and no --clip: how many clips to degrade.")
        parser.add_argument("--no-catch", action="store_true", help="Only store the derived clips.")

    def handle(self, *args, **options):
        if options["degradation"]:
            try:
                spec = json.loads(options["degradation"])
            except json.JSONDecodeError as exc:
                raise CommandError(f"--degradation is not valid JSON: {exc}") from None
        elif options["kind"]:
            spec = {"kind": options["kind"]}
        else:
            raise CommandError("Give --degradation JSON or --kind.")
        study = None
        if options["study"]:
            study = Study.objects.filter(name=options["study"]).first()
            if study is None:
                raise CommandError(f"No study named {options['study']!r}.")
        if options["clip"]:
            clips = list(Clip.objects.filter(pk=options["clip"]))
            if not clips:
                raise CommandError(f"No clip {options['clip']}.")
        elif study is not None:
            ids = []
            for a, b in Pair.objects.filter(study=study, kind=Pair.Kind.REGULAR).order_by("pk").values_list("clip_a_id", "clip_b_id"):
                ids += [c for c in (a, b) if c not in ids]
            clips = list(Clip.objects.filter(pk__in=ids[: max(options["limit"], 0)]).order_by("pk"))
        else:
            raise CommandError("Give --clip ID, or --study NAME to degrade clips of that study.")
        for clip in clips:
            try:
                derived, pair = services.hard_negative_create(clip=clip, degradation=spec, study=study, catch=not options["no_catch"])
            except ServiceError as exc:
                raise CommandError(f"clip {clip.pk}: {exc.message}") from None
            self.stdout.write(f"clip {clip.pk} -> derived clip {derived.pk} ({derived.degradation})" + (f", catch pair {pair.pk}" if pair else ""))
