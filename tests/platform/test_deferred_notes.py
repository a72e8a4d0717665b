"""Audio notes queued under the ASGI server: nothing written per GET, nothing missed by the listening record."""

from __future__ import annotations

import time

import pytest
from django.utils import timezone

from annotation.models import AudioFetch
from auditorium.deferred import DeferredRows
from tests.factories import AnnotatorFactory, AssignmentFactory, ClipFactory, PairFactory

pytestmark = pytest.mark.django_db(transaction=True)


def _note(user, clip, last=999):
    return AudioFetch(user=user, clip=clip, first_byte=0, last_byte=last, total_bytes=last + 1, served_at=timezone.now())


def test_queued_notes_are_written_in_batches_and_by_a_flush():
    user, clip = AnnotatorFactory(username="deferred"), ClipFactory()
    rows = DeferredRows(interval=3600)
    rows.add(_note(user, clip))
    assert AudioFetch.objects.count() == 1  # not enabled (test client, WSGI): written at once
    rows.enable()
    rows.add(_note(user, clip, 10))
    rows.add(_note(user, clip, 20))
    assert AudioFetch.objects.count() == 1  # queued: no write on the request path
    assert rows.flush() == 2 and AudioFetch.objects.count() == 3
    soon = DeferredRows(interval=0.05)
    soon.enable()
    soon.add(_note(user, clip, 30))
    deadline = time.time() + 5
    while AudioFetch.objects.count() < 4 and time.time() < deadline:
        time.sleep(0.02)
    assert AudioFetch.objects.filter(last_byte=30).exists()  # the process's writer thread, within its interval


def test_the_listening_record_reads_this_process_queued_notes(monkeypatch):
    """A fetch still queued when the events arrive is counted: the record flushes first."""
    from annotation.services import listening as annotation_listening
    from auditorium import deferred

    rows = DeferredRows(interval=3600)
    rows.enable()
    monkeypatch.setattr(deferred, "deferred_rows", rows)
    monkeypatch.setattr(annotation_listening, "deferred_rows", rows)
    annotator = AnnotatorFactory(username="deferred-listener")
    pair = PairFactory(clip_a=ClipFactory(duration=2.0), clip_b=ClipFactory(duration=2.0))
    assignment = AssignmentFactory(pair=pair, annotator=annotator, a_clip=pair.clip_a)
    for clip in (pair.clip_a, pair.clip_b):
        annotation_listening.audio_fetch_record(user=annotator, clip=clip, served=(0, clip.file.size - 1, clip.file.size))
    assert AudioFetch.objects.count() == 0
    answer = annotation_listening.listening_events_record(
        assignment_id=assignment.pk, annotator=annotator, events=[{"seq": 1, "side": "A", "kind": "play", "position": 0.0}]
    )
    assert answer["accepted"] == 1 and AudioFetch.objects.count() == 2
    assert assignment.__class__.objects.get(pk=assignment.pk).listening["A"]["served_seconds"] == pytest.approx(2.0, abs=0.01)
