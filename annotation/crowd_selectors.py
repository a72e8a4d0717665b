"""Reads for the crowd-quality steps: each annotator's screen and practice results, for the study's annotator table."""

from __future__ import annotations

from django.db.models import Count, Q

from .crowd_models import PracticeAnswer, PracticeItem, ScreeningAttempt
from .models import ScreeningKind, Study


def annotator_crowd_columns(*, study: Study, rows: list[dict]) -> list[dict]:
    """The annotator rows with `screening` and `practice` added (text; "–" where the step is off or not taken)."""
    attempts: dict[str, list] = {}
    for username, correct, trials, passed in (
        ScreeningAttempt.objects.filter(study=study, passed__isnull=False).order_by("id").values_list("annotator__username", "correct", "trials", "passed")
    ):
        attempts.setdefault(username, []).append((correct, trials, passed))
    items = PracticeItem.objects.filter(study=study).count()
    practice = {
        row["annotator__username"]: row
        for row in PracticeAnswer.objects.filter(item__study=study)
        .values("annotator__username")
        .annotate(n=Count("id"), right=Count("id", filter=Q(alignment_right=True) | Q(alignment_right__isnull=True, musicality_right=True)), both=Count("id", filter=Q(alignment_right=True, musicality_right=True)))
    }
    for row in rows:
        mine = attempts.get(row["username"], [])
        if study.screening == ScreeningKind.OFF and not mine:
            row["screening"], row["screening_state"] = "–", ""
        elif not mine:
            row["screening"], row["screening_state"] = "not taken", ""
        else:
            correct, trials, passed = mine[-1]
            row["screening"] = f"{'passed' if passed else 'failed'} {correct}/{trials}, attempt {len(mine)}"
            row["screening_state"] = "ok" if passed else "bad"
        done = practice.get(row["username"])
        row["practice"] = "–" if not items else (f"{done['n']}/{items} answered, {done['both']} fully right" if done else f"0/{items} answered")
    return rows
