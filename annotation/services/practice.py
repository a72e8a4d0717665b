"""The practice round: practice items answered with feedback, never stored as judgments.

Practice comes from its own pool. A gold pair named as practice leaves the study's pairs (it is
moved, not copied), and only a pair no one was ever served can be moved; an item whose clips
are also in a pair the study serves is never shown (`practice_servable`). So the feedback of a
practice answer cannot teach the expected answer of a gold check that comes later.
"""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.urls import reverse

from common import audio_proof
from common.errors import ServiceError

from ..crowd_models import PracticeAnswer, PracticeItem
from ..models import Pair


def practice_servable(*, study):
    """The study's practice items that share no clip with any pair the study serves (the one rule for what practice may show)."""
    served = Pair.objects.filter(study=study)
    used = Q(clip_a__in=served.values("clip_a")) | Q(clip_a__in=served.values("clip_b")) | Q(clip_b__in=served.values("clip_a")) | Q(clip_b__in=served.values("clip_b"))
    return PracticeItem.objects.filter(study=study).exclude(used)


@transaction.atomic
def practice_from_gold(*, pair: Pair, explanation: str, position: int = 0) -> PracticeItem:
    """Move a gold (or catch) pair into the practice pool: a practice item with its content and expected answers,
    and the pair leaves the study's pairs, so it is never served for real."""
    if pair.kind == Pair.Kind.REGULAR or (pair.expected_alignment_id is None and pair.expected_musicality_id is None):
        raise ServiceError("Practice items come from gold or catch pairs with an expected answer.", code="not_gold")
    if not (explanation or "").strip():
        raise ServiceError("Write the explanation shown after the answer.", code="no_explanation")
    if pair.judgments.exists() or pair.assignments.exists():
        message = f"Pair {pair.pk} was already served to annotators; only a gold pair no one has seen can become a practice pair."
        raise ServiceError(message, code="served", extra={"errors": {"pair_id": [message]}})
    others = Pair.objects.filter(study=pair.study).exclude(pk=pair.pk)
    if others.filter(Q(clip_a__in=(pair.clip_a_id, pair.clip_b_id)) | Q(clip_b__in=(pair.clip_a_id, pair.clip_b_id))).exists():
        message = f"Pair {pair.pk} shares a clip with another pair of this study, so its practice answer would give that pair's answer away."
        raise ServiceError(message, code="shared_clip", extra={"errors": {"pair_id": [message]}})
    item = PracticeItem.objects.create(
        study=pair.study,
        position=position,
        condition=pair.condition,
        clip_a=pair.clip_a,
        clip_b=pair.clip_b,
        expected_alignment=pair.expected_alignment,
        expected_musicality=pair.expected_musicality,
        explanation=explanation.strip(),
        from_pair=None,
    )
    pair.delete()
    return item


def practice_next(*, study, annotator) -> PracticeItem | None:
    """The first practice item the annotator has not answered yet, or None when the round is done."""
    return practice_servable(study=study).exclude(answers__annotator=annotator).select_related("condition", "clip_a", "clip_b").order_by("position", "id").first()


def practice_answer(*, item_id: int, study, annotator, shown_a: str, alignment: str, musicality: str) -> PracticeAnswer:
    """Store one practice answer (A / B as shown; `shown_a` is which stored clip was A) and return it with its correctness."""
    item = practice_servable(study=study).filter(pk=item_id).first()
    if item is None:
        raise ServiceError("No such practice pair in this study.", code="not_found", status=404)
    if shown_a not in ("a", "b"):
        raise ServiceError("The page lost which clip was shown first; reload it.", code="bad_side")
    first, second = (item.clip_a, item.clip_b) if shown_a == "a" else (item.clip_b, item.clip_a)
    picks = {}
    for name, value in (("alignment", alignment), ("musicality", musicality)):
        if value not in ("A", "B"):
            raise ServiceError(f"{name}: choose A or B.", code="bad_choice")
        picks[name] = first if value == "A" else second
    try:
        with transaction.atomic():
            return PracticeAnswer.objects.create(
                item=item,
                annotator=annotator,
                alignment_choice=picks["alignment"],
                musicality_choice=picks["musicality"],
                alignment_right=None if item.expected_alignment_id is None else picks["alignment"].pk == item.expected_alignment_id,
                musicality_right=None if item.expected_musicality_id is None else picks["musicality"].pk == item.expected_musicality_id,
            )
    except IntegrityError:
        raise ServiceError("You already answered this practice pair.", code="already_answered", status=409) from None


def practice_add(*, study, pair_id: int, explanation: str) -> PracticeItem:
    """Name one of the study's gold pairs as a practice pair, placed after the ones named before."""
    pair = Pair.objects.filter(pk=pair_id, study=study).select_related("study").first()
    if pair is None:
        raise ServiceError(f"Pair {pair_id} is not a pair of this study; choose one of its gold pairs.", code="not_found", extra={"errors": {"pair_id": ["Choose one of this study's gold pairs."]}})
    last = PracticeItem.objects.filter(study=study).order_by("-position").values_list("position", flat=True).first()
    return practice_from_gold(pair=pair, explanation=explanation, position=0 if last is None else last + 1)


def practice_remove(*, study, item_id: int) -> int:
    """Remove a practice pair and the practice answers given to it; returns how many answers went with it."""
    item = PracticeItem.objects.filter(pk=item_id, study=study).first()
    if item is None:
        raise ServiceError("No such practice pair in this study; it may have been removed already.", code="not_found", status=404)
    with transaction.atomic():
        answers = item.answers.count()
        item.delete()
    return answers


def practice_receipts_check(*, item_id: int, shown_a: str, receipts: dict) -> None:
    """Refuse a practice answer unless the page proved receiving both clips (common.audio_proof: each clip's
    Audio-Proof answered with its bytes), with the reason. `receipts`: the form's receipt per clip as shown (A, B)."""
    if shown_a not in ("a", "b"):
        raise ServiceError("The page lost which clip was shown first; reload it.", code="bad_side")
    which = {"A": shown_a, "B": "b" if shown_a == "a" else "a"}
    urls = {side: reverse("practice-audio", kwargs={"item_id": item_id, "which": which[side]}) for side in which}
    # The route sends only whole files (no ranges): the receipts alone show what was received.
    proven = audio_proof.whole_response_sides(fields=receipts, urls=urls)
    missing = [side for side in ("A", "B") if side not in proven]
    if missing:
        raise ServiceError(
            f"Play both clips before answering: the practice counts only what was heard (the page has not shown receiving clip {' or '.join(missing)}).",
            code="listening_too_short",
        )
