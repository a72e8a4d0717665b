"""Reads for the crowd-quality steps: each annotator's screen and practice results, for the study's annotator table."""

from __future__ import annotations

from django.db.models import Count, Q
from django.urls import reverse
from django.utils import timezone

from .crowd_models import SIGNATURE_PARAM, ExternalParticipant, PracticeAnswer, PracticeItem, RecruitmentLink, ScreeningAttempt
from .models import Judgment, Pair, ScreeningKind, Study


def annotator_crowd_columns(*, study: Study, rows: list[dict]) -> list[dict]:
    """The annotator rows with `screening` and `practice` added (text; "–" where the step is off or not taken), and
    `duplicate_claim`: the account came from a participant id that had already started the study, without its code."""
    duplicates = set(ExternalParticipant.objects.filter(study=study, duplicate_claim=True).values_list("user__username", flat=True))
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
        row["duplicate_claim"] = row["username"] in duplicates
        row["practice"] = "–" if not items else (f"{done['n']}/{items} answered, {done['both']} fully right" if done else f"0/{items} answered")
    return rows


def practice_manage_rows(*, study: Study) -> list[dict]:
    """The study's practice pairs in the order they are served, with how many annotators answered each."""
    return [
        {"id": item.pk, "position": item.position, "pair": item.from_pair_id, "prompt": item.condition.prompt, "explanation": item.explanation, "answers": item.n}
        for item in PracticeItem.objects.filter(study=study).select_related("condition").annotate(n=Count("answers")).order_by("position", "id")
    ]


def practice_candidates(*, study: Study, limit: int = 500) -> list[tuple[int, str]]:
    """(pair id, label) of the gold and catch pairs with an expected answer that no one was served yet (they can move to practice)."""
    pairs = (
        Pair.objects.filter(study=study)
        .exclude(kind=Pair.Kind.REGULAR)
        .filter(Q(expected_alignment__isnull=False) | Q(expected_musicality__isnull=False))
        .filter(judgments__isnull=True, assignments__isnull=True)
        .select_related("condition")
        .order_by("id")[:limit]
    )
    return [(p.pk, f"#{p.pk} {p.get_kind_display().lower()} · {p.condition.prompt[:60]}") for p in pairs]


def recruitment_link_rows(*, study: Study, base_url: str, now=None) -> list[dict]:
    """Each link with the URL to paste into the platform, its use and its state (open, full or closed)."""
    now = now or timezone.now()
    links = RecruitmentLink.objects.filter(study=study).annotate(
        used=Count("participants"),
        completed=Count("participants", filter=Q(participants__completed_at__isnull=False)),
        screened_out=Count("participants", filter=Q(participants__screened_out_at__isnull=False)),
        duplicates=Count("participants", filter=Q(participants__duplicate_claim=True)),
    )
    rows = []
    for link in links.order_by("-created_at", "-id"):
        state = "closed" if link.expires_at <= now else "full" if link.used >= link.cap else "paused" if link.paused_at else "open"
        params = "&".join(f"{p}={{{{%{p}%}}}}" for p in (link.participant_param, link.study_param, link.session_param))
        if link.signing_secret:
            # The recruiting side fills in the signature (docs/crowd.md); Prolific has no placeholder for it.
            params += f"&{SIGNATURE_PARAM}=<signature>"
        gold = recruitment_link_gold_recent(link=link) if link.gold_pause_below is not None else None
        url = f"{base_url}{reverse('recruitment-enter', kwargs={'token': link.token})}?{params}"
        rows.append({"link": link, "state": state, "url": url, "recent_gold": gold})
    return rows


def recruitment_link_gold_recent(*, link: RecruitmentLink) -> dict | None:
    """Gold accuracy of the link's most recent participants (gold_pause_window of them with a gold answer, joined since the last resume); reads only.

    Both dimensions count, each answer with an expected clip once. None when no participant has answered a gold pair yet.
    """
    participants = ExternalParticipant.objects.filter(link=link)
    if link.resumed_at is not None:
        participants = participants.filter(created_at__gte=link.resumed_at)
    golds = Judgment.objects.filter(pair__study_id=link.study_id, pair__kind__in=[Pair.Kind.GOLD, Pair.Kind.CATCH], annotator__in=participants.values("user_id"))
    rows = list(
        golds.order_by("-annotator__external_participant__created_at", "-id").values_list(
            "annotator_id", "alignment_choice_id", "musicality_choice_id", "pair__expected_alignment_id", "pair__expected_musicality_id"
        )
    )
    chosen: list[int] = []
    right = answered = 0
    for annotator, alignment, musicality, expected_a, expected_m in rows:
        if annotator not in chosen:
            if len(chosen) >= link.gold_pause_window:
                continue
            chosen.append(annotator)
        for choice, expected in ((alignment, expected_a), (musicality, expected_m)):
            if expected is not None and choice is not None:
                answered += 1
                right += choice == expected
    if not answered:
        return None
    return {"accuracy": right / answered, "answers": answered, "participants": len(chosen)}
