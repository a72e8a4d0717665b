"""The assignment engine: which pair an annotator gets next, locks on pairs, skips.

The engine's invariant, for every pair:

    judgments + live locks of annotators without a judgment  <=  pair.overlap

holds because every write that can change either side locks the pair row
first (SELECT ... FOR UPDATE on PostgreSQL; SQLite serialises writers through
its IMMEDIATE transactions, see settings). Judgment submission (judgments.py)
takes the same lock.
"""

from __future__ import annotations

import random
from datetime import timedelta

from django.db import connection, transaction
from django.db.models import BigIntegerField, CharField, Count, Exists, ExpressionWrapper, F, OuterRef, Q, Value
from django.db.models.functions import Cast, Concat, Mod
from django.utils import timezone

from auditorium.errors import ServiceError

from ..active import draw_mode
from ..models import ORDER_PRIME, AnnotatorProfile, Assignment, ChosenBy, Judgment, Pair, Study, StudyAnnotator
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


def live_load(pair_ids, now) -> dict[int, int]:
    """Judgments + live locks without a judgment, per pair."""
    judged = dict(Judgment.objects.filter(pair_id__in=pair_ids).values_list("pair_id").annotate(n=Count("id")))
    locked = dict(
        Assignment.objects.filter(pair_id__in=pair_ids, state=Assignment.State.ACTIVE, lock_expires_at__gt=now)
        .values_list("pair_id")
        .annotate(n=Count("id"))
    )
    return {pid: judged.get(pid, 0) + locked.get(pid, 0) for pid in pair_ids}


@transaction.atomic
def assignment_next(*, study: Study, annotator, now=None) -> Assignment | None:
    """The annotator's next pair: their live lock if any, else a fresh lock on a pair with room, else None.

    At most one live lock per annotator and study, however many requests arrive at once:
    the membership row is locked first, so one annotator's requests take turns and each
    later one finds the lock the first one took.
    """
    now = now or timezone.now()
    membership = StudyAnnotator.objects.select_for_update().filter(study=study, annotator=annotator, is_active=True).first()
    if membership is None:
        raise ServiceError("You are not an annotator of this study.", code="not_member", status=403)
    profile = AnnotatorProfile.objects.filter(user=annotator).first()
    if profile is None or not profile.has_consented:
        raise ServiceError("Consent is needed before the first task.", code="consent_required", status=403)
    if not study.is_active:
        return None

    current = (
        Assignment.objects.select_related("pair")
        .filter(annotator=annotator, pair__study=study, state=Assignment.State.ACTIVE, lock_expires_at__gt=now)
        .order_by("served_at")
        .first()
    )
    if current is not None:
        return current
    if study.annotator_target and Judgment.objects.filter(pair__study=study, annotator=annotator).count() >= study.annotator_target:
        return None

    special_kinds = [Pair.Kind.GOLD, Pair.Kind.CATCH]
    draw = Assignment.objects.filter(annotator=annotator, pair__study=study).count()
    rng = random.Random(f"{membership.seed}:{draw}")
    # Gold and catch pairs come at the study's rate; either pool stands in when the other is empty.
    special, regular = Q(kind__in=special_kinds), ~Q(kind__in=special_kinds)
    pools = [special, regular]
    if not rng.random() < study.gold_rate:
        pools.reverse()
    mode = draw_mode(selection=study.selection, seed=membership.seed, draw=draw, share=study.active_share)
    for pool in pools:
        if pool is regular and mode != ChosenBy.RANDOM:
            # An active draw: the study's ranking first; with nothing ranked left, the random order below.
            for pair_id in active_candidates(study=study, annotator=annotator, mode=mode, now=now):
                assignment = _try_lock(pair_id=pair_id, annotator=annotator, study=study, seed=membership.seed, now=now, selection=mode)
                if assignment is not None:
                    return assignment
        chosen_by = ChosenBy.GOLD if pool is special else ChosenBy.RANDOM
        tried: set[int] = set()
        # A short list first; under contention every one of them may be taken, then look further.
        for limit in (8, 200):
            for pair_id in _candidates(study=study, annotator=annotator, seed=membership.seed, draw=draw, now=now, pool=pool, limit=limit):
                if pair_id in tried:
                    continue
                tried.add(pair_id)
                assignment = _try_lock(pair_id=pair_id, annotator=annotator, study=study, seed=membership.seed, now=now, selection=chosen_by)
                if assignment is not None:
                    return assignment
            if len(tried) < limit:
                break
    return None


def _candidates(*, study: Study, annotator, seed: int, draw: int, now, pool: Q, limit: int = 8) -> list[int]:
    """Pairs with room left that this annotator may get, best first.

    Order: pairs that already hold votes first (breadth-first fills overlap pairs
    so agreement data arrives early), in the annotator's own permutation; then
    untouched pairs from a point on the order_key circle drawn from the
    annotator's seed and draw number, so concurrent annotators start far apart
    and the lookup is an index range scan, not a pass over the whole study.
    """
    own = Assignment.objects.filter(annotator=annotator, pair__study=study).exclude(state=Assignment.State.EXPIRED).values("pair_id")
    # The same two clips under the same condition judged anywhere (either order, any study).
    # One combined key lets the database hash the annotator's judged set once
    # instead of joining it against every candidate pair.
    content_key = Concat(Cast("condition_id", CharField()), Value("/"), "clip_key", output_field=CharField())
    judged_content = (
        Judgment.objects.filter(annotator=annotator)
        .annotate(content=Concat(Cast("pair__condition_id", CharField()), Value("/"), "pair__clip_key", output_field=CharField()))
        .values("content")
    )
    base = Pair.objects.filter(pool, study=study).exclude(id__in=own).annotate(content=content_key).exclude(content__in=judged_content)
    live = Q(state=Assignment.State.ACTIVE, lock_expires_at__gt=now)

    judged_here = Judgment.objects.filter(pair__study=study).values("pair_id")
    locked_here = Assignment.objects.filter(live, pair__study=study).values("pair_id")
    multiplier = 1 + seed % (ORDER_PRIME - 1)
    offset = (seed >> 31) % ORDER_PRIME
    partial = list(
        base.filter(overlap__gt=1)
        .filter(Q(id__in=judged_here) | Q(id__in=locked_here))
        .annotate(
            load=Count("judgments", distinct=True)
            + Count("assignments", filter=Q(assignments__state=Assignment.State.ACTIVE, assignments__lock_expires_at__gt=now), distinct=True),
            position=ExpressionWrapper(
                Mod(F("order_key") * Value(multiplier, output_field=BigIntegerField()) + Value(offset, output_field=BigIntegerField()), Value(ORDER_PRIME, output_field=BigIntegerField())),
                output_field=BigIntegerField(),
            ),
        )
        .filter(load__lt=F("overlap"))
        .order_by("position")
        .values_list("id", flat=True)[:limit]
    )
    need = limit - len(partial)
    if need <= 0:
        return partial
    fresh = base.exclude(Exists(Judgment.objects.filter(pair=OuterRef("pk")))).exclude(Exists(Assignment.objects.filter(live, pair=OuterRef("pk"))))
    start = random.Random(f"{seed}:start:{draw}").randrange(ORDER_PRIME)
    ids = list(fresh.filter(order_key__gte=start).order_by("order_key", "id").values_list("id", flat=True)[:need])
    if len(ids) < need:
        ids += fresh.filter(order_key__lt=start).order_by("order_key", "id").values_list("id", flat=True)[: need - len(ids)]
    return partial + ids


def _lock_pair(pair_id: int) -> Pair | None:
    """Row-lock the pair; on PostgreSQL skip it if another annotator's request holds it."""
    query = Pair.objects.filter(id=pair_id)
    if connection.features.has_select_for_update_skip_locked:
        query = query.select_for_update(skip_locked=True)
    return query.first()


def _try_lock(*, pair_id: int, annotator, study: Study, seed: int, now, selection: str = ChosenBy.RANDOM) -> Assignment | None:
    with transaction.atomic():
        pair = _lock_pair(pair_id)
        if pair is None:
            return None
        if live_load([pair_id], now)[pair_id] >= pair.overlap:
            return None
        existing = Assignment.objects.filter(annotator=annotator, pair=pair).first()
        if existing is not None and existing.state != Assignment.State.EXPIRED:
            return None
        side = random.Random(f"{seed}:side:{pair_id}").random() < 0.5
        a_clip_id = pair.clip_a_id if side else pair.clip_b_id
        expires = now + timedelta(seconds=study.lock_ttl_seconds)
        if existing is not None:
            existing.state, existing.served_at, existing.lock_expires_at, existing.a_clip_id = Assignment.State.ACTIVE, now, expires, a_clip_id
            existing.skip_reason, existing.selection = "", selection
            existing.save(update_fields=["state", "served_at", "lock_expires_at", "a_clip", "skip_reason", "selection"])
            return existing
        return Assignment.objects.create(
            annotator=annotator, pair=pair, a_clip_id=a_clip_id, state=Assignment.State.ACTIVE, served_at=now, lock_expires_at=expires, selection=selection
        )


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

