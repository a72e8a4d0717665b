"""The shared listening rules (common.listening), on plain values."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from common import listening
from common.errors import ServiceError

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def events(*items):
    return [listening.Event(seq=n + 1, side=side, kind=kind, at=at(t)) for n, (t, kind, side) in enumerate(items)]


def whole(side, t=0.0, size=1000):
    return listening.Fetch(side=side, first_byte=0, last_byte=size - 1, total_bytes=size, at=at(t))


def record(items, fetches=None, durations=None):
    fetches = [whole("A"), whole("B")] if fetches is None else fetches
    return listening.evidence(events=events(*items), fetches=fetches, durations=durations or {"A": 10.0, "B": 10.0})


def test_coverage_counts_overlapping_ranges_once():
    assert listening.coverage([(0, 499), (250, 749)], 1000) == 0.75
    assert listening.coverage([(900, 5000), (0, 99)], 1000) == 0.2
    assert listening.coverage([], 1000) == 0.0 and listening.coverage([(0, 10)], 0) == 0.0


def test_one_clip_at_a_time_and_a_switch_ends_the_other_interval():
    r = record([(1, "play", "A"), (4, "switch", "B"), (6, "play", "A"), (7, "play", "B"), (9, "pause", "B")])
    # A: 0.5 (the play's allowance) + 3, then 6 -> 7; B: 4 -> 6, 7 -> 9.
    assert (r["A"]["seconds"], r["B"]["seconds"]) == (4.5, 4.0)
    assert r["switches"] == 3 and r["A"]["plays"] == 2 and r["B"]["plays"] == 2


def test_a_pause_for_the_other_clip_does_not_stop_the_playing_one():
    # The arena's <audio> pauses A after B's play has been reported.
    r = record([(1, "play", "A"), (3, "play", "B"), (3, "pause", "A"), (6, "pause", "B")])
    assert r["B"]["seconds"] == 3.0


def test_gaps_are_capped_and_ticks_never_start_playback():
    r = record([(0, "tick", "A"), (1, "play", "A"), (30, "tick", "A"), (31, "pause", "A"), (40, "tick", "B"), (50, "tick", "B")])
    # 0.5 s allowance + 29 s of silence, capped together at the gap limit; then 1 s to the pause.
    assert r["A"]["seconds"] == listening.MAX_EVENT_GAP_SECONDS + 1.0
    assert r["B"]["seconds"] == 0.0


def test_the_allowance_never_reaches_back_over_the_previous_event_or_the_first_fetch():
    # The play may begin 0.5 s before it arrived, but not before the pause that came 0.2 s earlier.
    assert record([(5, "pause", "A"), (5.2, "play", "A"), (6.2, "pause", "A")])["A"]["seconds"] == pytest.approx(1.2)
    fetched_late = record([(1, "play", "A"), (3, "pause", "A")], fetches=[whole("A", t=2.5)])
    assert fetched_late["A"]["seconds"] == 0.5 and fetched_late["B"]["seconds"] == 0.0


def test_heard_is_bounded_by_the_audio_sent_unless_all_of_it_was():
    partial = [listening.Fetch(side="A", first_byte=0, last_byte=249, total_bytes=1000, at=at(0))]
    r = record([(1, "play", "A"), (4, "tick", "A"), (7, "tick", "A"), (9, "pause", "A")], fetches=partial, durations={"A": 4.0, "B": 4.0})
    assert (r["A"]["played_seconds"], r["A"]["served_seconds"], r["A"]["seconds"]) == (8.5, 1.0, 1.0)
    # A 4 s clip sent whole and looped for 8.5 s: every second counts.
    r = record([(1, "play", "A"), (4, "tick", "A"), (7, "tick", "A"), (9, "pause", "A")], durations={"A": 4.0, "B": 4.0})
    assert r["A"]["seconds"] == 8.5


def test_shortfalls_name_the_clip_and_say_when_nothing_was_sent():
    r = record([(1, "play", "A"), (3, "pause", "A")], fetches=[whole("A")])
    short = listening.shortfalls(r, sides=("A", "B"), minimum=2.0)
    assert short == [("B", 0.0, False)]
    message = listening.shortfall_message(short, minimum=2.0, label="clip", action="answering")
    assert message == (
        "Listen to clip B for at least 2 s each before answering. The server counted: clip B (0.0 s of 2 s; its audio was never fetched from the server)."
    )
    assert listening.shortfalls(r, sides=("A", "B"), minimum=0) == []


def test_events_clean_ignores_numbers_already_received_and_refuses_disorder():
    raw = [{"seq": n, "side": "a", "kind": "tick"} for n in (3, 4, 5)]
    fresh, ignored = listening.events_clean(raw, sides=("a", "b"), last_seq=4)
    assert [e["seq"] for e in fresh] == [5] and ignored == 2
    for bad in (
        [{"seq": 2, "side": "a", "kind": "tick"}, {"seq": 2, "side": "a", "kind": "tick"}],
        [{"seq": True, "side": "a", "kind": "tick"}],
        [{"seq": listening.MAX_SEQ + 1, "side": "a", "kind": "tick"}],
        [{"seq": 1, "side": "A", "kind": "tick"}],
        [{"seq": 1, "side": "a", "kind": "tick", "position": float("inf")}],
        [{}] * (listening.MAX_EVENTS_PER_POST + 1),
        "events",
    ):
        with pytest.raises(ServiceError) as exc:
            listening.events_clean(bad, sides=("a", "b"), last_seq=0)
        assert exc.value.code == "bad_events"
