"""Listening as the server records it, for tests that need a judgment accepted without driving a page.

The events go through the same service the listening API calls, stamped with the
server times given here, after the audio endpoint's record of both clips being sent.
"""

from __future__ import annotations

from datetime import timedelta

from django.db.models import F
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


def prove(assignment: Assignment, side: str, *, first: int = 0, last: int | None = None, at) -> None:
    """What a client holding the bytes of one response of clip `side` answers to its Audio-Proof header."""
    from django.urls import reverse

    from annotation.services.listening import _side_clips, audio_receipts_record
    from common import audio_proof

    clip = (assignment.pair.clip_a if side_of(assignment, assignment.pair.clip_a_id) == side else assignment.pair.clip_b)
    last = clip.file.size - 1 if last is None else last
    path = reverse("clip-audio", kwargs={"public_id": clip.public_id})
    token = audio_proof.challenge_token(path=path, first=first, last=last, issued=at, ranges=audio_proof.challenge_ranges(first, last), source=clip.file.path)
    with open(clip.file.path, "rb") as handle:
        data = handle.read()
    assignment = Assignment.objects.annotate(clip_a_id=F("pair__clip_a_id"), clip_b_id=F("pair__clip_b_id")).get(pk=assignment.pk)
    receipt = {"side": side, "token": token, "bytes": audio_proof.answer_for(data, token)}
    audio_receipts_record(user=assignment.annotator, receipts=[receipt], clips=_side_clips(assignment), now=at)


def clip_at(url: str):
    """The clip a page's audio URL serves: a pair page's side URL (its assignment's clip for that side) or /audio/<uuid>/."""
    from django.urls import resolve

    from annotation.models import Clip
    from annotation.selectors import pair_audio_clip
    from common.blind import letter_of

    match = resolve(url.split("?", 1)[0])
    if match.url_name == "clip-audio":
        return Clip.objects.get(public_id=match.kwargs["public_id"])
    assignment_id, _ = letter_of(salt="annotation.pair-audio", token=match.kwargs["token"])
    return pair_audio_clip(token=match.kwargs["token"], user=Assignment.objects.get(pk=assignment_id).annotator)


def side_of(assignment: Assignment, clip_id: int) -> str:
    return "A" if clip_id == assignment.a_clip_id else "B"


def fetch_clips(assignment: Assignment, *, at) -> None:
    """What the clip-audio endpoint notes when it sends both clips whole, and the client's proof of receiving them."""
    pair = assignment.pair
    for clip in (pair.clip_a, pair.clip_b):
        size = clip.file.size
        audio_fetch_record(user=assignment.annotator, clip=clip, served=(0, size - 1, size), now=at)
        prove(assignment, side_of(assignment, clip.pk), at=at)


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
