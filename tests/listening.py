"""Listening as the server records it, for tests that need a judgment accepted without driving a page.

The events go through the same service the listening API calls, stamped with the
server times given here, after the audio endpoint's record of both clips being sent.
"""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from annotation.models import Assignment
from annotation.services import audio_fetch_record, listening_events_record


class Clock:
    """The server's clock, moved by hand: "three seconds later" costs no real time."""

    def __init__(self, monkeypatch):
        self.now = timezone.now()
        monkeypatch.setattr(timezone, "now", lambda: self.now)

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


def fetch_clips(assignment: Assignment, *, at) -> None:
    """What the clip-audio endpoint notes when it sends both clips whole."""
    pair = assignment.pair
    for clip in (pair.clip_a, pair.clip_b):
        size = clip.file.size
        audio_fetch_record(user=assignment.annotator, clip=clip, served=(0, size - 1, size), now=at)


def post_events(assignment: Assignment, events: list[tuple[float, str, str]], *, start) -> dict:
    """Events as (seconds after start, kind, side), one post each, numbered after what the server already has."""
    seq = Assignment.objects.get(pk=assignment.pk).listening_seq
    result = {}
    for offset, kind, side in events:
        seq += 1
        result = listening_events_record(
            assignment_id=assignment.pk, annotator=assignment.annotator, events=[{"seq": seq, "side": side, "kind": kind}], now=start + timedelta(seconds=offset)
        )
    return result


def listen(assignment: Assignment, *, seconds: float = 3.0, start=None) -> dict:
    """Fetch both clips, play A for `seconds` with a tick each second, switch to B for as long, pause."""
    start = start or timezone.now() - timedelta(seconds=2 * seconds + 10)
    fetch_clips(assignment, at=start)
    events = [(1.0, "play", "A")]
    events += [(1.0 + k, "tick", "A") for k in range(1, int(seconds) + 1)]
    events.append((1.0 + seconds, "switch", "B"))
    events += [(1.0 + seconds + k, "tick", "B") for k in range(1, int(seconds) + 1)]
    events.append((1.0 + 2 * seconds, "pause", "B"))
    return post_events(assignment, events, start=start)
