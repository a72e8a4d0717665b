"""CMI-RewardBench files through the management commands: a JSONL row, import_pairs, export_dataset, and what the database holds."""

from __future__ import annotations

import io
import json
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from annotation.models import AnnotatorProfile, Assignment, Clip, Condition, Judgment, Pair, Study, System

# A value for `row` that leaves the key out of the row.
DROP = object()


def row(**overrides) -> dict:
    base = {
        "audio-path": "gen/a.wav",
        "audio2": "gen/b.wav",
        "ref-audio-path": "",
        "prompt": "calm piano ballad",
        "lyrics": "",
        "model_a": "musicgen",
        "model_b": "yue",
        "prompt id": "p1",
        "user id": "604",
        "preference-musicality": "model_b",
        "preference-alignment": "model_a",
        "confidence_preference-musicality": "2.0",
        "confidence_preference-alignment": "4.5",
        "feedback": "B sounds cleaner; A follows the prompt.",
        "source": "cmi-arena-annotation",
        "split": "train",
    }
    base.update(overrides)
    return {k: v for k, v in base.items() if v is not DROP}


def write_jsonl(path: Path, lines) -> Path:
    text = "".join((line if isinstance(line, str) else json.dumps(line, ensure_ascii=False)) + "\n" for line in lines)
    path.write_text(text, encoding="utf-8")
    return path


def run(path: Path, root: Path, *extra) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("import_pairs", str(path), "--audio-root", str(root), *extra, stdout=out, stderr=err)
    except CommandError as exc:
        return 1, out.getvalue(), err.getvalue() + str(exc)
    return 0, out.getvalue(), err.getvalue()


def snapshot() -> dict:
    media = Path(settings.MEDIA_ROOT) / "clips"
    return {
        "systems": System.objects.count(),
        "clips": Clip.objects.count(),
        "conditions": Condition.objects.count(),
        "pairs": Pair.objects.count(),
        "judgments": Judgment.objects.count(),
        "users": get_user_model().objects.count(),
        "profiles": AnnotatorProfile.objects.count(),
        "studies": Study.objects.count(),
        "files": len(list(media.rglob("*"))) if media.exists() else 0,
        "external_ids": sorted(Condition.objects.values_list("external_id", flat=True)),
    }


def export(out: Path, *extra) -> str:
    buf = io.StringIO()
    call_command("export_dataset", "--out", str(out), *extra, stdout=buf)
    return buf.getvalue()


def read_rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def wipe_database():
    Judgment.objects.all().delete()
    Assignment.objects.all().delete()
    Pair.objects.all().delete()
    Study.objects.all().delete()
    Condition.objects.all().delete()
    Clip.objects.all().delete()
    System.objects.all().delete()
    AnnotatorProfile.objects.all().delete()
    get_user_model().objects.all().delete()
