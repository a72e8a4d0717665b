"""The demo's two rating studies over the demo systems' clips, with seeded, labelled ratings.

`demo-acr` rates each generated clip alone (1-5, P.808 labels); `demo-multi` shows the six systems'
clips of one condition on one page (0-100). Both ask musicality and instruction following. As with
the seeded pairwise votes (annotation/demo/votes.py), the seeded voters' ratings follow the systems'
true ranks (annotation/demo/catalogue.py) with deliberate noise from a fixed seed; no one listened,
their source is "seeded", and reports and exports leave them out unless asked for. Each item keeps
room for three more ratings, so the demo annotators can rate every item themselves.
"""

from __future__ import annotations

import random

from annotation.demo.catalogue import DEMO_SYSTEMS
from annotation.models import Clip, Study
from annotation.services import study_annotator_add

from . import services
from .models import Rating, RatingItem, RatingSubmission, RatingTask

DEMO_RATING_SEED = 20251
DEMO_RATING_LABEL = "Demo rating (seeded; no one listened)"
DEMO_RATING_KEY = "demo-rating:"
ROOM_FOR_ANNOTATORS = 3
RANKS = {s.name: {"musicality": s.musicality_rank, "alignment": s.alignment_rank} for s in DEMO_SYSTEMS}
STUDIES = {
    "acr": ("demo-acr", "Demo ratings: one clip at a time (ACR)"),
    "multi": ("demo-multi", "Demo ratings: all systems of a prompt on one page"),
}


def _value(rng: random.Random, *, task: str, rank: int) -> float:
    """A rating for a system of this rank: better ranks higher, with rater noise."""
    if task == "acr":
        return float(min(5, max(1, round(5.2 - 0.7 * (rank - 1) + rng.gauss(0, 0.5)))))
    return float(min(100, max(0, round(92 - 14 * (rank - 1) + rng.gauss(0, 7)))))


def demo_rating_studies_seed(*, source: Study, annotators: list, voters: list) -> list[Study]:
    """The two rating studies over `source`'s generated clips; seeded once, found again on a re-run."""
    made = []
    clips_by_condition: dict[int, list[Clip]] = {}
    for pair in source.pairs.select_related("condition", "clip_a__system", "clip_b__system").order_by("id"):
        bucket = clips_by_condition.setdefault(pair.condition_id, [])
        for clip in (pair.clip_a, pair.clip_b):
            if clip.system is not None and clip not in bucket:
                bucket.append(clip)
    conditions = {pair.condition_id: pair.condition for pair in source.pairs.select_related("condition")}
    for task, (name, title) in STUDIES.items():
        study, created = Study.objects.get_or_create(
            name=name,
            defaults={"title": title, "instructions": source.instructions, "overlap_target": len(voters) + ROOM_FOR_ANNOTATORS, "min_listen_seconds": 3, "owner": source.owner},
        )
        made.append(study)
        if not created or RatingTask.objects.filter(study=study).exists():
            continue
        services.rating_task_set(study=study, task=task, dimensions=["musicality", "alignment"])
        for condition_id in sorted(clips_by_condition):
            clips = sorted(clips_by_condition[condition_id], key=lambda c: c.system.name)
            if task == "acr":
                for clip in clips:
                    services.rating_item_add(study=study, condition=conditions[condition_id], clips=[clip])
            else:
                services.rating_item_add(study=study, condition=conditions[condition_id], clips=clips)
        for user in annotators:
            study_annotator_add(study=study, user=user)
        _seed_ratings(study=study, task=task, voters=voters)
    return made


def _seed_ratings(*, study: Study, task: str, voters: list) -> None:
    rng = random.Random(f"{DEMO_RATING_SEED}:{task}")
    for item in RatingItem.objects.filter(study=study).order_by("id").prefetch_related("item_clips__clip__system"):
        for voter in voters:
            submission = RatingSubmission.objects.create(
                annotator=voter, item=item, source=RatingSubmission.Source.SEEDED, rationale=DEMO_RATING_LABEL,
                idempotency_key=f"{DEMO_RATING_KEY}{study.name}:{item.pk}:{voter.pk}",
            )
            Rating.objects.bulk_create([
                Rating(submission=submission, clip=link.clip, dimension=dim, value=_value(rng, task=task, rank=RANKS[link.clip.system.name][dim]))
                for link in item.item_clips.all()
                for dim in ("musicality", "alignment")
            ])
        RatingItem.objects.filter(pk=item.pk).update(n_ratings=len(voters))
