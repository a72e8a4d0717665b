"""Listening evidence: what the server itself saw of someone listening to two clips.

Annotation (one judgment per pair) and the arena (one vote per battle) both accept an
answer only when this record covers their minimum per clip. The record has two parts,
both written by the server and neither trusted from the page:

- **events**: play / pause / seek / switch / tick / ended, posted by the page while it
  plays and stamped with the server's clock on arrival. Each carries a sequence number
  that must grow per assignment or battle; an event whose number was already received
  is ignored, so a replayed batch adds nothing.
- **fetches**: the byte ranges of each clip the audio endpoint sent to this listener, noted at the
  end of each response with the bytes the server took while the client was connected
  (common/ranged.py).

Heard time is counted by one transport playing one clip at a time, between server
stamps (`evidence`): a `play` or `switch` ends the other clip's interval, so sending
`play` for both clips at once never counts double; a gap longer than
MAX_EVENT_GAP_SECONDS between two events counts only up to that limit; nothing counts
before the clip's first byte was sent; and a clip counts at most the seconds of audio
that were sent of it (bytes sent / file size x duration), unless the whole file was
sent (then replays and loops count).

This module holds the pure rules; each app stores its own rows and calls them. The rating page and
the arena append a batch to their rows the same way (`events_append`); the pairwise page writes
its own rows with prepared statements (annotation/services/listening.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.utils import timezone

from .errors import ServiceError

KINDS = ("play", "pause", "seek", "switch", "tick", "ended")
# Pages post at least every 2 s while a clip plays; a longer silence is not all listening.
MAX_EVENT_GAP_SECONDS = 5.0
# A `play` arrives one request after the press: starting from a pause, the interval may
# begin up to this long before its arrival (never before the previous event arrived).
START_ALLOWANCE_SECONDS = 0.5
MAX_EVENTS_PER_POST = 50
# Events that ride with a judgment (or a page's last post before it goes away) are the whole of a pair's
# listening, not two seconds of it: a tick a second for both clips for several minutes.
MAX_EVENTS_PER_BATCH = 1000
MAX_BATCH_AGE_MS = 86_400_000
MAX_SEQ = 2**53  # what a page's JavaScript number counts exactly


@dataclass(frozen=True)
class Event:
    seq: int
    side: str
    kind: str
    at: datetime


@dataclass(frozen=True)
class Fetch:
    side: str
    first_byte: int
    last_byte: int
    total_bytes: int
    at: datetime
    # Whether the listener answered this response's Audio-Proof (common/audio_proof.py): only proven fetches count.
    proven: bool = True


def _number(value, *, name: str, index: int, minimum: float | None = None) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or (minimum is not None and value < minimum):
        bound = "" if minimum is None else f" >= {minimum:g}"
        raise ServiceError(f"Event {index}: {name} must be a finite number{bound}.", code="bad_events")
    return float(value)


def events_clean(raw, *, sides: tuple[str, ...], last_seq: int, limit: int = MAX_EVENTS_PER_POST) -> tuple[list[dict], int]:
    """A posted batch, checked: (the events not received before, in order; how many were already received).

    Every event needs `seq` (an integer that grows within the batch and across batches),
    `side` (one of `sides`) and `kind` (one of KINDS); `position` (media seconds) and
    `client_time` (the page's clock) are kept for the record only.
    """
    if not isinstance(raw, list) or not 1 <= len(raw) <= limit:
        raise ServiceError(f"Send between 1 and {limit} events at a time.", code="bad_events")
    fresh, ignored, previous = [], 0, None
    for index, item in enumerate(raw):
        if not isinstance(item, dict):
            raise ServiceError(f"Event {index}: each event must be an object.", code="bad_events")
        seq, side, kind = item.get("seq"), item.get("side"), item.get("kind")
        if isinstance(seq, bool) or not isinstance(seq, int) or not 1 <= seq <= MAX_SEQ:
            raise ServiceError(f"Event {index}: seq must be a whole number from 1 to {MAX_SEQ}, one higher for every event sent.", code="bad_events")
        if side not in sides or kind not in KINDS:
            raise ServiceError(f"Event {index}: side must be {' or '.join(sides)} and kind one of {', '.join(KINDS)}.", code="bad_events")
        if previous is not None and seq <= previous:
            raise ServiceError(f"Event {index}: seq {seq} does not follow {previous}; numbers must grow within a batch.", code="bad_events")
        previous = seq
        position = _number(item.get("position"), name="position", index=index, minimum=0)
        client_time = _number(item.get("client_time"), name="client_time", index=index)
        if seq <= last_seq:
            ignored += 1  # already received (a retried or replayed batch): adds nothing
            continue
        fresh.append({"seq": seq, "side": side, "kind": kind, "position": position, "client_time": client_time})
    return fresh, ignored


def events_anchored(fresh: list[dict], *, client_now, arrival: datetime) -> list[datetime]:
    """Server times for a batch the page kept and sent late, from its own clock: `arrival` minus how long before
    `client_now` (the page's clock as it sent the batch) each event's `client_time` was, both in milliseconds.

    The page's clock says only how the events were spaced; where they lie comes from the server's clock, and no
    event can lie after the batch arrived. So whatever a client writes, what it claims to have heard fits between
    the first byte the server sent it and the moment the batch arrived, as with events stamped one post at a time.
    Refused unless every event has a `client_time` no later than `client_now` and the times never go back.
    """
    if isinstance(client_now, bool) or not isinstance(client_now, (int, float)) or not math.isfinite(client_now):
        raise ServiceError("client_now is required with a batch of events: the page's clock (ms) as it sends them.", code="bad_events")
    now = float(client_now)
    times, previous = [], None
    for index, event in enumerate(fresh):
        at = event.get("client_time")
        if at is None:
            raise ServiceError(f"Event {index}: client_time is required when events ride in a batch (the page's clock, ms).", code="bad_events")
        if at > now:
            raise ServiceError(f"Event {index}: client_time {at:g} is after client_now {now:g}; both come from one clock.", code="bad_events")
        if now - at > MAX_BATCH_AGE_MS:
            raise ServiceError(f"Event {index}: client_time is more than a day before client_now; send events the day they happen.", code="bad_events")
        if previous is not None and at < previous:
            raise ServiceError(f"Event {index}: client_time {at:g} goes back from {previous:g}; events are sent in the order they happened.", code="bad_events")
        previous = at
        times.append(arrival - timedelta(milliseconds=now - at))
    return times


def events_append(holder, fresh: list[dict], *, event_model, owner_field: str, seq_field: str, record: Callable, limit: int, full: Callable[[], ServiceError], now: datetime | None = None) -> None:
    """Append the fresh events of a batch to the holder's rows (an assignment or a battle, locked by the caller), stamped `now`.

    The holder's `listening` record is computed again from every stored row and its last received number
    (`seq_field`) moves to the batch's last. Refused with `full()` when the holder would pass `limit` events.
    """
    if not fresh:
        return
    if holder.listening.get("events", 0) + len(fresh) > limit:
        raise full()
    now = now or timezone.now()
    event_model.objects.bulk_create([event_model(**{owner_field: holder}, server_time=now, **event) for event in fresh])
    holder.listening = record(holder)
    setattr(holder, seq_field, fresh[-1]["seq"])
    holder.save(update_fields=["listening", seq_field])


def coverage(ranges: list[tuple[int, int]], total: int) -> float:
    """Share of a file's bytes covered by these inclusive byte ranges (overlaps counted once)."""
    if total <= 0:
        return 0.0
    covered, reach = 0, -1
    for first, last in sorted(ranges):
        first, last = max(first, reach + 1, 0), min(last, total - 1)
        if last >= first:
            covered += last - first + 1
            reach = last
    return covered / total


def evidence(
    *,
    events: list[Event],
    fetches: list[Fetch],
    durations: dict[str, float],
    max_gap: float = MAX_EVENT_GAP_SECONDS,
    allowance: float = START_ALLOWANCE_SECONDS,
) -> dict:
    """Seconds heard per clip from the server's record; see the module docstring for the rules.

    Returns {"source": "server", side: {"seconds", "played_seconds", "served_seconds",
    "plays", "seeks"}, ..., "switches", "events"}; "seconds" is what counts.
    """
    sides = tuple(durations)
    first_fetch: dict[str, datetime] = {}
    ranges: dict[str, list[tuple[int, int]]] = {side: [] for side in sides}
    totals: dict[str, int] = {}
    sent = {fetch.side for fetch in fetches}
    for fetch in fetches:
        if fetch.side not in ranges or not fetch.proven:
            continue
        first_fetch[fetch.side] = min(first_fetch.get(fetch.side, fetch.at), fetch.at)
        ranges[fetch.side].append((fetch.first_byte, fetch.last_byte))
        totals[fetch.side] = max(totals.get(fetch.side, 0), fetch.total_bytes)

    played = dict.fromkeys(sides, 0.0)
    plays = dict.fromkeys(sides, 0)
    seeks = dict.fromkeys(sides, 0)
    switches = 0
    playing: str | None = None
    since: datetime | None = None
    previous: datetime | None = None
    selected = sides[0] if sides else None
    cap = timedelta(seconds=max_gap)

    def credit(side: str, start: datetime, end: datetime) -> None:
        fetched = first_fetch.get(side)
        if fetched is None:
            return  # never sent a byte of it: nothing of it can have been heard
        end = min(end, start + cap)
        start = max(start, fetched)
        if end > start:
            played[side] += (end - start).total_seconds()

    for event in sorted(events, key=lambda e: (e.at, e.seq)):
        at, side, kind = event.at, event.side, event.kind
        if side not in played:
            continue
        if playing is not None:
            credit(playing, since, at)
            since = at
        if kind == "play":
            if playing is None:
                start = at - timedelta(seconds=allowance)
                since = max(start, previous) if previous is not None else start
                plays[side] += 1
            elif playing != side:
                plays[side] += 1
                since = at
            playing = side
            if side != selected:
                switches += 1
            selected = side
        elif kind == "switch":
            if side != selected:
                switches += 1
                if playing is not None:
                    plays[side] += 1
                    playing = side
            selected = side
        elif kind in ("pause", "ended"):
            if playing == side:
                playing = None
        elif kind == "seek":
            seeks[side] += 1
        previous = at

    record: dict = {"source": "server"}
    for side in sides:
        fraction = coverage(ranges[side], totals.get(side, 0))
        served = fraction * float(durations[side])
        heard = played[side] if fraction >= 1.0 else min(played[side], served)
        record[side] = {
            "seconds": round(heard, 3),
            "played_seconds": round(played[side], 3),
            "served_seconds": round(served, 3),
            "plays": plays[side],
            "seeks": seeks[side],
        }
    record["switches"] = switches
    record["events"] = len(events)
    # Sides sent but never shown received: the refusal says so, rather than only "heard 0 s".
    unproven = sorted((sent & set(sides)) - set(first_fetch))
    if unproven:
        record["unproven"] = unproven
    return record


def heard(record: dict, sides: tuple[str, ...]) -> dict[str, float]:
    """Seconds that count per side; 0 for a side the record does not have."""
    return {side: float((record.get(side) or {}).get("seconds", 0.0)) for side in sides}


def shortfalls(record: dict, *, sides: tuple[str, ...], minimum: float) -> list[tuple[str, float, bool]]:
    """Sides heard less than the minimum: (side, seconds heard, whether any of its audio was sent)."""
    short = []
    for side in sides:
        entry = record.get(side) or {}
        seconds = float(entry.get("seconds", 0.0))
        if minimum > 0 and seconds + 1e-6 < minimum:
            short.append((side, seconds, float(entry.get("served_seconds", 0.0)) > 0))
    return short


def shortfall_message(short: list[tuple[str, float, bool]], *, minimum: float, label: str, action: str) -> str:
    """'Listen to clip B for at least 10 s before answering: the server counted 4.2 s.' (with the reason when no audio was sent)."""
    parts = []
    for side, seconds, fetched in short:
        reason = "" if fetched else "; its audio was never fetched from the server"
        parts.append(f"{label} {side} ({seconds:.1f} s of {minimum:g} s{reason})")
    names = " and ".join(f"{label} {side}" for side, _, _ in short)
    return f"Listen to {names} for at least {minimum:g} s each before {action}. The server counted: {', '.join(parts)}."
