"""The boards' history: a snapshot of every board at the end of each month (and on demand), and each system's rating over time.

A monthly snapshot holds the boards fitted on the votes cast before the month's end (UTC), with the live
board's options as they are when it is taken; taking it again replaces it (so a changed setting can be
applied to the past). The payload is the live board's (plain and style-controlled boards, categories,
screen) without the noisy board. `board_snapshots_fill` takes every month missing up to the last one
that has ended: the Celery task arena.tasks.board_snapshots_monthly_task runs it (give it a beat
schedule, e.g. daily), and `manage.py arena_snapshot` runs it or takes one month or one now. The
rating-over-time view reads them (selectors.rating_history).
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from datetime import timezone as dt_timezone

from django.db import transaction
from django.utils import timezone

from common.errors import ServiceError

from .models import BoardSnapshot, Vote
from .services import leaderboard_payload

MONTH = re.compile(r"(\d{4})-(0[1-9]|1[0-2])")


def month_bounds(month: str) -> tuple[datetime, datetime]:
    """[start, end) of a month written YYYY-MM, in UTC; a clear error for anything else."""
    match = MONTH.fullmatch(month or "")
    if not match:
        raise ServiceError(f"{month!r} is not a month: write it YYYY-MM, e.g. 2026-03.", code="bad_month")
    year, number = int(match[1]), int(match[2])
    start = datetime(year, number, 1, tzinfo=dt_timezone.utc)
    end = datetime(year + (number == 12), number % 12 + 1, 1, tzinfo=dt_timezone.utc)
    return start, end


def month_of(moment: datetime) -> str:
    return moment.astimezone(dt_timezone.utc).strftime("%Y-%m")


def months_between(first: str, last: str) -> list[str]:
    out, current = [], first
    while current <= last:
        out.append(current)
        current = month_of(month_bounds(current)[1])
    return out


@transaction.atomic
def board_snapshot_take(*, month: str | None = None, now=None) -> BoardSnapshot:
    """Snapshot every board: at the end of `month` (YYYY-MM; replacing that month's snapshot), or now when None."""
    now = now or timezone.now()
    if month is None:
        payload, votes = leaderboard_payload(until=now)
        payload["computed_at"] = now.isoformat()
        return BoardSnapshot.objects.create(kind=BoardSnapshot.Kind.ON_DEMAND, cutoff=now, votes=votes, payload=payload)
    _, end = month_bounds(month)
    if end > now:
        raise ServiceError(f"{month} has not ended yet; take a snapshot now instead (no month).", code="month_not_over")
    payload, votes = leaderboard_payload(until=end)
    payload["computed_at"] = now.isoformat()
    snapshot, _ = BoardSnapshot.objects.update_or_create(
        kind=BoardSnapshot.Kind.MONTHLY, period=month, defaults={"cutoff": end, "votes": votes, "payload": payload}
    )
    return snapshot


def board_snapshots_fill(*, now=None) -> list[str]:
    """Take every monthly snapshot missing, from the first vote's month to the last month that has ended; the months taken."""
    now = now or timezone.now()
    first = Vote.objects.order_by("created_at").values_list("created_at", flat=True).first()
    if first is None:
        return []
    last = month_of(month_bounds(month_of(now))[0] - timedelta(seconds=1))
    have = set(BoardSnapshot.objects.filter(kind=BoardSnapshot.Kind.MONTHLY).values_list("period", flat=True))
    taken = []
    for month in months_between(month_of(first), last):
        if month not in have:
            board_snapshot_take(month=month, now=now)
            taken.append(month)
    return taken
