"""Judgments: the annotator's two answers on an assigned pair, accepted only when the server's own listening record covers the study's minimum.

A submit turns the assignment's slot on its pair from an active lock into a judgment;
the pair's counters follow by trigger in the same transaction (assignment.py), so the
overlap invariant holds between submits, skips and fresh locks.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

import numpy as np
from django.db import IntegrityError, connection, transaction
from django.db.models import F
from django.utils import timezone

from common import listening
from common.deferred import deferred_rows
from common.errors import ServiceError
from common.precompiled import Precompiled, PrecompiledInsert, PreparedSQL

from ..models import Assignment, DimensionPasses, Judgment, Pair
from .gate import questionnaire_gate_check
from .listening import LISTENING_CLIPS, assignment_lock_query, listening_batch_store, listening_require_recounted


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


def _submit_lock_query(*, assignment_id, annotator_id):
    """The annotator's assignment, row-locked, with its pair, the annotator's consent and the study's rules (SUBMIT_LOCK runs it)."""
    # The study's other rule read in the same statement instead of one more cache round trip.
    return assignment_lock_query(
        assignment_id=assignment_id,
        annotator_id=annotator_id,
        queryset=Assignment.objects.select_related("pair"),
        rationale_min_length=F("pair__study__rationale_min_length"),
        dimension_passes=F("pair__study__dimension_passes"),
        **LISTENING_CLIPS,
    )


# Compiled to SQL once per process (common.precompiled); the sentinels are values no id reaches.
SUBMIT_LOCK = Precompiled(_submit_lock_query, {"assignment_id": 7_300_000_031, "annotator_id": 7_300_000_033})
JUDGMENT_INSERT = PrecompiledInsert(Judgment)
SUBMITTED = PreparedSQL(
    lambda connection: f"UPDATE {connection.ops.quote_name(Assignment._meta.db_table)} SET {connection.ops.quote_name('state')} = %s WHERE id = %s"
)


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
    listening_batch: dict | None = None,
    study_id: int | None = None,
    passes: dict | None = None,
    now=None,
) -> tuple[dict, bool]:
    """Store the annotator's judgment on their assignment. Returns (answer, created).

    The same idempotency key twice returns the first answer and stores nothing new.
    `listening_batch` ({events, receipts, client_now}) is the page's listening since its last post, checked and
    stored in the same transaction before the listening rule is applied: a refused judgment keeps none of it, and
    the page sends it again with its next try. `study_id`: refuse an assignment of another study as not found.
    `passes`: how the separate screens were answered (services/passes.py, the only caller that gives it); a study
    that asks on separate screens takes no judgment without it.
    """
    now = now or timezone.now()
    idempotency_key = (idempotency_key or "").strip()
    if not idempotency_key or len(idempotency_key) > 100:
        raise ServiceError("idempotency_key is required (1-100 characters, e.g. a UUID made by the page).", code="bad_idempotency_key")

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
    batch = _batch_clean(listening_batch)

    stored_seq = None
    try:
        deferred_rows.flush()  # the recount before a refusal reads the audio notes this process queued
        with transaction.atomic():
            # The assignment's row lock orders concurrent submits (and listening posts) of one
            # assignment; a second submit waits here and then finds it submitted.
            assignment = SUBMIT_LOCK.first(assignment_id=assignment_id, annotator_id=annotator.pk)
            if assignment is None or (study_id is not None and assignment.pair.study_id != study_id):
                raise ServiceError("No such task for you.", code="not_found", status=404)
            if assignment.consented_at is None or assignment.withdrawn_at is not None:
                raise ServiceError(
                    "Your consent is withdrawn (or was never given), so no judgment can be stored for you.", code="consent_withdrawn", status=403
                )
            if assignment.state == Assignment.State.SUBMITTED:
                return _judgment_answer(_replay(idempotency_key=idempotency_key, annotator=annotator, assignment_id=assignment_id)), False
            if assignment.state == Assignment.State.SKIPPED:
                raise ServiceError("You skipped this pair; it cannot be judged now.", code="skipped", status=409)
            # A pair served before the study's questions were added (or to a client that skipped the page) is not
            # judged until they are answered; the study's id comes with the lock, the answer from the cache.
            questionnaire_gate_check(study_id=assignment.pair.study_id, annotator_id=annotator.pk)
            if assignment.dimension_passes == DimensionPasses.SEPARATE and passes is None:
                raise ServiceError(
                    "This study asks the two questions on separate screens: send one dimension at a time "
                    "(POST /api/studies/<name>/assignments/<id>/answer/ with dimension, choice and confidence), instruction following first.",
                    code="separate_passes",
                    status=409,
                )
            pair = assignment.pair
            if batch is not None:
                stored_seq = assignment.listening_seq
                listening_batch_store(assignment=assignment, annotator=annotator, now=now, **batch)
            if len(rationale) < assignment.rationale_min_length:
                raise ServiceError(
                    f"Write a rationale of at least {assignment.rationale_min_length} characters (you wrote {len(rationale)}).", code="rationale_too_short"
                )
            listening_require_recounted(assignment=assignment, minimum=assignment.min_listen_seconds)
            if assignment.state != Assignment.State.ACTIVE:
                # Released after its time: accept only if the slot was not handed to someone else.
                # An active lock past its time still holds its slot, so it needs no check.
                counters = Pair.objects.select_for_update().values("n_judgments", "n_live", "overlap").get(pk=pair.pk)
                if counters["n_judgments"] + counters["n_live"] >= counters["overlap"]:
                    raise ServiceError("Your time on this pair ran out and it went to another annotator; please take the next pair.", code="lock_expired", status=409)
            a_clip_id = assignment.a_clip_id
            b_clip_id = pair.other_clip_id(a_clip_id)
            pick = {"A": a_clip_id, "B": b_clip_id}
            # A judgment of this pair by this annotator, or this key used before, is refused by
            # the unique constraints (handled below); the pair's counters follow by trigger.
            judgment = JUDGMENT_INSERT.create(
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
                passes=passes or {},
            )
            SUBMITTED.execute(connection, [Assignment.State.SUBMITTED, assignment.pk])
    except ServiceError as exc:
        if stored_seq is not None and exc.code == "listening_too_short":
            # Where the server's numbers end: a page whose events were numbered below it (another tab posted
            # first) sends them again under numbers after it.
            exc.extra["next_seq"] = stored_seq + 1
        raise
    except IntegrityError:
        # The key was used before, or this annotator already judged this pair (in another assignment).
        return _judgment_answer(_replay(idempotency_key=idempotency_key, annotator=annotator, assignment_id=assignment_id)), False
    _after_judgment(judgment)
    return _judgment_answer(judgment), True


def _batch_clean(raw) -> dict | None:
    """The listening that rides with a judgment: {events, receipts, client_now}, each part optional but not all."""
    if raw is None:
        return None
    if not isinstance(raw, dict) or set(raw) - {"events", "receipts", "client_now"}:
        raise ServiceError("listening must be an object with events, receipts and client_now.", code="bad_events")
    events, receipts = raw.get("events") or [], raw.get("receipts") or []
    if not isinstance(events, list) or not isinstance(receipts, list):
        raise ServiceError("listening.events and listening.receipts must be lists.", code="bad_events")
    if events and raw.get("client_now") is None:
        # Stamped on arrival, a whole pair's events would land at one instant and count nothing.
        raise ServiceError("listening.client_now is required with events: the page's clock (ms) as it sends them.", code="bad_events")
    return {"events": events, "receipts": receipts, "client_now": raw.get("client_now") if events else None}


def _replay(*, idempotency_key: str, annotator, assignment_id: int) -> Judgment:
    """The stored judgment this request repeats, or the refusal that says why it is not one."""
    replay = Judgment.objects.filter(idempotency_key=idempotency_key).first()
    if replay is None:
        raise ServiceError("You already judged this pair; the first answer was kept.", code="already_submitted", status=409)
    if replay.annotator_id != annotator.pk or replay.assignment_id != assignment_id:
        raise ServiceError("This idempotency key was already used for another submission.", code="key_reused", status=409)
    return replay


def _kept_log(record: dict, client_log: dict | None) -> dict:
    log = dict(record or listening.evidence(events=[], fetches=[], durations={"A": 0.0, "B": 0.0}))
    if client_log is not None:
        log["client"] = client_log
    return log


# Hooks other apps register (e.g. live report refresh); called after the commit.
judgment_listeners: list = []


def _after_judgment(judgment: Judgment) -> None:
    for listener in judgment_listeners:
        # robust: a failing listener is logged; the stored judgment and the answer stand.
        transaction.on_commit(lambda listener=listener: listener(judgment), robust=True)

