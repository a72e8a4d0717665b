"""The assignment engine: which pair an annotator gets next, locks on pairs, skips.

The engine's invariant, for every pair:

    judgments + active locks  <=  pair.overlap

holds on the pair's counters (n_judgments, n_live), which database triggers keep in
the transaction of every judgment and assignment write. A new lock is taken only on a
pair row this request holds (SELECT ... FOR UPDATE SKIP LOCKED on PostgreSQL; SQLite
serialises writers through its IMMEDIATE transactions, see settings) and whose
counters, read from that locked row, leave room. A lock past its time keeps its slot
until the engine marks it expired (when no pair with room is left), so a late submit on
a lapsed but unreleased lock never over-fills its pair.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from datetime import timezone as dt_timezone

from django.db import connection, transaction
from django.db.models import BigIntegerField, Case, Exists, F, OuterRef, Q, Subquery, Value, When
from django.db.models.expressions import RawSQL
from django.db.models.functions import Mod
from django.utils import timezone

from common.errors import ServiceError
from common.precompiled import Precompiled, PrecompiledInsert

from .. import cached
from ..active import draw_mode
from ..models import ORDER_PRIME, Assignment, ChosenBy, Judgment, Pair, Study, StudyAnnotator
from .priorities import active_candidates


def planner_stats_refresh(*models) -> None:
    """Refresh the database planner's statistics for these tables after a bulk load.

    Studies are annotated right after their pairs are imported, before autovacuum has
    looked at them; without statistics PostgreSQL plans the per-annotator counts as nested
    loops over the whole study (measured on 300 pairs: 12 ms instead of 0.3 ms a query).
    """
    with connection.cursor() as cursor:
        for model in models:
            cursor.execute(f"ANALYZE {connection.ops.quote_name(model._meta.db_table)}")


CONTENT = ("condition__reference", "clip_a", "clip_b")


def _membership_query(*, study_id: int, annotator_id: int, now):
    live = (
        Assignment.objects.filter(annotator_id=annotator_id, pair__study_id=study_id, state=Assignment.State.ACTIVE, lock_expires_at__gt=now)
        .order_by("served_at")
        .values("id")[:1]
    )
    return (
        StudyAnnotator.objects.select_for_update(of=("self",))
        .filter(study_id=study_id, annotator_id=annotator_id, is_active=True)
        .annotate(
            current_id=Subquery(live),
            # The study's counters, kept by triggers (migration 0012) as the row's own n_draws and n_done.
            n_pairs=F("study__n_pairs"),
            n_special=F("study__n_special"),
            # The row's lock_version as this statement's snapshot saw it (see below).
            seen_version=Subquery(StudyAnnotator.objects.filter(pk=OuterRef("pk")).values("lock_version")[:1]),
        )
        .order_by("pk")[:1]
    )


# Large odd values no constant of these queries can equal; see common.precompiled.
_SENTINEL_NOW = datetime(2001, 2, 3, 4, 5, 6, 789012, tzinfo=dt_timezone.utc)
MEMBERSHIP = Precompiled(_membership_query, {"study_id": 7_300_000_001, "annotator_id": 7_300_000_003, "now": _SENTINEL_NOW})


def _annotator_state(*, study: Study, annotator, now) -> StudyAnnotator | None:
    """The membership row, locked, with what `next` needs about this annotator in the study, in one query.

    The row lock makes one annotator's concurrent requests take turns, so each later one
    finds the lock the first one took. The row carries how many pairs they were ever served
    here (n_draws, which seeds the draw) and how many they judged (n_done); annotated: their
    live lock (current_id), and the study's pair and gold/catch counts.
    """
    values = {"study_id": study.pk, "annotator_id": annotator.pk, "now": now}
    membership = MEMBERSHIP.first(**values)
    if membership is not None and membership.lock_version != membership.seen_version:
        # This statement waited for the row lock while another request of this annotator took a
        # lock; the row came back in its new version but current_id is from the older
        # snapshot. Read again: the row lock is held now, so this read is current.
        membership = MEMBERSHIP.first(**values)
    return membership


SPECIAL_KINDS = [Pair.Kind.GOLD, Pair.Kind.CATCH]


@transaction.atomic
def assignment_next(*, study: Study, annotator, now=None, consented: bool | None = None) -> Assignment | None:
    """The annotator's next pair: their live lock if any, else a fresh lock on a pair with room, else None.

    The returned assignment carries its pair's content (condition, reference, clips) and
    `progress` ({"done", "planned"}: judged here, and the study's target or pair count). `consented`: the
    annotator's consent as the caller already read it from the cache (read here if not given).
    """
    now = now or timezone.now()
    membership = _annotator_state(study=study, annotator=annotator, now=now)
    if membership is None:
        raise ServiceError("You are not an annotator of this study.", code="not_member", status=403)
    if not (cached.has_consented(annotator.pk) if consented is None else consented):
        raise ServiceError("Consent is needed before the first task.", code="consent_required", status=403)
    if not study.is_active:
        return None
    # What the counters give for free; the caller turns it into the shown progress (selectors.pair_progress).
    planned = study.annotator_target or membership.n_pairs
    progress = {"done": membership.n_done, "planned": max(planned, membership.n_done)}

    if membership.current_id is not None:
        current = Assignment.objects.select_related(*(f"pair__{path}" for path in CONTENT)).get(pk=membership.current_id)
        current.progress = progress
        return current
    if study.annotator_target and membership.n_done >= study.annotator_target:
        return None

    draw = membership.n_draws
    has_special = membership.n_special > 0
    rng = random.Random(f"{membership.seed}:{draw}")
    # Gold and catch pairs come at the study's rate; either pool stands in when the other is empty.
    special_first = rng.random() < study.gold_rate
    mode = draw_mode(selection=study.selection, seed=membership.seed, draw=draw, share=study.active_share)
    if mode != ChosenBy.RANDOM and not (special_first and has_special):
        # An active draw: the study's ranking first; with nothing ranked left, the random order below.
        for pair_id in active_candidates(study=study, annotator=annotator, mode=mode, now=now):
            assignment = _try_lock(pair_id=pair_id, annotator=annotator, study=study, seed=membership.seed, now=now, selection=mode)
            if assignment is not None:
                assignment.progress = progress
                return assignment
    pick = {"study": study, "annotator": annotator, "seed": membership.seed, "draw": draw, "special_first": special_first, "has_special": has_special}
    # A short list first; under contention every one of them may be taken, then look further.
    pair = _pick(now=now, limit=8, **pick)
    if pair is None:
        # Nothing with room: locks past their time hold slots until released here.
        _expired_release(study=study, now=now)
        pair = _pick(now=now, limit=200, **pick)
    if pair is None:
        return None
    assignment = _take(pair=pair, annotator=annotator, study=study, seed=membership.seed, now=now, selection=ChosenBy.GOLD if pair.kind in SPECIAL_KINDS else ChosenBy.RANDOM)
    assignment.progress = progress
    return assignment


def _pick_query(has_special: bool, special_first: bool, limit: int, skip_locked: bool, *, study_id, annotator_id, multiplier, offset, start):
    """The queryset `_pick` runs; its SQL is compiled once per variant (see PICK)."""
    # Anti-joins probed per candidate through the (annotator, pair) unique indexes, not lists of
    # the annotator's whole history: the branches stop after a few rows, so the cost stays flat
    # as the history grows (bench/history.py).
    own = Assignment.objects.filter(annotator_id=annotator_id, pair_id=OuterRef("pk")).exclude(state=Assignment.State.EXPIRED)
    # The same two clips under the same condition judged anywhere (either order, any study).
    judged_content = Judgment.objects.filter(annotator_id=annotator_id, pair__condition_id=OuterRef("condition_id"), pair__clip_key=OuterRef("clip_key"))
    room = Q(n_judgments__lt=F("overlap") - F("n_live"))
    base = Pair.objects.filter(room, study_id=study_id).exclude(Exists(own)).exclude(Exists(judged_content))
    position = Mod(F("order_key") * Value(multiplier, output_field=BigIntegerField()) + Value(offset, output_field=BigIntegerField()), Value(ORDER_PRIME, output_field=BigIntegerField()))
    pools = [Q(kind__in=SPECIAL_KINDS), ~Q(kind__in=SPECIAL_KINDS)] if has_special else [Q()]
    started = Q(n_judgments__gt=0) | Q(n_live__gt=0)
    branches = []
    for pool in pools:
        partial = base.filter(pool, started, overlap__gt=1).annotate(position=position).order_by("position").values("id")[:limit]
        fresh = base.filter(pool, n_judgments=0, n_live=0)
        after = fresh.filter(order_key__gte=start).order_by("order_key").values("id")[:limit]
        before = fresh.filter(order_key__lt=start).order_by("order_key").values("id")[:limit]
        branches += [branch.query.sql_with_params() for branch in (partial, after, before)]
    # One list of at most a few dozen ids (UNION ALL of the branches, each wrapped so SQLite
    # accepts its LIMIT): the planner joins it by primary key instead of scanning every open pair.
    candidates = RawSQL(
        " UNION ALL ".join(f"SELECT * FROM ({sql}) AS branch_{n}" for n, (sql, _) in enumerate(branches)),
        [param for _, params in branches for param in params],
    )
    big = Value(ORDER_PRIME, output_field=BigIntegerField())
    is_special = Q(kind__in=SPECIAL_KINDS)
    query = (
        Pair.objects.filter(id__in=candidates)
        # Repeated outside the branches: PostgreSQL re-checks these on the row version it locks.
        .filter(room)
        .select_related(*CONTENT)
        .annotate(
            pool_rank=Case(When(is_special, then=Value(0 if special_first else 1)), default=Value(1 if special_first else 0)),
            fresh_rank=Case(When(started & Q(overlap__gt=1), then=Value(0)), default=Value(1)),
            distance=Case(
                When(started & Q(overlap__gt=1), then=position),
                When(order_key__gte=start, then=F("order_key") - Value(start, output_field=BigIntegerField())),
                default=F("order_key") - Value(start, output_field=BigIntegerField()) + big,
                output_field=BigIntegerField(),
            ),
            mine=Subquery(Assignment.objects.filter(annotator_id=annotator_id, pair=OuterRef("pk")).values("id")[:1]),
        )
        .order_by("pool_rank", "fresh_rank", "distance", "id")
    )
    if skip_locked:
        query = query.select_for_update(skip_locked=True, of=("self",))
    return query[:1]


PICK = Precompiled(
    _pick_query,
    {"study_id": 7_300_000_011, "annotator_id": 7_300_000_013, "multiplier": 7_300_000_017, "offset": 7_300_000_019, "start": 7_300_000_021},
)


def _pick(*, study: Study, annotator, seed: int, draw: int, now, special_first: bool, has_special: bool, limit: int) -> Pair | None:
    """Lock and return the best pair with room that this annotator may get, with its content; one query.

    Order: the draw's pool first (gold/catch or regular); within a pool, pairs that already
    hold votes first (breadth-first fills overlap pairs so agreement data arrives early), in
    the annotator's own permutation; then untouched pairs from a point on the order_key
    circle drawn from the annotator's seed and draw number, so concurrent annotators start
    far apart. Each branch is a short index range over the pairs with room (pair_open_order);
    the outer query orders their union and takes the first row nobody else holds
    (SKIP LOCKED on PostgreSQL; SQLite's writers already take turns).
    """
    variant = (bool(has_special), bool(special_first), limit, connection.features.has_select_for_update_skip_locked)
    pair = PICK.first(
        variant,
        study_id=study.pk,
        annotator_id=annotator.pk,
        multiplier=1 + seed % (ORDER_PRIME - 1),
        offset=(seed >> 31) % ORDER_PRIME,
        start=random.Random(f"{seed}:start:{draw}").randrange(ORDER_PRIME),
    )
    if pair is not None and pair.n_judgments + pair.n_live >= pair.overlap:
        return None  # filled while this request looked (the locked row is the latest version)
    return pair


ASSIGNMENT_INSERT = PrecompiledInsert(Assignment)


def _take(*, pair: Pair, annotator, study: Study, seed: int, now, selection: str) -> Assignment:
    """The annotator's lock on `pair` (already row-locked and checked for room); the counters follow by trigger."""
    side = random.Random(f"{seed}:side:{pair.pk}").random() < 0.5
    a_clip_id = pair.clip_a_id if side else pair.clip_b_id
    expires = now + timedelta(seconds=study.lock_ttl_seconds)
    fields = {"state": Assignment.State.ACTIVE, "served_at": now, "lock_expires_at": expires, "a_clip_id": a_clip_id, "skip_reason": "", "selection": selection}
    if getattr(pair, "mine", None) is not None:
        # Their own lock on it lapsed earlier; the same row serves again.
        assignment = Assignment.objects.get(pk=pair.mine)
        for name, value in fields.items():
            setattr(assignment, name, value)
        assignment.save(update_fields=["state", "served_at", "lock_expires_at", "a_clip", "skip_reason", "selection"])
    else:
        assignment = ASSIGNMENT_INSERT.create(annotator=annotator, pair=pair, **fields)
    assignment.pair = pair
    return assignment


def _expired_release(*, study: Study, now) -> int:
    """Mark the study's locks past their time expired, which frees their slots (the triggers count them out)."""
    return Assignment.objects.filter(pair__study=study, state=Assignment.State.ACTIVE, lock_expires_at__lte=now).update(state=Assignment.State.EXPIRED)


def _try_lock(*, pair_id: int, annotator, study: Study, seed: int, now, selection: str = ChosenBy.RANDOM) -> Assignment | None:
    """Lock one ranked candidate if it still has room and is not the annotator's already."""
    query = Pair.objects.filter(id=pair_id).select_related(*CONTENT).annotate(
        mine=Subquery(Assignment.objects.filter(annotator=annotator, pair=OuterRef("pk")).values("id")[:1]),
        mine_state=Subquery(Assignment.objects.filter(annotator=annotator, pair=OuterRef("pk")).values("state")[:1]),
    )
    if connection.features.has_select_for_update_skip_locked:
        query = query.select_for_update(skip_locked=True, of=("self",))
    pair = query.first()
    if pair is None or pair.n_judgments + pair.n_live >= pair.overlap:
        return None
    if pair.mine is not None and pair.mine_state != Assignment.State.EXPIRED:
        return None
    return _take(pair=pair, annotator=annotator, study=study, seed=seed, now=now, selection=selection)


@transaction.atomic
def assignment_skip(*, assignment: Assignment, annotator, reason: str) -> Assignment:
    reason = (reason or "").strip()
    if assignment.annotator_id != annotator.pk:
        raise ServiceError("This task is not yours.", code="not_yours", status=404)
    if not reason:
        raise ServiceError("Say why you skip this pair (for example: audio does not play, offensive content).", code="reason_required")
    if len(reason) > 1000:
        raise ServiceError("Keep the skip reason under 1000 characters.", code="too_long")
    locked = Assignment.objects.select_for_update().get(pk=assignment.pk)
    if locked.state == Assignment.State.SUBMITTED:
        raise ServiceError("This pair was already judged; it cannot be skipped.", code="already_submitted", status=409)
    locked.state, locked.skip_reason = Assignment.State.SKIPPED, reason
    locked.save(update_fields=["state", "skip_reason"])
    return locked

