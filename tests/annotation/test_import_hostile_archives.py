"""Hostile uploads through both import pages: damaged or odd zips get a 400 that says why; refusals leave no files;
the zip's directory is checked before anything is unpacked, and only what the rows name is unpacked; JSONL lines are capped."""

from __future__ import annotations

import io
import struct
import time
import tracemalloc
import zipfile
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation.dataset import upload as upload_module
from annotation.models import Clip, Judgment, Pair, Study
from tests.audio import write_tone
from tests.factories import StudyFactory, UserFactory

from tests.annotation.admin_upload import jsonl, row

pytestmark = pytest.mark.django_db

PAGES = ["admin", "researcher"]


@pytest.fixture
def importer(client):
    user = UserFactory(username="zip-importer", is_staff=True, is_superuser=True, roles=["researcher"])
    StudyFactory(name="uploaded", owner=user)
    client.force_login(user)
    return client


def post(client, page: str, *, archive: bytes, rows: bytes | None):
    data = {"study": "uploaded", "archive": SimpleUploadedFile("audio.zip", archive, content_type="application/zip")}
    if rows is not None:
        data["jsonl"] = SimpleUploadedFile("rows.jsonl", rows, content_type="application/json")
    url = reverse("admin:annotation_study_import_pairs") if page == "admin" else reverse("pairs-import")
    return client.post(url, data)


def tones(tmp_path: Path) -> dict[str, bytes]:
    return {name: write_tone(tmp_path / "src" / name, 0.2, freq=400 + 100 * i, sr=8000).read_bytes() for i, name in enumerate(("gen/a.wav", "gen/b.wav"))}


def build(entries: dict[str, bytes], *, method=zipfile.ZIP_STORED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=method) as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
    return buf.getvalue()


def with_bad_crc(tmp_path) -> bytes:
    entries = tones(tmp_path)
    archive = bytearray(build(entries))
    sample = entries["gen/b.wav"][200:216]
    at = bytes(archive).index(sample)
    archive[at] ^= 0xFF  # a stored sample changed after its checksum was written
    return bytes(archive)


def with_method_98(tmp_path) -> bytes:
    archive = bytearray(build({**tones(tmp_path), "gen/c.wav": b"RIFF" + b"\0" * 64}))
    with zipfile.ZipFile(io.BytesIO(bytes(archive))) as zf:
        info = zf.getinfo("gen/c.wav")
    struct.pack_into("<H", archive, info.header_offset + 8, 98)  # local header
    central = bytes(archive).index(b"PK\x01\x02")
    while True:  # the central record of gen/c.wav
        name_length = struct.unpack_from("<H", archive, central + 28)[0]
        if bytes(archive[central + 46 : central + 46 + name_length]) == b"gen/c.wav":
            break
        central = bytes(archive).index(b"PK\x01\x02", central + 4)
    struct.pack_into("<H", archive, central + 10, 98)
    return bytes(archive)


CASES = {
    "bad CRC": (with_bad_crc, "cannot be unpacked: its checksum (CRC) does not match its contents"),
    "file and folder": (lambda tmp: build({**tones(tmp), "gen/a.wav/y.wav": b"x"}), "both as a file and as a folder"),
    "300-character name": (lambda tmp: build({**tones(tmp), "gen/" + "n" * 300 + ".wav": b"x"}), "has a name longer than the limit"),
    "compression method 98": (with_method_98, "uses compression method 98, which cannot be read"),
    "the same name twice": (lambda tmp: _twice(tmp), "twice; each file may appear once"),
}


def _twice(tmp) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in tones(tmp).items():
            zf.writestr(name, data)
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            zf.writestr("gen/a.wav", b"other")
    return buf.getvalue()


def media_files() -> set[str]:
    root = Path(settings.MEDIA_ROOT)
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize("page", PAGES)
@pytest.mark.parametrize("case", list(CASES))
def test_a_damaged_or_odd_zip_gets_400_with_a_reason_and_changes_nothing(importer, tmp_path, page, case):
    make, message = CASES[case]
    before = media_files()
    response = post(importer, page, archive=make(tmp_path), rows=jsonl(row()))
    assert response.status_code == 400
    assert message in response.content.decode(), response.content.decode()[-3000:]
    assert Clip.objects.count() == Pair.objects.count() == 0 and media_files() == before


def _nine_channel_float(tmp_path) -> bytes:
    path = tmp_path / "src" / "nine.wav"
    sf.write(str(path), np.full((1600, 9), 0.1, dtype=np.float32), 8000, subtype="FLOAT")
    return path.read_bytes()


@pytest.mark.parametrize("page", PAGES)
def test_a_refused_import_leaves_no_files_under_media(importer, tmp_path, page):
    # The third file decodes (so every row passes its checks) but cannot be stored: FLAC holds at most 8 channels.
    entries = {**tones(tmp_path), "gen/c.wav": _nine_channel_float(tmp_path)}
    rows = jsonl(row(), row(a="gen/a.wav", b="gen/c.wav", user="605"))
    before = media_files()
    for _ in range(2):
        response = post(importer, page, archive=build(entries), rows=rows)
        assert response.status_code == 400 and "cannot be rewritten" in response.content.decode()
    assert media_files() == before
    assert Clip.objects.count() == Pair.objects.count() == Judgment.objects.count() == 0


def test_only_the_entries_the_rows_name_are_unpacked_and_a_row_failing_first_unpacks_nothing(importer, tmp_path, monkeypatch):
    unpacked = []
    real = upload_module.ZipAudio.extract
    monkeypatch.setattr(upload_module.ZipAudio, "extract", lambda self, name: unpacked.append(name) or real(self, name))
    entries = {**tones(tmp_path), "unused/big.bin": b"\0" * 2_000_000}
    response = post(importer, "researcher", archive=build(entries, method=zipfile.ZIP_DEFLATED), rows=jsonl(row(split="validation")))
    assert response.status_code == 400 and "is not train or test" in response.content.decode()
    assert unpacked == []
    response = post(importer, "researcher", archive=build(entries, method=zipfile.ZIP_DEFLATED), rows=jsonl(row()))
    assert response.status_code == 302 and sorted(unpacked) == ["gen/a.wav", "gen/b.wav"]


def test_a_zip_of_tens_of_thousands_of_entries_costs_little_when_rows_name_two(importer, tmp_path):
    entries = {**tones(tmp_path), **{f"noise/{i}.txt": b"" for i in range(20_000)}}
    archive = build(entries)
    started = time.monotonic()
    response = post(importer, "researcher", archive=archive, rows=jsonl(row()))
    seconds = time.monotonic() - started
    assert response.status_code == 302 and Clip.objects.count() == 2
    assert seconds < 10, seconds


def test_a_huge_jsonl_line_in_a_small_zip_is_refused_by_its_length_in_bounded_memory(importer, tmp_path):
    line = b'{"prompt": "' + b"a" * (64 * 1024 * 1024) + b'"}\n'
    archive = build({**tones(tmp_path), "train.jsonl": line + jsonl(row())}, method=zipfile.ZIP_DEFLATED)
    assert len(archive) < 1_000_000
    tracemalloc.start()
    try:
        started = time.monotonic()
        response = post(importer, "researcher", archive=archive, rows=None)
        seconds = time.monotonic() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    page = response.content.decode()
    assert response.status_code == 400 and "train.jsonl line 1: the line is longer than 1,048,576 bytes" in page
    assert "train.jsonl line 2" not in page  # the next row was read and is valid
    assert peak < 16 * 1024 * 1024, peak
    assert seconds < 15, seconds
    assert Study.objects.filter(name="uploaded").exists() and Pair.objects.count() == 0
