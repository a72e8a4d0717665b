"""The admin's pair upload as the tests drive it: a row of the CMI-Pref JSONL, a JSONL body, a zip of audio, a POST."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

from django.urls import reverse

from tests.audio import write_tone

IMPORT_URL = "admin:annotation_study_import_pairs"


def row(a="gen/a.wav", b="gen/b.wav", user="604", **extra):
    data = {
        "audio-path": a, "audio2": b, "ref-audio-path": "", "prompt": "lo-fi beat", "lyrics": "", "model_a": "musicgen", "model_b": "yue",
        "prompt id": "p1", "user id": user, "preference-musicality": "model_a", "preference-alignment": "model_b",
        "confidence_preference-musicality": "3.0", "confidence_preference-alignment": "2.5", "feedback": "", "source": "cmi-arena-annotation",
        "split": "train",
    }
    data.update(extra)
    return data


def jsonl(*rows) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def audio_zip(tmp_path: Path, extra=()) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for i, name in enumerate(("gen/a.wav", "gen/b.wav")):
            zf.write(write_tone(tmp_path / "src" / name, 0.2, freq=400 + 100 * i, sr=8000), name)
        for info, data in extra:
            zf.writestr(info, data)
    return buf.getvalue()


def upload(client, *, archive: bytes, rows: bytes | None, study="uploaded", skip_invalid=False):
    from django.core.files.uploadedfile import SimpleUploadedFile

    data = {"study": study, "archive": SimpleUploadedFile("audio.zip", archive, content_type="application/zip")}
    if rows is not None:
        data["jsonl"] = SimpleUploadedFile("rows.jsonl", rows, content_type="application/json")
    if skip_invalid:
        data["skip_invalid"] = "on"
    return client.post(reverse(IMPORT_URL), data)
