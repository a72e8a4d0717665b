"""Reads for the study's Prolific page: the ties, their submissions with each participant's screen and gold results, and the call log."""

from __future__ import annotations

from django.db.models import Count, Q

from .crowd_models import ExternalParticipant, ScreeningAttempt
from .models import Judgment, Pair, Study
from .prolific_models import BonusState, ProlificCall, ProlificCredential, ProlificStudyTie, ProlificSubmission


def participant_quality(*, study: Study, participants: list[ExternalParticipant]) -> dict[int, dict]:
    """Per participant id: `screen_passed` (the last answered attempt passed; None: never answered one) and `gold`
    (share right over gold and catch answers, both dimensions, each answer with an expected clip once; None: none)."""
    users = {p.user_id: p.pk for p in participants}
    out = {pk: {"screen_passed": None, "gold": None, "gold_answers": 0} for pk in users.values()}
    for user_id, passed in ScreeningAttempt.objects.filter(study=study, annotator_id__in=users, passed__isnull=False).order_by("id").values_list("annotator_id", "passed"):
        out[users[user_id]]["screen_passed"] = passed
    tally: dict[int, list[int]] = {}
    rows = Judgment.objects.filter(pair__study=study, pair__kind__in=[Pair.Kind.GOLD, Pair.Kind.CATCH], annotator_id__in=users).values_list(
        "annotator_id", "alignment_choice_id", "musicality_choice_id", "pair__expected_alignment_id", "pair__expected_musicality_id"
    )
    for user_id, alignment, musicality, expected_a, expected_m in rows:
        counts = tally.setdefault(users[user_id], [0, 0])
        for choice, expected in ((alignment, expected_a), (musicality, expected_m)):
            if expected is not None and choice is not None:
                counts[0] += choice == expected
                counts[1] += 1
    for pk, (right, answered) in tally.items():
        if answered:
            out[pk]["gold"], out[pk]["gold_answers"] = right / answered, answered
    return out


def prolific_page(*, study: Study, calls: int = 50) -> dict:
    """Everything the Prolific page shows; never the token (only whether one is stored, when and by whom)."""
    credential = ProlificCredential.objects.filter(study=study).select_related("set_by").first()
    ties = []
    for tie in ProlificStudyTie.objects.filter(link__study=study).select_related("link").order_by("-created_at", "-id"):
        submissions = list(
            ProlificSubmission.objects.filter(tie=tie).select_related("participant__user").annotate(
                paid=Count("bonuses", filter=Q(bonuses__state=BonusState.PAID)), open_bonuses=Count("bonuses", filter=~Q(bonuses__state__in=[BonusState.PAID, BonusState.FAILED]))
            )
        )  # fmt: skip
        quality = participant_quality(study=study, participants=[s.participant for s in submissions if s.participant])
        rows = [{"submission": s, "quality": quality.get(s.participant_id, {})} for s in submissions]
        bonuses = tie.bonuses.values("state").annotate(n=Count("id"))
        issues = tie.bonuses.exclude(error="").exclude(state=BonusState.PAID).select_related("participant__user")[:100]
        ties.append({
            "tie": tie, "rows": rows, "bonus_states": {row["state"]: row["n"] for row in bonuses}, "bonus_issues": list(issues),
            "unmatched": sum(1 for s in submissions if s.participant_id is None),
        })  # fmt: skip
    return {"credential": credential, "ties": ties, "calls": list(ProlificCall.objects.filter(study=study)[:calls])}
