"""Separate screens: a pair's two dimensions answered one after the other on the same assignment.

Both screens belong to one assignment, so the listening proof is the one the single screen has (the same
record, the same events, receipts and refusals), checked again with each answer. The first answer waits on the
assignment (Assignment.first_pass); the second makes the judgment through `judgment_submit`, with both answers and
how they were given (Judgment.passes). Each answer has its own idempotency key: sent twice, it is stored once.
Two passes over all the pairs would keep the answers further apart, but the pair would be served, locked and
heard twice, and its listening proved twice; consecutive screens keep one proof per judgment.
"""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from common import listening
from common.deferred import deferred_rows
from common.errors import ServiceError

from ..models import PASS_ORDER, Assignment, Dimension, DimensionPasses, Judgment, Pair
from .gate import questionnaire_gate_check
from .judgments import _batch_clean, _confidence, judgment_submit, listening_log_clean
from .listening import LISTENING_CLIPS, SIDES, assignment_lock_query, listening_batch_store, listening_require_recounted

LABELS = dict(Dimension.choices)


def _label(dimension: str) -> str:
    return LABELS[dimension].lower()


def _first_live(assignment: Assignment) -> dict:
    """The first answer held on the assignment, unless the pair was served again since (its lock ran out): the two
    answers of one judgment come from one serving, so a first answer from an earlier one is asked again."""
    first = assignment.first_pass or {}
    if first and datetime.fromisoformat(first["answered_at"]) < assignment.served_at:
        return {}
    return first


def passes_state(assignment: Assignment) -> dict:
    """What the page needs to know of an assignment's screens: the order, what is answered and what comes next."""
    answered = [assignment.first_pass["dimension"]] if _first_live(assignment) else []
    return {"mode": DimensionPasses.SEPARATE, "order": list(PASS_ORDER), "answered": answered, "current": PASS_ORDER[len(answered)]}


def _step_answer(assignment_id: int, first: dict) -> dict:
    # `heard`: the server's count the first answer was accepted on, which the page's next screen goes on from.
    return {"assignment": assignment_id, "complete": False, "answered": [first["dimension"]], "next_dimension": PASS_ORDER[1], "answered_at": first["answered_at"], "heard": first["heard"]}


def dimension_answer_submit(
    *,
    assignment_id: int,
    annotator,
    dimension: str,
    choice: str,
    confidence,
    idempotency_key: str,
    rationale: str = "",
    listening_log=None,
    time_on_page_ms: int | None = None,
    listening_batch: dict | None = None,
    study_id: int | None = None,
    now=None,
) -> tuple[dict, bool]:
    """Store one dimension's answer on a separate-screens assignment. Returns (answer, created).

    The first dimension is held on the assignment ({"complete": False, "next_dimension"}); the second makes the
    judgment and answers as `judgment_submit` does ({"complete": True, "judgment", ...}). A dimension out of its
    turn, one already answered under another key, or a study that asks both on one screen is refused with what to
    send instead; nothing is stored then.
    """
    now = now or timezone.now()
    idempotency_key = (idempotency_key or "").strip()
    if not idempotency_key or len(idempotency_key) > 100:
        raise ServiceError("idempotency_key is required (1-100 characters, e.g. a UUID made by the page).", code="bad_idempotency_key")
    if dimension not in PASS_ORDER:
        raise ServiceError(f"dimension: give one of {', '.join(PASS_ORDER)}.", code="bad_dimension")
    if choice not in SIDES:
        raise ServiceError(f"{dimension}: choose A or B.", code="bad_choice")
    confidence = _confidence(confidence, f"{dimension}_confidence")
    rationale = (rationale or "").strip()
    if len(rationale) > 5000:
        raise ServiceError("Keep the rationale under 5000 characters.", code="too_long")
    batch = _batch_clean(listening_batch)

    deferred_rows.flush()
    with transaction.atomic():
        # The same row lock as the submit's: a second tab's answer waits here, then finds this one stored.
        assignment = (
            assignment_lock_query(
                assignment_id=assignment_id,
                annotator_id=annotator.pk,
                queryset=Assignment.objects.select_related("pair"),
                study_pk=F("pair__study_id"),
                dimension_passes=F("pair__study__dimension_passes"),
                **LISTENING_CLIPS,
            )
        ).first()
        if assignment is None or (study_id is not None and assignment.study_pk != study_id):
            raise ServiceError("No such task for you.", code="not_found", status=404)
        if assignment.consented_at is None or assignment.withdrawn_at is not None:
            raise ServiceError("Your consent is withdrawn (or was never given), so no answer can be stored for you.", code="consent_withdrawn", status=403)
        if assignment.state == Assignment.State.SUBMITTED:
            return _replay_done(assignment=assignment, idempotency_key=idempotency_key), False
        if assignment.state == Assignment.State.SKIPPED:
            raise ServiceError("You skipped this pair; it cannot be judged now.", code="skipped", status=409)
        questionnaire_gate_check(study_id=assignment.study_pk, annotator_id=annotator.pk)
        if assignment.dimension_passes != DimensionPasses.SEPARATE:
            raise ServiceError(
                "This study asks both questions on one screen: send both dimensions together to the judgment endpoint.", code="together_study", status=409
            )
        first = _first_live(assignment)
        if first and first.get("key") == idempotency_key:
            if first["dimension"] != dimension:
                raise ServiceError("This idempotency key was already used for another answer.", code="key_reused", status=409)
            return _step_answer(assignment.pk, first), False
        expected = PASS_ORDER[1] if first else PASS_ORDER[0]
        if dimension != expected:
            if first and dimension == first["dimension"]:
                raise ServiceError(
                    f"You already answered {_label(dimension)} on this pair; the first answer was kept. Answer {_label(expected)} now.",
                    code="step_done",
                    status=409,
                )
            raise ServiceError(
                f"This pair asks {_label(expected)} first; answer it before {_label(dimension)}.", code="wrong_step", status=409, extra={"expected": expected}
            )
        if not first:
            return _first_store(assignment, annotator=annotator, dimension=dimension, choice=choice, confidence=confidence, rationale=rationale,
                                time_on_page_ms=time_on_page_ms, listening_log=listening_log, key=idempotency_key, batch=batch, now=now), True  # fmt: skip
        answers = {
            first["dimension"]: (_side(assignment, first["choice"]), first["confidence"]),
            dimension: (choice, confidence),
        }
        passes = {
            "order": list(PASS_ORDER),
            "steps": [
                {k: first[k] for k in ("dimension", "answered_at", "heard", "time_on_page_ms")} | {"key": first["key"]},
                {"dimension": dimension, "answered_at": now.isoformat(), "time_on_page_ms": time_on_page_ms},
            ],
        }
        answer, created = judgment_submit(
            assignment_id=assignment.pk,
            annotator=annotator,
            alignment=answers["alignment"][0],
            alignment_confidence=answers["alignment"][1],
            musicality=answers["musicality"][0],
            musicality_confidence=answers["musicality"][1],
            rationale="\n".join(text for text in (first.get("rationale", ""), rationale) if text),
            listening_log=listening_log,
            time_on_page_ms=time_on_page_ms,
            idempotency_key=idempotency_key,
            listening_batch=batch,
            study_id=study_id,
            passes=passes,
            now=now,
        )
    return {**answer, "complete": True}, created


def _side(assignment: Assignment, clip_id: int) -> str:
    return "A" if clip_id == assignment.a_clip_id else "B"


def _first_store(assignment: Assignment, *, annotator, dimension, choice, confidence, rationale, time_on_page_ms, listening_log, key, batch, now) -> dict:
    """Check the listening as the submit does and hold the first answer on the assignment."""
    listening_log_clean(listening_log)  # a malformed page log is refused here too, though only the judgment keeps it
    if time_on_page_ms is not None and (not isinstance(time_on_page_ms, int) or isinstance(time_on_page_ms, bool) or time_on_page_ms < 0):
        raise ServiceError("time_on_page_ms must be a non-negative integer.", code="bad_time")
    stored_seq = assignment.listening_seq
    try:
        if batch is not None:
            listening_batch_store(assignment=assignment, annotator=annotator, now=now, **batch)
        listening_require_recounted(assignment=assignment, minimum=assignment.min_listen_seconds)
    except ServiceError as exc:
        if batch is not None and exc.code == "listening_too_short":
            exc.extra["next_seq"] = stored_seq + 1
        raise
    if assignment.state != Assignment.State.ACTIVE:
        counters = Pair.objects.select_for_update().values("n_judgments", "n_live", "overlap").get(pk=assignment.pair_id)
        if counters["n_judgments"] + counters["n_live"] >= counters["overlap"]:
            raise ServiceError("Your time on this pair ran out and it went to another annotator; please take the next pair.", code="lock_expired", status=409)
    pick = {"A": assignment.a_clip_id, "B": assignment.pair.other_clip_id(assignment.a_clip_id)}
    first = {
        "dimension": dimension,
        "choice": pick[choice],
        "confidence": str(confidence),
        "rationale": rationale,
        "key": key,
        "answered_at": now.isoformat(),
        "heard": listening.heard(assignment.listening or {}, SIDES),
        "time_on_page_ms": time_on_page_ms,
    }
    Assignment.objects.filter(pk=assignment.pk).update(first_pass=first)
    return _step_answer(assignment.pk, first)


def _replay_done(*, assignment: Assignment, idempotency_key: str) -> dict:
    """The answer a repeat gets once the judgment is stored: the judgment's own, or the first screen's."""
    judgment = Judgment.objects.filter(assignment_id=assignment.pk).only("id", "pair_id", "created_at", "passes", "idempotency_key").first()
    if judgment is not None and judgment.idempotency_key == idempotency_key:
        return {"judgment": judgment.pk, "pair": judgment.pair_id, "created_at": judgment.created_at.isoformat(), "complete": True}
    steps = (judgment.passes or {}).get("steps") or [] if judgment is not None else []
    if steps and steps[0].get("key") == idempotency_key:
        return _step_answer(assignment.pk, steps[0])
    raise ServiceError("You already judged this pair; the first answer was kept.", code="already_submitted", status=409)
