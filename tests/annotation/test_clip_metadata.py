"""Annotation clips carry no maker's name: tags are stripped on import, the original's hash is kept."""

from __future__ import annotations

import hashlib
import json
import re
import struct
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from django.test import Client
from django.urls import reverse

from annotation import services
from annotation.dataset import pairs_import
from annotation.models import Clip, Pair
from annotation.services.audio import audio_strip
from tests.factories import StudyAnnotatorFactory

pytestmark = pytest.mark.django_db

TAGS = {"title": "SecretTitle by MakerModel-v3", "artist": "MakerLab", "comment": "generated with MakerModel-v3", "software": "MakerPipeline"}
LEAKS = (b"Secret", b"Maker", b"TITLE", b"ARTIST", b"INFO", b"INAM", b"IART")


def tagged(path: Path, *, fmt: str, subtype: str, freq: float, sr: int = 16000, seconds: float = 0.5, tags: dict = TAGS) -> Path:
    t = np.arange(int(sr * seconds)) / sr
    audio = np.stack([0.3 * np.sin(2 * np.pi * freq * t), 0.2 * np.sin(2 * np.pi * freq * 1.5 * t)], axis=1)
    path.parent.mkdir(parents=True, exist_ok=True)
    with sf.SoundFile(str(path), "w", samplerate=sr, channels=2, format=fmt, subtype=subtype) as handle:
        for key, value in tags.items():
            setattr(handle, key, value)
        handle.write(audio)
    data = path.read_bytes()
    assert tags["title"].encode() in data  # the tags really are in the file we import
    return path


def riff_chunks(data: bytes) -> list[str]:
    found, at = [], 12
    while at + 8 <= len(data):
        name, size = struct.unpack("<4sI", data[at : at + 8])
        found.append(name.decode("latin-1"))
        at += 8 + size + (size & 1)
    return found


def flac_blocks(data: bytes) -> list[tuple[int, bytes]]:
    """(block type, body) of every FLAC metadata block."""
    assert data[:4] == b"fLaC"
    blocks, at = [], 4
    while True:
        header = data[at]
        size = int.from_bytes(data[at + 1 : at + 4], "big")
        blocks.append((header & 0x7F, data[at + 4 : at + 4 + size]))
        at += 4 + size
        if header & 0x80:
            return blocks


@pytest.fixture
def imported(tmp_path):
    root = tmp_path / "audio"
    files = {
        "gen/a.wav": tagged(root / "gen/a.wav", fmt="WAV", subtype="PCM_16", freq=330),
        "gen/b.flac": tagged(root / "gen/b.flac", fmt="FLAC", subtype="PCM_24", freq=440),
        "gen/c.ogg": tagged(root / "gen/c.ogg", fmt="OGG", subtype="VORBIS", freq=550),
    }
    rows = [
        {"audio-path": "gen/a.wav", "audio2": "gen/b.flac", "prompt": "calm piano", "model_a": "maker-a", "model_b": "maker-b", "split": "train"},
        {"audio-path": "gen/b.flac", "audio2": "gen/c.ogg", "prompt": "calm piano", "model_a": "maker-b", "model_b": "maker-c", "split": "train"},
    ]
    jsonl = tmp_path / "pairs.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    report = pairs_import(files=[jsonl], audio_root=root, study_name="tags")
    assert not report.errors, report.errors
    return root, files, jsonl, report


def served(clip: Clip, study) -> bytes:
    """The bytes an annotator of the study is sent for this clip."""
    user = StudyAnnotatorFactory(study=study).annotator
    pair = Pair.objects.filter(study=study).filter(clip_a=clip).first() or Pair.objects.filter(study=study, clip_b=clip).first()
    from tests.factories import AssignmentFactory

    AssignmentFactory(annotator=user, pair=pair)
    client = Client()
    client.force_login(user)
    response = client.get(reverse("clip-audio", kwargs={"public_id": clip.public_id}))
    assert response.status_code == 200
    return b"".join(response.streaming_content)


def test_no_tag_survives_import_and_the_original_hash_is_kept(imported):
    root, files, _, _ = imported
    study = Pair.objects.first().study
    for rel, path in files.items():
        original = path.read_bytes()
        clip = Clip.objects.get(original_sha256=hashlib.sha256(original).hexdigest())
        body = served(clip, study)
        leaks = [word for word in LEAKS if word in body]
        assert not leaks, (rel, leaks)
        # The stored file is what is served, hashed, exported and scored.
        assert hashlib.sha256(body).hexdigest() == clip.sha256 != clip.original_sha256
        assert clip.original_name == rel
        if rel.endswith(".wav"):
            assert riff_chunks(body) == ["fmt ", "data"] and clip.extension == ".wav"
        else:
            # FLAC kept as FLAC; Ogg Vorbis decoded into FLAC. Only STREAMINFO and the encoder's
            # own (identical for every clip) vendor string remain: no comment fields.
            assert clip.extension == ".flac"
            blocks = flac_blocks(body)
            comments = [b for kind, b in blocks if kind == 4]
            for comment in comments:
                vendor_length = int.from_bytes(comment[:4], "little")
                assert int.from_bytes(comment[4 + vendor_length : 8 + vendor_length], "little") == 0
            assert {kind for kind, _ in blocks} <= {0, 1, 4}
        # Nothing of the audio is lost: lossless sources come back sample for sample.
        stored, rate = sf.read(clip.file.path, dtype="float64")
        source, source_rate = sf.read(str(path), dtype="float64")
        assert rate == source_rate and stored.shape == source.shape
        tolerance = 0 if not rel.endswith(".ogg") else 2**-20
        assert np.max(np.abs(stored - source)) <= tolerance
    assert not re.search(rb"Maker", b"".join(Path(c.file.path).read_bytes() for c in Clip.objects.all()))


def test_the_same_files_imported_again_find_their_clips(imported):
    root, files, jsonl, _ = imported
    again = pairs_import(files=[jsonl], audio_root=root, study_name="tags")
    assert not again.errors and again.created["clips"] == 0 and again.existing["clips"] == 3
    assert Clip.objects.count() == 3 and Pair.objects.count() == 2
    # The same audio under different tags is the same clip too.
    retagged = tagged(root / "gen/a-retagged.wav", fmt="WAV", subtype="PCM_16", freq=330, tags={"title": "Another title", "artist": "OtherLab"})
    clip, created = services.clip_ingest(path=retagged)
    assert not created and clip == Clip.objects.get(original_sha256=hashlib.sha256(files["gen/a.wav"].read_bytes()).hexdigest())


def test_stripping_is_idempotent_so_an_exported_file_is_its_own_clip(imported, tmp_path):
    clip = Clip.objects.get(extension=".wav")
    copy = tmp_path / "exported.wav"
    copy.write_bytes(Path(clip.file.path).read_bytes())
    assert services.clip_ingest(path=copy) == (clip, False)
    # And a stripped file stripped again gives the same bytes.
    out = tmp_path / "again"
    out.mkdir()
    assert audio_strip(copy, out).read_bytes() == copy.read_bytes()
