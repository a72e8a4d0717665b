"""The server's own record of an annotator's listening: audio bytes sent, events received.

The rules are the shared ones in `common.listening`; this module stores the rows
(AudioFetch per user and clip, ListeningEvent per assignment) and keeps each assignment's
running record, which the judgment submit checks without reading the events again.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from auditorium.deferred import deferred_rows
from common import listening
from common.errors import ServiceError

from ..models import AnnotatorProfile, Assignment, AudioFetch, Clip, ListeningEvent

SIDES = ("A", "B")
MAX_EVENTS_PER_ASSIGNMENT = 5000


def audio_fetch_record(*, user, clip: Clip, served: tuple[int, int, int] | None, now=None) -> None:
    """Note the bytes of `clip` the audio endpoint is sending to `user` (nothing for a 304 or HEAD)."""
    if served is None or not getattr(user, "is_authenticated", False):
        return
    first, last, total = served
    # Queued under the ASGI server and written in batches; readers flush first (auditorium/deferred.py).
    deferred_rows.add(AudioFetch(user=user, clip=clip, first_byte=first, last_byte=last, total_bytes=total, served_at=now or timezone.now()))


def _record_for(assignment: Assignment) -> dict:
    """The listening record from the stored rows (one query for events, one for fetches)."""
    deferred_rows.flush()
    pair = assignment.pair
    b_clip_id = pair.other_clip_id(assignment.a_clip_id)
    side_of = {assignment.a_clip_id: "A", b_clip_id: "B"}
    clips = {pair.clip_a_id: pair.clip_a, pair.clip_b_id: pair.clip_b}
    durations = {"A": clips[assignment.a_clip_id].duration, "B": clips[b_clip_id].duration}
    events = [
        listening.Event(seq=seq, side=side, kind=kind, at=at)
        for seq, side, kind, at in ListeningEvent.objects.filter(assignment=assignment).values_list("seq", "side", "kind", "server_time")
    ]
    fetches = [
        listening.Fetch(side=side_of[clip_id], first_byte=first, last_byte=last, total_bytes=total, at=at)
        for clip_id, first, last, total, at in AudioFetch.objects.filter(user_id=assignment.annotator_id, clip_id__in=side_of).values_list(
            "clip_id", "first_byte", "last_byte", "total_bytes", "served_at"
        )
    ]
    return listening.evidence(events=events, fetches=fetches, durations=durations)


def listening_events_record(*, assignment_id: int, annotator, events, now=None) -> dict:
    """Store a batch of the page's listening events, stamped now; return the updated record.

    Events numbered at or below the highest number already received are ignored, so a
    retried or replayed batch changes nothing.
    """
    with transaction.atomic():
        # The row lock orders concurrent posts for one assignment: numbers and times then grow together.
        assignment = (
            Assignment.objects.select_for_update(of=("self",))
            .select_related("pair__study", "pair__clip_a", "pair__clip_b")
            .filter(pk=assignment_id, annotator=annotator)
            .first()
        )
        if assignment is None:
            raise ServiceError("No such task for you.", code="not_found", status=404)
        if assignment.state in (Assignment.State.SUBMITTED, Assignment.State.SKIPPED):
            raise ServiceError(f"This pair is already {assignment.state}; listening to it is no longer recorded.", code="not_listening", status=409)
        profile = AnnotatorProfile.objects.filter(user=annotator).only("consented_at", "withdrawn_at").first()
        if profile is None or not profile.has_consented:
            # Nothing of someone who has not (or no longer) consented is stored, listening included.
            raise ServiceError(
                "Your consent is withdrawn (or was never given), so no listening is recorded for you.", code="consent_withdrawn", status=403
            )
        fresh, ignored = listening.events_clean(events, sides=SIDES, last_seq=assignment.listening_seq)
        if fresh:
            stored = assignment.listening.get("events", 0)
            if stored + len(fresh) > MAX_EVENTS_PER_ASSIGNMENT:
                raise ServiceError("This pair has recorded as many listening events as it can.", code="too_many_events", status=429, retry_after=60)
            now = now or timezone.now()
            ListeningEvent.objects.bulk_create(
                [ListeningEvent(assignment=assignment, server_time=now, **event) for event in fresh]
            )
            assignment.listening = _record_for(assignment)
            assignment.listening_seq = fresh[-1]["seq"]
            assignment.save(update_fields=["listening", "listening_seq"])
    record = assignment.listening or listening.evidence(events=[], fetches=[], durations={"A": 0.0, "B": 0.0})
    return {
        "accepted": len(fresh),
        "ignored": ignored,
        "last_seq": assignment.listening_seq,
        "heard": listening.heard(record, SIDES),
        "min_listen_seconds": assignment.pair.study.min_listen_seconds,
    }


def listening_require(*, record: dict, minimum: float) -> None:
    """Refuse unless the server's record has each clip heard for the study's minimum."""
    short = listening.shortfalls(record, sides=SIDES, minimum=minimum)
    if short:
        raise ServiceError(
            listening.shortfall_message(short, minimum=minimum, label="clip", action="answering"),
            code="listening_too_short",
            extra={"heard": listening.heard(record, SIDES), "min_listen_seconds": minimum},
        )
