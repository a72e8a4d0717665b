"""Active selection's two database halves: priorities written in, candidates read out.

Whatever ranks pairs (the scoring app) calls `pair_priorities_replace`; the assignment engine
asks `active_candidates` for the open pairs in that ranking. Neither side imports the other.
"""

from __future__ import annotations

from django.db import transaction
from django.db.models import CharField, Exists, F, OuterRef, Subquery, Value
from django.db.models.functions import Cast, Concat

from common.errors import ServiceError

from ..active import ACTIVE_MODES
from ..models import Assignment, Judgment, Pair, PairPriority, Study


@transaction.atomic
def pair_priorities_replace(*, study: Study, mode: str, values: dict[int, float], source: str = "") -> int:
    """Set the study's priorities for `mode` to exactly `values` (pair id -> priority, higher first). Returns rows written."""
    if mode not in ACTIVE_MODES:
        raise ServiceError(f"Unknown selection mode {mode!r}; use one of {', '.join(ACTIVE_MODES)}.", code="bad_selection")
    known = set(Pair.objects.filter(study=study, pk__in=list(values)).values_list("pk", flat=True))
    stray = sorted(set(values) - known)
    if stray:
        raise ServiceError(f"Pair(s) {', '.join(map(str, stray[:10]))} are not in study {study.name}; nothing was changed.", code="unknown_pairs")
    PairPriority.objects.filter(pair__study=study, mode=mode).delete()
    rows = [PairPriority(pair_id=pid, mode=mode, value=float(value), source=source[:200]) for pid, value in values.items()]
    PairPriority.objects.bulk_create(rows, batch_size=1000)
    return len(rows)


def active_candidates(*, study: Study, annotator, mode: str, now, limit: int = 8) -> list[int]:
    """Regular pairs with room that this annotator may get, highest priority first.

    The same exclusions as the random order (own assignments, content already judged anywhere);
    the lock itself re-checks room under the pair's row lock, so this order cannot over-assign.
    """
    own = Assignment.objects.filter(annotator=annotator, pair__study=study).exclude(state=Assignment.State.EXPIRED).values("pair_id")
    content_key = Concat(Cast("condition_id", CharField()), Value("/"), "clip_key", output_field=CharField())
    judged_content = (
        Judgment.objects.filter(annotator=annotator)
        .annotate(content=Concat(Cast("pair__condition_id", CharField()), Value("/"), "pair__clip_key", output_field=CharField()))
        .values("content")
    )
    ranked = PairPriority.objects.filter(pair=OuterRef("pk"), mode=mode)
    query = (
        Pair.objects.filter(study=study, kind=Pair.Kind.REGULAR)
        .filter(Exists(ranked))
        .exclude(id__in=own)
        .annotate(content=content_key)
        .exclude(content__in=judged_content)
        # Room from the pair's counters (kept by triggers); the lock re-checks them on the locked row.
        .filter(n_judgments__lt=F("overlap") - F("n_live"))
        .annotate(priority=Subquery(ranked.values("value")[:1]))
        .order_by(F("priority").desc(), "order_key", "id")
    )
    return list(query.values_list("id", flat=True)[:limit])
