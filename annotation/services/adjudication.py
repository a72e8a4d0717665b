"""Writes for adjudication: naming a study's adjudicators, and the one decision on a disputed pair.

Two adjudicators deciding the same pair at once end with one decision: the pair's row is locked for the
check and the write, and the unique pair of Adjudication refuses a second row on an engine without row locks.
The one who comes second is told what was decided, by whom and when.
"""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.urls import reverse

from common import audio_proof
from common.errors import ServiceError

from ..adjudication_models import Adjudication, StudyAdjudicator, Verdict
from ..adjudication_selectors import adjudication_pair, decision_text, is_adjudicator, queue_item_of
from ..models import Pair, Study
from .people import profile_ensure

# The form's answers: A and B name the pair's stored clips (the item page always shows clip_a as A).
ANSWERS = {"A": Verdict.CLIP_A, "B": Verdict.CLIP_B, "tie": Verdict.TIE}
REASON_MAX = 5000
DIMENSION_NAMES = {"alignment": "instruction following", "musicality": "musicality"}


def adjudicators_set(*, study: Study, users: list, granted_by) -> list:
    """Replace the study's adjudicators; each gets a pseudonym, which is all an export says of who decided."""
    with transaction.atomic():
        keep = {u.pk for u in users}
        StudyAdjudicator.objects.filter(study=study).exclude(user_id__in=keep).delete()
        for user in users:
            profile_ensure(user=user)
            StudyAdjudicator.objects.get_or_create(study=study, user=user, defaults={"granted_by": granted_by})
    return users


def adjudication_audio_url(*, study: Study, pair_id: int, side: str) -> str:
    return reverse("study-adjudication-audio", kwargs={"name": study.name, "item_id": pair_id, "which": side})


def _already(decision: Adjudication) -> ServiceError:
    return ServiceError(f"This pair was already decided: {decision_text(decision)}. Nothing was changed.", code="already_decided", status=409, extra={"decision_id": decision.pk})


def _clean(*, alignment: str, musicality: str, reason: str) -> tuple[dict, str]:
    errors: dict[str, list[str]] = {}
    verdicts = {}
    for dim, value in (("alignment", alignment), ("musicality", musicality)):
        if value not in ANSWERS:
            errors[dim] = [f"Choose A, B or tie for {DIMENSION_NAMES[dim]}."]
        else:
            verdicts[dim] = ANSWERS[value]
    reason = (reason or "").strip()
    if not reason:
        errors["reason"] = ["Give the reason for the decision: it goes into the export beside it."]
    elif len(reason) > REASON_MAX:
        errors["reason"] = [f"Keep the reason under {REASON_MAX} characters (it has {len(reason)})."]
    if errors:
        raise ServiceError(" ".join(m for ms in errors.values() for m in ms), code="invalid", extra={"errors": errors})
    return verdicts, reason


def adjudication_decide(*, study: Study, pair_id: int, adjudicator, alignment: str, musicality: str, reason: str, receipts: dict) -> Adjudication:
    """Record the decision on a queued pair of `study` (answers "A", "B" or "tie"; A is the pair's clip_a) with its
    reason. Refused, with nothing written, unless `adjudicator` adjudicates the study, the pair is in its queue, and
    the page proved receiving both clips (`receipts`: side -> the Audio-Proof receipt's JSON, as the practice round
    sends them); a pair already decided is refused with that decision (409)."""
    if not is_adjudicator(study=study, user=adjudicator):
        raise ServiceError(f"Only the adjudicators the study's owner names may decide the pairs of {study.name}.", code="forbidden", status=403)
    verdicts, reason = _clean(alignment=alignment, musicality=musicality, reason=reason)
    pair = adjudication_pair(study=study, pair_id=pair_id)
    if pair is None:
        raise ServiceError("No such pair in this study.", code="not_found", status=404)
    urls = {side: adjudication_audio_url(study=study, pair_id=pair.pk, side=side.lower()) for side in ("A", "B")}
    proven = audio_proof.whole_response_sides(fields=receipts, urls=urls)
    missing = [side for side in ("A", "B") if side not in proven]
    if missing:
        raise ServiceError(f"Listen to both clips before deciding: the page has not shown receiving clip {' or '.join(missing)}.", code="listening_too_short")
    item = queue_item_of(study=study, pair_id=pair.pk)
    with transaction.atomic():
        Pair.objects.select_for_update().filter(pk=pair.pk).first()
        existing = Adjudication.objects.filter(pair=pair).select_related("adjudicator__annotator_profile").first()
        if existing is not None:
            raise _already(existing)
        if item is None:
            raise ServiceError("This pair is not in the adjudication queue (its votes agree); nothing was changed.", code="not_queued", status=409)
        evidence = {"votes": item.votes, "answers": item.answers, "agreement": item.agreement, "posterior": item.posterior, "judge": item.judge, "reasons": item.reasons}
        profile_ensure(user=adjudicator)
        try:
            with transaction.atomic():
                return Adjudication.objects.create(pair=pair, adjudicator=adjudicator, reason=reason, evidence=evidence, **verdicts)
        except IntegrityError:
            existing = Adjudication.objects.select_related("adjudicator__annotator_profile").get(pair=pair)
    raise _already(existing)
