"""The server's own record of an annotator's listening: audio bytes sent, events received.

The rules are the shared ones in `common.listening`; this module stores the rows
(AudioFetch per user and clip, ListeningEvent per assignment) and keeps each assignment's
running record, which the judgment submit checks without reading the events again.
"""

from __future__ import annotations

from django.db import connections, transaction
from django.db.models import F
from django.urls import reverse
from django.utils import timezone

from common import audio_proof, listening
from common.deferred import deferred_rows
from common.errors import ServiceError
from common.precompiled import Precompiled, PrecompiledInsert, PreparedSQL

from ..models import Assignment, AudioFetch, AudioReceipt, Clip, ListeningEvent
from ..selectors import pair_audio_path

SIDES = ("A", "B")
MAX_EVENTS_PER_ASSIGNMENT = 5000
# Up to this many events go in one prepared INSERT each (a post while playing has one or two); more in one bulk INSERT.
BULK_EVENTS = 4


def audio_fetch_record(*, user, clip: Clip, served: tuple[int, int, int] | None, now=None, served_as: str = "") -> None:
    """Note the bytes of `clip` the audio endpoint is sending to `user` (nothing for a 304 or HEAD), and the name they
    went out under where credit is per URL (AudioFetch.served_as)."""
    if served is None or not getattr(user, "is_authenticated", False):
        return
    first, last, total = served
    # Queued under the ASGI server and written in batches; readers flush first (common/deferred.py).
    deferred_rows.add(
        AudioFetch(user=user, clip=clip, first_byte=first, last_byte=last, total_bytes=total, served_at=now or timezone.now(), served_as=served_as)
    )


def assignment_lock_query(*, assignment_id, annotator_id, queryset=None, **annotations):
    """The annotator's assignment, row-locked, with their consent and the study's listening minimum read in the
    same statement, plus `annotations`; sliced to one row for `Precompiled` (the submit and the listening post)."""
    queryset = Assignment.objects if queryset is None else queryset
    return (
        queryset.select_for_update(of=("self",))
        .annotate(
            consented_at=F("annotator__annotator_profile__consented_at"),
            withdrawn_at=F("annotator__annotator_profile__withdrawn_at"),
            min_listen_seconds=F("pair__study__min_listen_seconds"),
            **annotations,
        )
        .filter(pk=assignment_id, annotator_id=annotator_id)
        .order_by("pk")[:1]
    )


# What `_record_for` reads of the pair's clips, annotated on a locked assignment.
LISTENING_CLIPS = {
    "clip_a_id": F("pair__clip_a_id"),
    "clip_b_id": F("pair__clip_b_id"),
    "duration_a": F("pair__clip_a__duration"),
    "duration_b": F("pair__clip_b__duration"),
}


def _listening_lock_query(*, assignment_id, annotator_id):
    return assignment_lock_query(
        assignment_id=assignment_id,
        annotator_id=annotator_id,
        queryset=Assignment.objects.only("id", "state", "a_clip_id", "listening", "listening_seq"),
        **LISTENING_CLIPS,
    )


# Built into SQL once per process (common.precompiled): three listening posts a pair made
# compiling these querysets the largest single cost of the judgment cycle (py-spy, bench/load.py).
# The sentinels are values no id reaches.
LISTENING_LOCK = Precompiled(_listening_lock_query, {"assignment_id": 7_300_000_041, "annotator_id": 7_300_000_043})
EVENT_INSERT = PrecompiledInsert(ListeningEvent)
_EVENTS = PreparedSQL(
    lambda connection: "SELECT {seq}, {side}, {kind}, {at} FROM {table} WHERE {assignment} = %s".format(
        table=connection.ops.quote_name(ListeningEvent._meta.db_table),
        **{name: connection.ops.quote_name(column) for name, column in (("seq", "seq"), ("side", "side"), ("kind", "kind"), ("at", "server_time"), ("assignment", "assignment_id"))},
    )
)
# Each fetch with whether the listener proved receiving it (an AudioReceipt for the same range): only proven ones count.
_FETCHES = PreparedSQL(
    lambda connection: (
        "SELECT f.{clip}, f.{first}, f.{last}, f.{total}, f.{at}, EXISTS (SELECT 1 FROM {receipts} r WHERE r.{user} = f.{user} AND r.{clip} = f.{clip} "
        "AND r.{first} = f.{first} AND r.{last} = f.{last}) FROM {table} f WHERE f.{user} = %s AND f.{clip} IN (%s, %s)"
    ).format(
        table=connection.ops.quote_name(AudioFetch._meta.db_table),
        receipts=connection.ops.quote_name(AudioReceipt._meta.db_table),
        **{
            name: connection.ops.quote_name(column)
            for name, column in (("clip", "clip_id"), ("first", "first_byte"), ("last", "last_byte"), ("total", "total_bytes"), ("at", "served_at"), ("user", "user_id"))
        },
    )
)
_SAVE_RECORD = PreparedSQL(
    lambda connection: "UPDATE {table} SET {record} = %s, {seq} = %s WHERE {id} = %s".format(
        table=connection.ops.quote_name(Assignment._meta.db_table),
        record=connection.ops.quote_name("listening"),
        seq=connection.ops.quote_name("listening_seq"),
        id=connection.ops.quote_name("id"),
    )
)


def _times(connection, values: list) -> list:
    """Raw rows carry the database's own form of a time: the field's converters make them the aware datetimes the ORM gives."""
    field = ListeningEvent._meta.get_field("server_time")
    converters = connection.ops.get_db_converters(field.get_col(ListeningEvent._meta.db_table))
    out = []
    for value in values:
        for converter in converters:
            value = converter(value, None, connection)
        out.append(value)
    return out


def _record_for(assignment: Assignment) -> dict:
    """The listening record from the stored rows (one query for events, one for fetches)."""
    deferred_rows.flush()
    connection = connections[Assignment.objects.db]
    a_clip, b_clip = assignment.a_clip_id, (assignment.clip_b_id if assignment.a_clip_id == assignment.clip_a_id else assignment.clip_a_id)
    side_of = {a_clip: "A", b_clip: "B"}
    seconds = {assignment.clip_a_id: assignment.duration_a, assignment.clip_b_id: assignment.duration_b}
    durations = {"A": seconds[a_clip], "B": seconds[b_clip]}
    event_rows = _EVENTS.rows(connection, [assignment.pk])
    fetch_rows = _FETCHES.rows(connection, [assignment.annotator_id, a_clip, b_clip])
    event_times, fetch_times = _times(connection, [row[3] for row in event_rows]), _times(connection, [row[4] for row in fetch_rows])
    events = [listening.Event(seq=seq, side=side, kind=kind, at=at) for (seq, side, kind, _), at in zip(event_rows, event_times)]
    fetches = [
        listening.Fetch(side=side_of[clip_id], first_byte=first, last_byte=last, total_bytes=total, at=at, proven=bool(proven))
        for (clip_id, first, last, total, _, proven), at in zip(fetch_rows, fetch_times)
    ]
    return listening.evidence(events=events, fetches=fetches, durations=durations)


def audio_receipts_record(*, user, receipts, clips: dict[str, Clip], serves=None, now=None) -> int:
    """Check each receipt (side, token, bytes) by the proof's rule (common.audio_proof.receipts_verify) and store it:
    the fetch it names then counts. `serves(side, path)`: whether the side's clip is served at that URL (default: its
    /audio/ URL). Returns how many receipts were new."""
    if not receipts:
        audio_proof.receipts_verify(receipts=receipts, sides=(), serves=None, sent_after=None)  # a non-list is refused with the reason
        return 0
    if serves is None:
        urls = {side: reverse("clip-audio", kwargs={"public_id": clip.public_id}) for side, clip in clips.items()}
        serves = lambda side, path: path == urls[side]  # noqa: E731

    def sent_after(side, issued):
        return AudioFetch.objects.filter(user=user, clip=clips[side], served_at__gt=issued).values_list("first_byte", "last_byte")

    now = now or timezone.now()
    new = 0
    for side, challenge in audio_proof.receipts_verify(receipts=receipts, sides=tuple(clips), serves=serves, sent_after=sent_after):
        _, created = AudioReceipt.objects.get_or_create(user=user, clip=clips[side], first_byte=challenge["first"], last_byte=challenge["last"], defaults={"received_at": now})
        new += created
    return new


def listening_events_record(*, assignment_id: int, annotator, events, receipts=None, client_now=None, now=None) -> dict:
    """Store a batch of the page's listening events, stamped now; return the updated record.

    Events numbered at or below the highest number already received are ignored, so a
    retried or replayed batch changes nothing. With `client_now` (the page's clock as it sent
    the batch) the events are placed by their own `client_time` before now instead
    (`listening.events_anchored`): a page's last post before it goes away carries what it kept.
    """
    # The audio notes this process queued before now (a batch being written included) are in the database first.
    deferred_rows.flush()
    with transaction.atomic():
        # The row lock orders concurrent posts for one assignment: numbers and times then grow together.
        assignment = LISTENING_LOCK.first(assignment_id=assignment_id, annotator_id=annotator.pk)
        if assignment is None:
            raise ServiceError("No such task for you.", code="not_found", status=404)
        if assignment.state in (Assignment.State.SUBMITTED, Assignment.State.SKIPPED):
            raise ServiceError(f"This pair is already {assignment.state}; listening to it is no longer recorded.", code="not_listening", status=409)
        if assignment.consented_at is None or assignment.withdrawn_at is not None:
            # Nothing of someone who has not (or no longer) consented is stored, listening included.
            raise ServiceError(
                "Your consent is withdrawn (or was never given), so no listening is recorded for you.", code="consent_withdrawn", status=403
            )
        fresh, ignored = listening_batch_store(assignment=assignment, annotator=annotator, events=events, receipts=receipts, client_now=client_now, now=now)
    record = assignment.listening or listening.evidence(events=[], fetches=[], durations={"A": 0.0, "B": 0.0})
    return {
        "accepted": fresh,
        "ignored": ignored,
        "last_seq": assignment.listening_seq,
        "heard": listening.heard(record, SIDES),
        "min_listen_seconds": assignment.min_listen_seconds,
    }


def listening_batch_store(*, assignment: Assignment, annotator, events, receipts, client_now=None, now=None) -> tuple[int, int]:
    """Check and store events and receipts for an assignment the caller holds locked (LISTENING_LOCK's or the
    submit's query, with LISTENING_CLIPS), then count its record again: (events stored, events already received).

    Without `client_now` each event is stamped `now`, its arrival; with it, events are placed by their page clock
    before now (`listening.events_anchored`). Raises ServiceError, leaving the caller's transaction to undo all of it.
    """
    assignment.annotator_id = annotator.pk
    batched = client_now is not None
    limit = listening.MAX_EVENTS_PER_BATCH if batched else listening.MAX_EVENTS_PER_POST
    fresh, ignored = listening.events_clean(events, sides=SIDES, last_seq=assignment.listening_seq, limit=limit) if events else ([], 0)
    now = now or timezone.now()
    times = listening.events_anchored(fresh, client_now=client_now, arrival=now) if batched else [now] * len(fresh)
    proven = audio_receipts_record(user=annotator, receipts=receipts, clips=(clips := _side_clips(assignment)), serves=_pair_serves(assignment.pk, clips), now=now) if receipts else 0
    if not (fresh or proven):
        return 0, ignored
    stored = assignment.listening.get("events", 0)
    if stored + len(fresh) > MAX_EVENTS_PER_ASSIGNMENT:
        raise ServiceError("This pair has recorded as many listening events as it can.", code="too_many_events", status=429, retry_after=60)
    if len(fresh) > BULK_EVENTS:
        # A judgment's batch is a whole pair's listening (a tick a second): one statement, not one per event.
        ListeningEvent.objects.bulk_create([ListeningEvent(assignment_id=assignment.pk, server_time=at, **event) for event, at in zip(fresh, times)])
    else:
        for event, at in zip(fresh, times):
            EVENT_INSERT.create(assignment_id=assignment.pk, server_time=at, **event)
    assignment.listening = _record_for(assignment)
    assignment.listening_seq = fresh[-1]["seq"] if fresh else assignment.listening_seq
    field = Assignment._meta.get_field("listening")
    connection = connections[Assignment.objects.db]
    _SAVE_RECORD.execute(connection, [field.get_db_prep_save(assignment.listening, connection), assignment.listening_seq, assignment.pk])
    return len(fresh), ignored


def _side_clips(assignment: Assignment) -> dict[str, Clip]:
    a_clip = assignment.a_clip_id
    b_clip = assignment.clip_b_id if a_clip == assignment.clip_a_id else assignment.clip_a_id
    clips = Clip.objects.only("id", "public_id", "file").in_bulk([a_clip, b_clip])
    return {"A": clips[a_clip], "B": clips[b_clip]}


def _pair_serves(assignment_id: int, clips: dict[str, Clip]):
    """Which URLs serve a side for the proof: the assignment's own side URL, and the clip's public one for API clients."""
    urls = {side: {pair_audio_path(assignment_id=assignment_id, label=side), reverse("clip-audio", kwargs={"public_id": clip.public_id})} for side, clip in clips.items()}
    return lambda side, path: path in urls[side]


def listening_require(*, record: dict, minimum: float) -> None:
    """Refuse unless the server's record has each clip heard for the study's minimum."""
    short = listening.shortfalls(record, sides=SIDES, minimum=minimum)
    if short:
        unproven = [side for side, _, _ in short if side in record.get("unproven", [])]
        # A side sent but not proven was fetched: the proof sentence below says what is missing instead.
        short = [(side, seconds, fetched or side in unproven) for side, seconds, fetched in short]
        proof = audio_proof.unproven_sentence(unproven)
        raise ServiceError(
            listening.shortfall_message(short, minimum=minimum, label="clip", action="answering") + proof,
            code="listening_too_short",
            extra={"heard": listening.heard(record, SIDES), "min_listen_seconds": minimum},
        )


def listening_require_recounted(*, assignment: Assignment, minimum: float) -> None:
    """`listening_require` on the assignment's kept record, and when that falls short, once more on the stored rows.

    The kept record is counted at each listening post. An audio note taken by another server process reaches the
    database a moment later (common deferred rows), so before refusing the same rules run on what is stored now; a
    record that then covers the minimum is kept. `assignment` needs LISTENING_LOCK's clip annotations."""
    short = listening.shortfalls(assignment.listening, sides=SIDES, minimum=minimum)
    if not short:
        return
    record = _record_for(assignment)
    listening_require(record=record, minimum=minimum)
    assignment.listening = record
    Assignment.objects.filter(pk=assignment.pk).update(listening=record)
