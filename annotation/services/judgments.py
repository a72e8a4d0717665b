"""Judgments: the annotator's two answers on an assigned pair, accepted only when the server's own listening record covers the study's minimum.

A submit locks the pair row like the assignment engine does (assignment.py), so the
overlap invariant holds between submits, skips and fresh locks.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

import numpy as np
from django.db import IntegrityError, transaction
from django.utils import timezone

from auditorium import listening
from auditorium.errors import ServiceError

from ..models import Assignment, Judgment, Pair
from .assignment import live_load
from .listening import listening_require


def _confidence(value, field: str) -> Decimal:
    try:
        number = Decimal(str(value))
    except (InvalidOperation, ValueError, TypeError):
        raise ServiceError(f"{field}: give a number from 1 to 5 (half steps allowed).", code="bad_confidence") from None
    if not number.is_finite() or number < 1 or number > 5 or (number * 2) % 1 != 0:
        raise ServiceError(f"{field}: {value} is not allowed; use 1, 1.5, 2, ... 5.", code="bad_confidence")
    return number.quantize(Decimal("0.1"))


LOG_FIELDS = ("plays", "seconds", "seeks", "loops")


def listening_log_clean(raw) -> dict | None:
    """The page's own listening log, kept beside the server's record for reference; never used to accept a judgment."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ServiceError("listening_log must be an object with A and B entries.", code="bad_log")
    log: dict = {}
    for side in ("A", "B"):
        entry = raw.get(side)
        if not isinstance(entry, dict):
            raise ServiceError(f"listening_log.{side} is missing.", code="bad_log")
        clean = {}
        for key in LOG_FIELDS:
            value = entry.get(key, 0)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value) or value < 0:
                raise ServiceError(f"listening_log.{side}.{key} must be a non-negative number.", code="bad_log")
            clean[key] = round(float(value), 3) if key == "seconds" else int(value)
        log[side] = clean
    switches = raw.get("switches", 0)
    if isinstance(switches, bool) or not isinstance(switches, (int, float)) or switches < 0:
        raise ServiceError("listening_log.switches must be a non-negative number.", code="bad_log")
    log["switches"] = int(switches)
    return log


def _judgment_answer(judgment: Judgment) -> dict:
    return {"judgment": judgment.pk, "pair": judgment.pair_id, "created_at": judgment.created_at.isoformat()}


def judgment_submit(
    *,
    assignment_id: int,
    annotator,
    alignment: str,
    alignment_confidence,
    musicality: str,
    musicality_confidence,
    rationale: str = "",
    listening_log=None,
    time_on_page_ms: int | None = None,
    idempotency_key: str,
    now=None,
) -> tuple[dict, bool]:
    """Store the annotator's judgment on their assignment. Returns (answer, created).

    The same idempotency key twice returns the first answer and stores nothing new.
    """
    now = now or timezone.now()
    idempotency_key = (idempotency_key or "").strip()
    if not idempotency_key or len(idempotency_key) > 100:
        raise ServiceError("idempotency_key is required (1-100 characters, e.g. a UUID made by the page).", code="bad_idempotency_key")

    replay = Judgment.objects.filter(idempotency_key=idempotency_key).first()
    if replay is not None:
        if replay.annotator_id != annotator.pk or replay.assignment_id != assignment_id:
            raise ServiceError("This idempotency key was already used for another submission.", code="key_reused", status=409)
        return _judgment_answer(replay), False

    sides = {}
    for name, value in (("alignment", alignment), ("musicality", musicality)):
        if value not in ("A", "B"):
            raise ServiceError(f"{name}: choose A or B.", code="bad_choice")
        sides[name] = value
    conf_alignment = _confidence(alignment_confidence, "alignment_confidence")
    conf_musicality = _confidence(musicality_confidence, "musicality_confidence")
    rationale = (rationale or "").strip()
    if len(rationale) > 5000:
        raise ServiceError("Keep the rationale under 5000 characters.", code="too_long")
    client_log = listening_log_clean(listening_log)
    if time_on_page_ms is not None and (not isinstance(time_on_page_ms, int) or isinstance(time_on_page_ms, bool) or time_on_page_ms < 0):
        raise ServiceError("time_on_page_ms must be a non-negative integer.", code="bad_time")

    try:
        with transaction.atomic():
            found = (
                Assignment.objects.filter(pk=assignment_id, annotator=annotator)
                .values_list("pair_id", "annotator__annotator_profile__consented_at", "annotator__annotator_profile__withdrawn_at")
                .first()
            )
            if found is None:
                raise ServiceError("No such task for you.", code="not_found", status=404)
            pair_id, consented_at, withdrawn_at = found
            if consented_at is None or withdrawn_at is not None:
                raise ServiceError(
                    "Your consent is withdrawn (or was never given), so no judgment can be stored for you.", code="consent_withdrawn", status=403
                )
            pair = _lock_pair_blocking(pair_id)
            # A concurrent request with the same key may have committed while this one waited for the lock.
            replay = Judgment.objects.filter(idempotency_key=idempotency_key, annotator=annotator, assignment_id=assignment_id).first()
            if replay is not None:
                return _judgment_answer(replay), False
            # Read after the lock: a concurrent submit or skip may have changed it.
            assignment = Assignment.objects.get(pk=assignment_id)
            study = pair.study
            if assignment.state == Assignment.State.SUBMITTED or Judgment.objects.filter(annotator=annotator, pair=pair).exists():
                raise ServiceError("You already judged this pair; the first answer was kept.", code="already_submitted", status=409)
            if assignment.state == Assignment.State.SKIPPED:
                raise ServiceError("You skipped this pair; it cannot be judged now.", code="skipped", status=409)
            if len(rationale) < study.rationale_min_length:
                raise ServiceError(
                    f"Write a rationale of at least {study.rationale_min_length} characters (you wrote {len(rationale)}).", code="rationale_too_short"
                )
            listening_require(record=assignment.listening, minimum=study.min_listen_seconds)
            if assignment.state != Assignment.State.ACTIVE or assignment.lock_expires_at <= now:
                # The lock lapsed: accept only if the slot was not handed to someone else.
                others = live_load([pair.pk], now)[pair.pk]
                if others >= pair.overlap:
                    raise ServiceError("Your time on this pair ran out and it went to another annotator; please take the next pair.", code="lock_expired", status=409)
            a_clip_id = assignment.a_clip_id
            b_clip_id = pair.other_clip_id(a_clip_id)
            pick = {"A": a_clip_id, "B": b_clip_id}
            judgment = Judgment.objects.create(
                annotator=annotator,
                pair=pair,
                assignment=assignment,
                a_clip_id=a_clip_id,
                alignment_choice_id=pick[sides["alignment"]],
                alignment_confidence=conf_alignment,
                musicality_choice_id=pick[sides["musicality"]],
                musicality_confidence=conf_musicality,
                rationale=rationale,
                listening_log=_kept_log(assignment.listening, client_log),
                time_on_page_ms=time_on_page_ms,
                idempotency_key=idempotency_key,
                source=Judgment.Source.PLATFORM,
                selection=assignment.selection,
            )
            assignment.state = Assignment.State.SUBMITTED
            assignment.save(update_fields=["state"])
    except IntegrityError:
        # A concurrent duplicate (same key or same annotator+pair) won the race.
        replay = Judgment.objects.filter(idempotency_key=idempotency_key, annotator=annotator).first()
        if replay is not None:
            return _judgment_answer(replay), False
        raise ServiceError("You already judged this pair; the first answer was kept.", code="already_submitted", status=409) from None
    _after_judgment(judgment)
    return _judgment_answer(judgment), True


def _kept_log(record: dict, client_log: dict | None) -> dict:
    log = dict(record or listening.evidence(events=[], fetches=[], durations={"A": 0.0, "B": 0.0}))
    if client_log is not None:
        log["client"] = client_log
    return log


def _lock_pair_blocking(pair_id: int) -> Pair:
    # of=self: locking the joined study row too would serialise every submit in the study.
    return Pair.objects.select_for_update(of=("self",)).select_related("study").get(pk=pair_id)


# Hooks other apps register (e.g. live report refresh); called after the commit.
judgment_listeners: list = []


def _after_judgment(judgment: Judgment) -> None:
    for listener in judgment_listeners:
        # robust: a failing listener is logged; the stored judgment and the answer stand.
        transaction.on_commit(lambda listener=listener: listener(judgment), robust=True)

