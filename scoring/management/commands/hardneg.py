"""Build hard negatives: degraded variants of clips, or answers to a changed prompt, as catch pairs in a study."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Clip, Pair, Study
from common.errors import ServiceError
from scoring import services
from scoring.hardneg import KINDS
from scoring.semantic import ATTRIBUTES


class Command(BaseCommand):
    help = (
        'hardneg --clip ID --degradation \'{"kind": "noise", "snr_db": 10}\' [--study NAME]  |  '
        "hardneg --study NAME --kind clip [--limit N]: catch pairs for the first N clips of the study  |  "
        "hardneg --study NAME --kind semantic --attribute instrument [--mode swap|generate] [--arena-system NAME] [--limit N]"
    )

    def add_arguments(self, parser):
        parser.add_argument("--clip", type=int, help="Clip id to degrade.")
        parser.add_argument("--degradation", help="JSON object: kind plus parameters (see scoring/hardneg.py).")
        parser.add_argument("--kind", choices=(*KINDS, "semantic"), help="Shortcut: this kind with its default parameters; semantic: another prompt's answer.")
        parser.add_argument("--attribute", choices=ATTRIBUTES, help="With --kind semantic: what the wrong answer changes.")
        parser.add_argument("--mode", choices=("swap", "generate"), default="swap", help="semantic: swap in another condition's clip, or generate from a rewritten prompt.")
        parser.add_argument("--arena-system", help="semantic --mode generate: the arena system that generates (default: each clip's own system).")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--study", help="Study in which to create catch pairs (expected answer: the original).")
        parser.add_argument("--limit", type=int, default=10, help="With --study and no --clip: how many clips to degrade.")
        parser.add_argument("--no-catch", action="store_true", help="Only store the derived clips.")

    def handle(self, *args, **options):
        if options["kind"] == "semantic":
            return self._semantic(options)
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

    def _semantic(self, options):
        if not options["study"] or not options["attribute"]:
            raise CommandError("--kind semantic needs --study NAME and --attribute.")
        study = Study.objects.filter(name=options["study"]).first()
        if study is None:
            raise CommandError(f"No study named {options['study']!r}.")
        arena_system = None
        if options["arena_system"]:
            from arena.models import ArenaSystem

            arena_system = ArenaSystem.objects.filter(system__name=options["arena_system"]).select_related("system").first()
            if arena_system is None:
                raise CommandError(f"No arena system named {options['arena_system']!r}.")
        # One catch pair per condition, from its first regular pair's first clip.
        seen, made, skipped = set(), 0, []
        for pair in Pair.objects.filter(study=study, kind=Pair.Kind.REGULAR).select_related("condition", "clip_a").order_by("pk"):
            if pair.condition_id in seen or made >= max(options["limit"], 0):
                continue
            seen.add(pair.condition_id)
            try:
                variant, catch = services.semantic_negative_create(
                    study=study,
                    condition=pair.condition,
                    clip=pair.clip_a,
                    attribute=options["attribute"],
                    mode=options["mode"],
                    seed=options["seed"],
                    arena_system=arena_system,
                )
            except ServiceError as exc:
                skipped.append(f"condition {pair.condition_id}: {exc.message}")
                continue
            made += 1
            self.stdout.write(f"condition {pair.condition_id}: clip {pair.clip_a_id} vs clip {variant.pk} ({catch.catch_spec}), catch pair {catch.pk}")
        for line in skipped:
            self.stdout.write(f"skipped {line}")
        if not made:
            raise CommandError(f"No semantic catch pair made in {study.name}" + (f": {skipped[0]}" if skipped else ": it has no regular pairs."))
