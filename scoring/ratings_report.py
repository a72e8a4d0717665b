"""The ratings section of a rating study's report: the frame read from the database, judge scores per clip.

Arithmetic is scoring/ratings.py's; this module only reads. Withdrawn and excluded annotators'
ratings are left out as everywhere else; seeded demo ratings only when the report asks for them.
"""

from __future__ import annotations

import pandas as pd
from django.db.models import Q

from annotation.models import AnnotatorProfile, Study
from annotation.ratings.models import Rating, RatingSubmission, RatingTask

from . import ratings
from .models import Verdict


def ratings_frame(*, study: Study, include_seeded: bool = False) -> pd.DataFrame:
    """Every rating of the study, one row per (submission, clip, dimension), with the item's kind and the clip's role."""
    gone = AnnotatorProfile.objects.filter(Q(withdrawn_at__isnull=False) | Q(excluded_at__isnull=False)).values("user_id")
    query = Rating.objects.filter(submission__item__study=study).exclude(submission__annotator_id__in=gone)
    if not include_seeded:
        query = query.exclude(submission__source=RatingSubmission.Source.SEEDED)
    rows = list(
        query.values_list(
            "submission_id", "submission__annotator_id", "submission__item_id", "clip_id", "clip__system__name", "dimension", "value", "submission__item__kind", "submission__item__expected"
        )
    )
    if not rows:
        return ratings.empty_frame()
    frame = pd.DataFrame(rows, columns=["submission_id", "annotator_id", "item_id", "clip_id", "system", "dimension", "value", "kind", "expected"])
    roles = dict(
        ((item, clip), role)
        for item, clip, role in study.rating_items.values_list("id", "item_clips__clip_id", "item_clips__role")
    )
    frame["role"] = [roles.get((i, c), "test") for i, c in zip(frame["item_id"], frame["clip_id"])]
    bounds = [((e or {}).get(str(c)) or {}).get(d) for e, c, d in zip(frame["expected"], frame["clip_id"], frame["dimension"])]
    frame["expected_low"] = [b[0] if b else None for b in bounds]
    frame["expected_high"] = [b[1] if b else None for b in bounds]
    frame["expected_low"] = frame["expected_low"].astype(float)
    frame["expected_high"] = frame["expected_high"].astype(float)
    return frame[ratings.RATING_COLUMNS]


def judge_clip_scores(*, clip_ids) -> pd.DataFrame:
    """Each judge run's score per rated clip and dimension: the mean of its scores for that clip over every pair it scored."""
    rows = []
    verdicts = Verdict.objects.filter(Q(pair__clip_a_id__in=clip_ids) | Q(pair__clip_b_id__in=clip_ids), status=Verdict.Status.OK).values_list(
        "run__judge__key", "run_id", "pair__clip_a_id", "pair__clip_b_id", "musicality_score_a", "musicality_score_b", "alignment_score_a", "alignment_score_b"
    )
    wanted = set(clip_ids)
    for key, run_id, a, b, ma, mb, aa, ab in verdicts:
        judge = f"{key} run {run_id}"
        for clip, m, al in ((a, ma, aa), (b, mb, ab)):
            if clip in wanted:
                if m is not None:
                    rows.append((judge, clip, "musicality", m))
                if al is not None:
                    rows.append((judge, clip, "alignment", al))
    frame = pd.DataFrame(rows, columns=["judge", "clip_id", "dimension", "score"])
    return frame.groupby(["judge", "clip_id", "dimension"], as_index=False)["score"].mean() if len(frame) else frame


def ratings_section(*, study: Study, rounds: int, seed: int, include_seeded: bool = False) -> dict | None:
    """The report's ratings section, or None for a pairwise study."""
    task = RatingTask.objects.filter(study=study).first()
    if task is None:
        return None
    frame = ratings_frame(study=study, include_seeded=include_seeded)
    scores = judge_clip_scores(clip_ids=list(frame["clip_id"].unique())) if len(frame) else pd.DataFrame()
    return {"task": task.task, "dimensions": task.dimensions, **ratings.ratings_compute(frame, judge_scores=scores, rounds=rounds, seed=seed)}
