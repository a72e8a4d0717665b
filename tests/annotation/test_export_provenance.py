"""Export keeps each row's imported `source`, can write pairs without votes, and a re-import gives the same study."""

from __future__ import annotations

import io
import json
import zipfile
from decimal import Decimal
from pathlib import Path

import pytest
from django.core.management import call_command

from annotation.dataset import dataset_export, pairs_import
from annotation.dataset.keys import EXPORT_SOURCE, UNVOTED_EMPTY_KEYS
from annotation.models import Judgment, Pair, Study
from scoring.evaluation import normalize_label
from tests.audio import write_tone
from tests.factories import AnnotatorFactory, ClipFactory, ConditionFactory, JudgmentFactory, PairFactory, UserFactory

pytestmark = pytest.mark.django_db

LAB = "lab-2025 listening test"


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def vote_row(a, b, *, user, alignment, musicality, conf=("3.0", "4.5"), source=EXPORT_SOURCE, **extra):
    row = {
        "audio-path": a,
        "audio2": b,
        "ref-audio-path": "",
        "prompt": "calm piano ballad",
        "lyrics": "",
        "model_a": "sys-" + a[-5],
        "model_b": "sys-" + b[-5],
        "prompt id": "",
        "user id": user,
        "preference-musicality": musicality,
        "preference-alignment": alignment,
        "confidence_preference-musicality": conf[1],
        "confidence_preference-alignment": conf[0],
        "feedback": "",
        "source": source,
        "split": "train",
    }
    row.update(extra)
    return row


def pair_row(a, b, **extra):
    row = vote_row(a, b, user="", alignment="", musicality="", conf=("", ""))
    row.update(extra)
    return row


@pytest.fixture
def origin(tmp_path):
    """An imported study (two sources, ties, exact texts with lyrics and a reference, pairs without votes),
    plus a pair made on the platform with a platform vote and one without any."""
    audio = tmp_path / "audio"
    for i, name in enumerate("abcde"):
        write_tone(audio / f"gen/{name}.wav", 0.2, freq=300 + 110 * i, sr=8000)
    write_tone(audio / "ref/r.wav", 0.2, freq=1200, sr=8000)
    rows = [
        vote_row("gen/a.wav", "gen/b.wav", user="604", alignment="model_a", musicality="both", prompt="calm piano ballad  \n", feedback=" A follows\n"),
        vote_row("gen/b.wav", "gen/a.wav", user="605", alignment="neither", musicality="model_b", conf=("1.5", "5.0")),
        vote_row(
            "gen/c.wav",
            "gen/d.wav",
            user="604",
            alignment="model_b",
            musicality="model_a",
            source=LAB,
            prompt="sung folk tune",
            lyrics="[verse]\nla la la\n",
            **{"ref-audio-path": "ref/r.wav", "prompt id": "folk-1", "split": "test"},
        ),
        pair_row("gen/a.wav", "gen/c.wav", prompt="drum solo", source=LAB),
        {k: v for k, v in pair_row("gen/b.wav", "gen/e.wav", prompt="string quartet").items() if k != "source"},
    ]
    report = pairs_import(files=[write_jsonl(tmp_path / "in.jsonl", rows)], audio_root=audio, study_name="origin")
    assert report.imported and not report.errors, report.errors
    study = Study.objects.get(name="origin")
    made_here = PairFactory(study=study, condition=ConditionFactory(prompt="made here"), clip_a=ClipFactory(duration=0.2), clip_b=ClipFactory(duration=0.2))
    JudgmentFactory(
        pair=made_here,
        annotator=AnnotatorFactory(),
        a_clip=made_here.clip_b,
        alignment_choice=made_here.clip_b,
        musicality_choice=made_here.clip_a,
        alignment_confidence=Decimal("2.5"),
        musicality_confidence=Decimal("4.0"),
        rationale="B fits",
    )
    PairFactory(study=study, condition=ConditionFactory(prompt="nobody voted", lyrics="hum"), clip_a=ClipFactory(duration=0.2), clip_b=ClipFactory(duration=0.2))
    return study


def exported(out: Path) -> list[dict]:
    return [json.loads(line) for name in ("train.jsonl", "test.jsonl") for line in (out / name).read_text(encoding="utf-8").splitlines()]


def test_rows_keep_the_source_they_were_imported_with(tmp_path, origin):
    rows = exported(_export(tmp_path / "out", origin))
    by_prompt = {(r["prompt"], r["user id"]): r["source"] for r in rows}
    assert by_prompt[("calm piano ballad  \n", "604")] == EXPORT_SOURCE
    assert by_prompt[("sung folk tune", "604")] == LAB
    # Made on the platform: the platform's own label, which CMI-RewardBench reads as CMI-Pref.
    assert {r["source"] for r in rows if r["prompt"] == "made here"} == {EXPORT_SOURCE}
    assert Judgment.objects.get(pair__condition__prompt="sung folk tune").dataset_source == LAB
    assert Pair.objects.get(condition__prompt="drum solo").dataset_source == LAB
    assert Pair.objects.get(condition__prompt="made here").dataset_source == ""


def _export(out: Path, study: Study, *, include_unvoted: bool = False) -> Path:
    dataset_export(out_dir=out, studies=[study], include_unvoted=include_unvoted)
    return out


def test_pairs_without_votes_are_left_out_unless_asked_for(tmp_path, origin):
    plain = exported(_export(tmp_path / "plain", origin))
    assert len(plain) == 4 and all(r["user id"] for r in plain)

    buf = io.StringIO()
    call_command("export_dataset", "--out", str(tmp_path / "all"), "--study", "origin", "--include-unvoted", stdout=buf)
    assert "pairs without votes: 3" in buf.getvalue()
    rows = exported(tmp_path / "all")
    unvoted = [r for r in rows if not r["user id"]]
    assert sorted(r["prompt"] for r in unvoted) == ["drum solo", "nobody voted", "string quartet"]
    for r in unvoted:
        assert all(r[key] == "" for key in UNVOTED_EMPTY_KEYS)
        # The evaluator counts only labelled rows: these are skipped, not scored.
        assert normalize_label(r["preference-alignment"]) is None and normalize_label(r["preference-musicality"]) is None
        assert (tmp_path / "all" / r["audio-path"]).is_file() and (tmp_path / "all" / r["audio2"]).is_file()
    assert {r["prompt"]: r["source"] for r in unvoted} == {"drum solo": LAB, "nobody voted": EXPORT_SOURCE, "string quartet": EXPORT_SOURCE}
    datasheet = (tmp_path / "all" / "README.md").read_text(encoding="utf-8")
    assert "Pairs without votes: 3" in datasheet and "| train | 3 | 2 |" in datasheet and "Annotators: 3" in datasheet


def test_export_endpoint_takes_include_unvoted(origin):
    from rest_framework.test import APIClient

    client = APIClient()
    researcher = UserFactory(roles=["researcher"])
    origin.collaborators.add(researcher)  # the export follows the study rule
    client.force_authenticate(researcher)
    url = "/api/studies/origin/export/"
    bad = client.get(url + "?include_unvoted=maybe")
    assert bad.status_code == 400 and "include_unvoted" in bad.json()["detail"]
    for query, expected in (("", 3), ("?include_unvoted=1", 6)):
        response = client.get(url + query, HTTP_ACCEPT="application/zip")
        assert response.status_code == 200
        with zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content))) as zf:
            assert len(zf.read("train.jsonl").decode().splitlines()) == expected


def test_admin_action_exports_pairs_without_votes(client, origin):
    from django.urls import reverse

    client.force_login(UserFactory(roles=["researcher"], is_staff=True, is_superuser=True))
    response = client.post(
        reverse("admin:annotation_study_changelist"), {"action": "export_dataset_with_unvoted", "_selected_action": [origin.pk]}
    )
    assert response.status_code == 200
    with zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content))) as zf:
        rows = [json.loads(line) for line in zf.read("train.jsonl").decode().splitlines()]
    assert sum(1 for r in rows if not r["user id"]) == 3


# --- Round trip: export, import the export into a new study, compare field by field ------------


def study_state(study: Study) -> dict:
    """Everything a study's export carries, keyed by content (hashes, texts, pseudonyms), never by database id.

    Which clip a pair stores first is not compared: the rows say which clip each voter heard as A,
    not the pair's stored order, so a re-import takes it from the first row of the pair.
    """
    pairs = {}
    for pair in Pair.objects.filter(study=study).select_related("condition__reference", "clip_a__system", "clip_b__system"):
        c = pair.condition
        key = (c.content_key, frozenset((pair.clip_a.sha256, pair.clip_b.sha256)))
        pairs[key] = {
            "clips": {clip.sha256: clip.system.name if clip.system else "" for clip in (pair.clip_a, pair.clip_b)},
            "split": pair.split,
            "prompt": c.prompt,
            "lyrics": c.lyrics,
            "reference": c.reference.sha256 if c.reference else None,
            "modality": c.modality,
            "prompt id": c.external_id or f"c-{c.content_key[:12]}",
            "source": pair.dataset_source or EXPORT_SOURCE,
        }
    judgments = {}
    for j in Judgment.objects.filter(pair__study=study).select_related(
        "pair__clip_a", "pair__clip_b", "pair__condition", "a_clip", "alignment_choice", "musicality_choice", "annotator__annotator_profile"
    ):
        key = (j.annotator.annotator_profile.pseudonym, j.pair.condition.content_key, frozenset((j.pair.clip_a.sha256, j.pair.clip_b.sha256)))
        judgments[key] = {
            "a_clip": j.a_clip.sha256,
            "alignment": j.alignment_tie or j.alignment_choice.sha256,
            "musicality": j.musicality_tie or j.musicality_choice.sha256,
            "confidences": (j.alignment_confidence, j.musicality_confidence),
            "rationale": j.rationale,
            "prompt": j.source_text.get("prompt", j.pair.condition.prompt),
            "lyrics": j.source_text.get("lyrics", j.pair.condition.lyrics),
            "source": j.dataset_source or EXPORT_SOURCE,
        }
    return {"pairs": pairs, "judgments": judgments}


def test_a_reimported_export_is_the_same_study(tmp_path, origin):
    out = _export(tmp_path / "out", origin, include_unvoted=True)
    report = pairs_import(files=[out / "train.jsonl", out / "test.jsonl"], audio_root=out, study_name="copy")
    assert report.imported and not report.errors, report.errors
    before, after = study_state(origin), study_state(Study.objects.get(name="copy"))

    assert len(before["pairs"]) == 6 and len(before["judgments"]) == 4
    assert before["pairs"].keys() == after["pairs"].keys()
    for key, fields in before["pairs"].items():
        assert after["pairs"][key] == fields, key
    assert before["judgments"].keys() == after["judgments"].keys()
    for key, fields in before["judgments"].items():
        assert after["judgments"][key] == fields, key
    ties = [f for f in after["judgments"].values() if f["alignment"] in ("both", "neither") or f["musicality"] in ("both", "neither")]
    assert len(ties) == 2
    assert any(f["prompt"] == "calm piano ballad  \n" for f in after["judgments"].values())

    # And the copy exports to the same bytes.
    again = _export(tmp_path / "again", Study.objects.get(name="copy"), include_unvoted=True)
    for name in ("train.jsonl", "test.jsonl"):
        assert (out / name).read_bytes() == (again / name).read_bytes(), name
