"""Audio notes queued under the ASGI server: nothing written per GET, nothing missed by the listening record."""

from __future__ import annotations

import time

import pytest
from django.utils import timezone

from annotation.models import AudioFetch
from common.deferred import DeferredRows
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
    from common import deferred

    rows = DeferredRows(interval=3600)
    rows.enable()
    monkeypatch.setattr(deferred, "deferred_rows", rows)
    monkeypatch.setattr(annotation_listening, "deferred_rows", rows)
    annotator = AnnotatorFactory(username="deferred-listener")
    pair = PairFactory(clip_a=ClipFactory(duration=2.0), clip_b=ClipFactory(duration=2.0))
    assignment = AssignmentFactory(pair=pair, annotator=annotator, a_clip=pair.clip_a)
    from django.utils import timezone

    from tests.listening import prove

    for clip in (pair.clip_a, pair.clip_b):
        annotation_listening.audio_fetch_record(user=annotator, clip=clip, served=(0, clip.file.size - 1, clip.file.size))
        prove(assignment, "A" if clip == pair.clip_a else "B", at=timezone.now())
    assert AudioFetch.objects.count() == 0
    answer = annotation_listening.listening_events_record(
        assignment_id=assignment.pk, annotator=annotator, events=[{"seq": 1, "side": "A", "kind": "play", "position": 0.0}]
    )
    assert answer["accepted"] == 1 and AudioFetch.objects.count() == 2
    assert assignment.__class__.objects.get(pk=assignment.pk).listening["A"]["served_seconds"] == pytest.approx(2.0, abs=0.01)


@pytest.mark.engine
def test_a_flush_outside_a_transaction_waits_for_the_batch_the_writer_is_inserting(monkeypatch):
    """The writer thread takes the queue, then inserts: a reader's flush in that gap found nothing queued and read the
    rows before the batch was in (votes refused for listening under load). Outside a transaction a flush now waits
    for that batch; inside one it does not, since the batch may need a lock the transaction holds."""
    import threading

    from django.db import transaction

    user, clip = AnnotatorFactory(username="deferred-race"), ClipFactory()
    rows = DeferredRows(interval=0.01)
    rows.enable()
    taken, release = threading.Event(), threading.Event()
    real_bulk_create = AudioFetch.objects.bulk_create

    def slow_bulk_create(group, *args, **kwargs):
        if threading.current_thread().name == "auditorium-deferred-rows":
            taken.set()
            release.wait(10)
        return real_bulk_create(group, *args, **kwargs)

    monkeypatch.setattr(AudioFetch.objects, "bulk_create", slow_bulk_create)
    rows.add(_note(user, clip, 40))
    assert taken.wait(5)  # the writer holds the batch, not yet inserted
    with transaction.atomic():
        assert rows.flush() == 0  # inside a transaction: no wait, nothing of its own queued
    seen = {}

    def reader():
        rows.flush()
        seen["rows"] = AudioFetch.objects.filter(last_byte=40).count()

    thread = threading.Thread(target=reader)
    thread.start()
    thread.join(0.3)
    assert thread.is_alive()  # waiting for the writer's batch
    release.set()
    thread.join(5)
    assert seen == {"rows": 1}
