"""export_dataset: CMI-RewardBench JSONL out, one row per vote, deterministic, and a lossless round trip."""

from __future__ import annotations

import hashlib
import io
import json
from decimal import Decimal
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from annotation.dataset import EXPORT_KEYS
from annotation.dataset.aggregates import AGGREGATE_KEYS
from annotation.dataset.provenance import PROVENANCE_KEYS
from annotation.models import AnnotatorProfile, Clip, Judgment, Pair, System
from tests.factories import AnnotatorFactory, ClipFactory, ConditionFactory, JudgmentFactory, PairFactory, StudyFactory
from tests.annotation.dataset_files import export, read_rows, wipe_database

pytestmark = pytest.mark.django_db

MODALITIES = ("text", "text+lyrics", "text+ref", "text+lyrics+ref")


def condition_for(modality: str, n: int, **kwargs):
    lyrics = f"[verse] line {n}" if "lyrics" in modality else ""
    reference = ClipFactory(system=None, kind=Clip.Kind.REFERENCE, duration=0.2) if "ref" in modality else None
    return ConditionFactory(prompt=f"prompt {modality} {n}", lyrics=lyrics, reference=reference, **kwargs)


def vote(pair, annotator, *, shown_a, alignment, musicality, conf=("3.5", "2.0"), rationale="because"):
    other = pair.clip_b if shown_a == pair.clip_a else pair.clip_a
    pick = {"A": shown_a, "B": other}
    return JudgmentFactory(
        pair=pair,
        annotator=annotator,
        a_clip=shown_a,
        alignment_choice=pick[alignment],
        musicality_choice=pick[musicality],
        alignment_confidence=Decimal(conf[0]),
        musicality_confidence=Decimal(conf[1]),
        rationale=rationale,
    )


@pytest.fixture
def study():
    """Three pairs per modality, two votes each (sides shown both ways), one test pair."""
    study = StudyFactory(name="cmi-study", title="CMI study", licence="CC BY-NC-SA 4.0")
    annotators = [AnnotatorFactory() for _ in range(2)]
    for modality in MODALITIES:
        for n in range(3):
            pair = PairFactory(
                study=study,
                condition=condition_for(modality, n, external_id=f"{modality}-{n}" if n else ""),
                clip_a=ClipFactory(duration=0.2),
                clip_b=ClipFactory(duration=0.2),
                split="test" if n == 0 and modality == "text" else "train",
            )
            vote(pair, annotators[0], shown_a=pair.clip_a, alignment="A", musicality="B", rationale="A 更贴合提示")
            vote(pair, annotators[1], shown_a=pair.clip_b, alignment="B", musicality="B", conf=("5.0", "1.5"))
    return study


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_rows_have_the_exact_keys_string_confidences_and_side_correct_labels(tmp_path, study):
    out = tmp_path / "ds"
    summary = export(out, "--study", study.name)
    assert "rows: 22 train, 2 test" in summary
    rows = read_rows(out / "train.jsonl") + read_rows(out / "test.jsonl")
    assert len(rows) == Judgment.objects.count() == 24
    for r in rows:
        assert list(r) == [*EXPORT_KEYS, "total_listening_time_a", "total_listening_time_b", *AGGREGATE_KEYS, "duplicate_claim", *PROVENANCE_KEYS, "dimension_passes"]
        assert r["duplicate_claim"] is False and r["dimension_passes"] is None
        # These votes carry no server listening record (made by a factory): their times are unknown.
        assert r["total_listening_time_a"] is None and r["total_listening_time_b"] is None
        assert isinstance(r["confidence_preference-musicality"], str) and isinstance(r["confidence_preference-alignment"], str)
        assert r["source"] == "cmi-arena-annotation"

    for judgment in Judgment.objects.select_related("pair__condition", "a_clip__system", "annotator__annotator_profile"):
        pair = judgment.pair
        b_clip = pair.clip_b if judgment.a_clip == pair.clip_a else pair.clip_a
        [r] = [r for r in rows if r["user id"] == judgment.annotator.annotator_profile.pseudonym and r["prompt"] == pair.condition.prompt]
        # model_a / audio-path are the clip the annotator heard as A.
        assert r["model_a"] == judgment.a_clip.system.name and r["model_b"] == b_clip.system.name
        assert sha(out / r["audio-path"]) == judgment.a_clip.sha256 and sha(out / r["audio2"]) == b_clip.sha256
        assert r["preference-alignment"] == ("model_a" if judgment.alignment_choice == judgment.a_clip else "model_b")
        assert r["preference-musicality"] == ("model_a" if judgment.musicality_choice == judgment.a_clip else "model_b")
        assert r["confidence_preference-alignment"] == f"{judgment.alignment_confidence:.1f}"
        assert r["split"] == pair.split and r["modality"] == pair.condition.modality
        assert r["prompt id"] == (pair.condition.external_id or f"c-{pair.condition.content_key[:12]}")
        if pair.condition.reference:
            assert r["ref-audio-path"].startswith("ref-audio/") and sha(out / r["ref-audio-path"]) == pair.condition.reference.sha256
        else:
            assert r["ref-audio-path"] == ""

    seen = {(r["preference-alignment"], r["preference-musicality"], r["confidence_preference-alignment"]) for r in rows}
    # Annotator 0 saw clip_a as A and chose A/B; annotator 1 saw clip_b as A and chose B/B.
    assert seen == {("model_a", "model_b", "3.5"), ("model_b", "model_b", "5.0")}
    assert any(r["feedback"] == "A 更贴合提示" for r in rows)
    assert "A 更贴合提示" in (out / "train.jsonl").read_text(encoding="utf-8")  # written as UTF-8, not \u escapes
    assert all(r["audio-path"].startswith("gen-audio/") for r in rows)


def test_withdrawn_and_excluded_annotators_never_appear(tmp_path, study):
    withdrawn, excluded = AnnotatorProfile.objects.order_by("id")[:2]
    withdrawn.withdrawn_at = timezone.now()
    withdrawn.save()
    excluded.excluded_at, excluded.excluded_reason = timezone.now(), "failed catch trials"
    excluded.save()
    kept = AnnotatorFactory()
    pair = Pair.objects.filter(study=study).first()
    vote(pair, kept, shown_a=pair.clip_a, alignment="A", musicality="A")
    out = tmp_path / "ds"
    summary = export(out)
    rows = read_rows(out / "train.jsonl") + read_rows(out / "test.jsonl")
    assert {r["user id"] for r in rows} == {kept.annotator_profile.pseudonym}
    assert "votes left out: 12 (annotator excluded), 12 (annotator withdrew consent)" in summary
    sheet = (out / "README.md").read_text()
    assert "Annotators: 1" in sheet and "12 votes (annotator withdrew consent)" in sheet


def test_gold_and_catch_pairs_are_not_exported(tmp_path, study):
    catch = PairFactory(study=study, kind=Pair.Kind.CATCH)
    JudgmentFactory(pair=catch, annotator=AnnotatorFactory())
    out = tmp_path / "ds"
    export(out)
    assert len(read_rows(out / "train.jsonl")) + len(read_rows(out / "test.jsonl")) == 24


def test_export_is_deterministic_and_refuses_a_non_empty_folder(tmp_path, study):
    export(tmp_path / "one")
    export(tmp_path / "two")
    for name in ("train.jsonl", "test.jsonl", "README.md"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()
    lines = (tmp_path / "one" / "train.jsonl").read_text().splitlines()
    assert lines == sorted(lines)
    with pytest.raises(CommandError, match="is not an empty directory"):
        export(tmp_path / "one")


def test_datasheet_counts_licence_dates_and_consent(tmp_path, study):
    out = tmp_path / "ds"
    export(out, "--study", study.name)
    sheet = (out / "README.md").read_text()
    assert "# CMI study dataset" in sheet
    assert "| train | 22 | 11 |" in sheet and "| test | 2 | 1 |" in sheet
    assert "| text | 4 | 2 |" in sheet and "| text+lyrics+ref | 6 | 0 |" in sheet
    for system in System.objects.all():
        assert f"| {system.name} | 2 |" in sheet
    assert "Annotators: 2" in sheet
    today = timezone.now().date().isoformat()
    assert f"Collection dates (UTC): {today} to {today}." in sheet
    assert "CC BY-NC-SA 4.0" in sheet and "informed consent" in sheet
    assert len(list((out / "gen-audio").iterdir())) == 24 and len(list((out / "ref-audio").iterdir())) == 6


def test_balanced_test_split_draws_a_quarter_per_modality_and_is_stored(tmp_path, study):
    summary = export(tmp_path / "one", "--balanced-test", "8", "--seed", "7")
    assert "balanced test split: 8 pairs" in summary
    test_rows = read_rows(tmp_path / "one" / "test.jsonl")
    assert len(test_rows) == 16  # two votes per pair
    by_modality = {m: {r["prompt id"] for r in test_rows if r["modality"] == m} for m in MODALITIES}
    assert all(len(ids) == 2 for ids in by_modality.values())
    stored = set(Pair.objects.filter(split="test").values_list("pk", flat=True))
    assert len(stored) == 8

    # Stored: a later plain export keeps the split.
    export(tmp_path / "two")
    assert (tmp_path / "two" / "test.jsonl").read_bytes() == (tmp_path / "one" / "test.jsonl").read_bytes()
    # Seeded: the same seed draws the same pairs again, another seed (almost surely) others.
    export(tmp_path / "three", "--balanced-test", "8", "--seed", "7")
    assert set(Pair.objects.filter(split="test").values_list("pk", flat=True)) == stored
    export(tmp_path / "four", "--balanced-test", "8", "--seed", "8")
    assert set(Pair.objects.filter(split="test").values_list("pk", flat=True)) != stored


@pytest.mark.parametrize(
    "args, message",
    [
        (["--balanced-test", "6", "--seed", "1"], "must be a positive multiple of 4"),
        (["--balanced-test", "16", "--seed", "1"], "Only 3 text pairs have votes; a balanced test split of 16 needs 4"),
        (["--balanced-test", "8"], "--balanced-test needs --seed"),
        (["--study", "nope"], "No study named 'nope'"),
    ],
)
def test_bad_export_options_are_refused_without_changes(tmp_path, study, args, message):
    before = list(Pair.objects.order_by("pk").values_list("pk", "split"))
    with pytest.raises(CommandError, match=message):
        export(tmp_path / "ds", *args)
    assert list(Pair.objects.order_by("pk").values_list("pk", "split")) == before


def test_round_trip_export_import_into_an_empty_database_export_is_byte_identical(tmp_path, study):
    first = tmp_path / "first"
    export(first, "--balanced-test", "4", "--seed", "3")
    wipe_database()
    assert Judgment.objects.count() == Clip.objects.count() == 0

    call_command(
        "import_pairs", str(first / "train.jsonl"), str(first / "test.jsonl"), "--audio-root", str(first), "--study", "again", stdout=io.StringIO()
    )
    assert Judgment.objects.filter(source=Judgment.Source.IMPORT).count() == 24
    assert Clip.objects.filter(kind=Clip.Kind.REFERENCE, system=None).count() == 6

    second = tmp_path / "second"
    export(second)
    for name in ("train.jsonl", "test.jsonl"):
        assert (first / name).read_bytes() == (second / name).read_bytes(), name
    listing = lambda root: sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.suffix == ".wav")  # noqa: E731
    assert listing(first) == listing(second)


def test_export_endpoint_returns_a_zip_to_researchers_only(study):
    from rest_framework.test import APIClient

    from tests.factories import UserFactory

    url = f"/api/studies/{study.name}/export/"
    client = APIClient()
    assert client.get(url).status_code in (401, 403)
    client.force_authenticate(AnnotatorFactory())
    denied = client.get(url)
    assert denied.status_code == 403 and "the collaborators the owner names, and admins" in denied.json()["detail"]

    stranger = UserFactory(roles=["researcher"])
    client.force_authenticate(stranger)
    assert client.get(url).status_code == 403  # neither owner nor collaborator
    assert client.get("/api/studies/no-such-study/export/").status_code == 404
    study.collaborators.add(stranger)
    response = client.get(url, HTTP_ACCEPT="application/zip")
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    assert f'filename="{study.name}-dataset.zip"' in response["Content-Disposition"]
    import zipfile

    with zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content))) as zf:
        rows = [json.loads(line) for line in zf.read("train.jsonl").decode().splitlines()]
        assert len(rows) == 22 and all(r["audio-path"] in zf.namelist() for r in rows)
        assert "Annotators: 2" in zf.read("README.md").decode()


def test_aggregated_labels_are_extra_columns_in_each_rows_own_terms(tmp_path, study):
    """Every row carries its pair's aggregated labels in its own terms, and the voter's reliability."""
    out = tmp_path / "ds"
    export(out, "--study", study.name)
    rows = read_rows(out / "train.jsonl") + read_rows(out / "test.jsonl")
    for r in rows:
        for method in ("dawid_skene", "mace"):
            for dim in ("alignment", "musicality"):
                assert r[f"aggregate_{method}_preference-{dim}"] in ("model_a", "model_b", None)
        assert 0.0 <= r["annotator_reliability"] <= 1.0
    by_prompt = {}
    for r in rows:
        by_prompt.setdefault(r["prompt"], []).append(r)
    for pair_rows in by_prompt.values():
        first, second = pair_rows
        # The two rows saw opposite sides: one pair-level label reads as opposite model letters.
        for method in ("dawid_skene", "mace"):
            a, b = first[f"aggregate_{method}_preference-alignment"], second[f"aggregate_{method}_preference-alignment"]
            if a is not None and b is not None:
                assert a != b
    assert "aggregate_dawid_skene_preference-<dimension>" in (out / "README.md").read_text(encoding="utf-8")
