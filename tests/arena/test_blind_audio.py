"""Blind means blind: before the vote, nothing in a battle clip's bytes or headers predicts its system."""

from __future__ import annotations

import io
import json
import struct
from collections import defaultdict

import numpy as np
import pytest
import soundfile as sf
from django.conf import settings
from django.urls import reverse

from arena.blind import HEADER_BYTES, blind_frames
from arena.models import ArenaSystem, Battle
from arena.seed import PREBAKED_PROMPTS, arena_seed

from .conftest import visitor_client, visitor_with_terms

# What differs per response by design and names no system: the per-battle ETag, the date.
# The Audio-Proof challenge is drawn at random per response (common/audio_proof.py), whatever the system.
PER_RESPONSE = {"ETag", "Date", "Audio-Proof"}


def chunks(data: bytes) -> list[str]:
    """The RIFF chunk ids of a WAV file, in order."""
    assert data[:4] == b"RIFF" and data[8:12] == b"WAVE"
    found, at = [], 12
    while at + 8 <= len(data):
        name, size = struct.unpack("<4sI", data[at : at + 8])
        found.append(name.decode("latin-1"))
        at += 8 + size + (size & 1)
    return found


@pytest.fixture
def seeded_battles(db, settings, django_capture_on_commit_callbacks):
    settings.ARENA_CLIP_SECONDS = 3.0
    arena_seed()
    systems = set(ArenaSystem.objects.values_list("system__name", flat=True))
    _, cookie = visitor_with_terms()
    client = visitor_client(cookie)
    seen = defaultdict(int)
    for k in range(40):
        prompt, lyrics = PREBAKED_PROMPTS[k % len(PREBAKED_PROMPTS)]
        with django_capture_on_commit_callbacks(execute=True):
            created = client.post(reverse("arena:api-battle-create"), json.dumps({"prompt": prompt, "lyrics": lyrics}), content_type="application/json")
        assert created.status_code == 201, created.content
        battle = Battle.objects.select_related("system_a__system", "system_b__system").get(public_id=created.json()["id"])
        assert battle.status == Battle.Status.READY, battle.error
        for side in ("a", "b"):
            seen[battle.system_for(side).system.name] += 1
        if len(seen) == len(systems) and min(seen.values()) >= 3:
            break
    assert set(seen) == systems and min(seen.values()) >= 3, seen
    return client, list(Battle.objects.select_related("system_a__system", "system_b__system", "clip_a", "clip_b"))


def test_every_systems_clips_are_served_with_the_same_size_header_and_metadata(seeded_battles):
    client, battles = seeded_battles
    rate = int(settings.ARENA_SAMPLE_RATE)
    frames = blind_frames(seconds=3.0, rate=rate)
    served = defaultdict(set)  # system -> {(size, header bytes, chunk layout, headers)}
    stored_sizes = defaultdict(set)
    for battle in battles:
        for side in ("a", "b"):
            system = battle.system_for(side).system.name
            url = reverse("arena:audio", kwargs={"public_id": battle.public_id, "side": side})
            response = client.get(url)
            assert response.status_code == 200
            body = b"".join(response.streaming_content)
            headers = tuple(sorted((k, v) for k, v in response.headers.items() if k not in PER_RESPONSE))
            partial = client.get(url, HTTP_RANGE="bytes=0-99")
            partial_headers = tuple(sorted((k, v) for k, v in partial.headers.items() if k not in PER_RESPONSE))
            served[system].add((len(body), body[:HEADER_BYTES], tuple(chunks(body)), headers, partial_headers))
            stored_sizes[system].add(battle.clip_for(side).file.size)
            # The audio is the clip's: the same samples, trimmed or padded to the battle's length.
            samples, got_rate = sf.read(io.BytesIO(body), dtype="float64")
            original, _ = sf.read(battle.clip_for(side).file.path, dtype="float64")
            assert got_rate == rate and len(samples) == frames
            used = min(frames, len(original))
            assert np.max(np.abs(samples[:used] - original[:used])) < 2 / 32768
            assert not samples[used:].any()
    # Every system's clips look exactly alike on the wire: one shape in all, so nothing can predict the system.
    shapes = set().union(*served.values())
    assert len(shapes) == 1, {system: len(s) for system, s in served.items()}
    size, header, layout, headers, _ = next(iter(shapes))
    assert size == HEADER_BYTES + 2 * frames and layout == ("fmt ", "data")
    assert dict(headers)["Content-Type"] == "audio/wav"
    # As stored (FLAC), the sizes do differ by system: the serving, not the storage, makes them alike.
    assert len(set().union(*stored_sizes.values())) > 1
