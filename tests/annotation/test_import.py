"""import_pairs: CMI-RewardBench JSONL in, every bad row reported by line, nothing written unless all rows are valid."""

from __future__ import annotations

import shutil
from decimal import Decimal
from pathlib import Path

import pytest

from annotation.models import AnnotatorProfile, Clip, Condition, Judgment, Pair, Study, System
from tests.audio import write_tone
from tests.factories import AnnotatorFactory
from tests.annotation.dataset_files import DROP, row, run, snapshot, write_jsonl

pytestmark = pytest.mark.django_db


@pytest.fixture
def root(tmp_path):
    """Four short, distinct tones: three generated clips and one reference."""
    audio = tmp_path / "audio"
    for i, name in enumerate(("gen/a.wav", "gen/b.wav", "gen/c.wav", "ref/r.wav")):
        write_tone(audio / name, 0.2, freq=300 + 110 * i, sr=8000)
    return audio


def test_valid_rows_create_systems_clips_conditions_pairs_and_imported_votes(tmp_path, root):
    path = write_jsonl(
        tmp_path / "rows.jsonl",
        [
            row(),
            # Same pair, shown the other way round to another annotator; labels are relative to that order.
            row(**{"audio-path": "gen/b.wav", "audio2": "gen/a.wav", "model_a": "yue", "model_b": "musicgen", "user id": "605",
                   "preference-musicality": "A", "preference-alignment": "Model_B",
                   "confidence_preference-musicality": 3, "confidence_preference-alignment": 1.5}),
            row(**{"audio-path": "gen/c.wav", "ref-audio-path": "ref/r.wav", "model_a": "songgen", "prompt id": "p2", "split": "test",
                   "lyrics": "[verse] la la", "modality": "text+lyrics+ref"}),
            # A pair without votes.
            row(**{"audio-path": "gen/a.wav", "audio2": "gen/c.wav", "model_b": "songgen", "prompt id": "p3", "prompt": "drum solo",
                   **{k: DROP for k in ("user id", "preference-musicality", "preference-alignment",
                                        "confidence_preference-musicality", "confidence_preference-alignment", "feedback")}}),
        ],
    )
    code, out, err = run(path, root, "--study", "cmi")
    assert code == 0, err
    assert "rows: 4 read, 4 valid, 0 invalid" in out
    assert "created: 3 systems, 4 clips, 3 conditions, 3 pairs, 2 annotators, 3 judgments" in out

    study = Study.objects.get(name="cmi")
    assert sorted(System.objects.values_list("name", flat=True)) == ["musicgen", "songgen", "yue"]
    ref = Clip.objects.get(original_name="ref/r.wav")
    assert ref.kind == Clip.Kind.REFERENCE and ref.system is None
    a, b = Clip.objects.get(original_name="gen/a.wav"), Clip.objects.get(original_name="gen/b.wav")
    assert (a.system.name, b.system.name, a.kind) == ("musicgen", "yue", Clip.Kind.GENERATED)

    pair = Pair.objects.get(study=study, clip_key=Pair.key_for(a.pk, b.pk))
    assert pair.split == "train" and pair.condition.external_id == "p1"
    first = Judgment.objects.get(pair=pair, annotator__annotator_profile__pseudonym="604")
    assert first.a_clip == a and first.musicality_choice == b and first.alignment_choice == a
    assert (first.musicality_confidence, first.alignment_confidence) == (Decimal("2.0"), Decimal("4.5"))
    assert first.rationale == "B sounds cleaner; A follows the prompt." and first.source == Judgment.Source.IMPORT
    second = Judgment.objects.get(pair=pair, annotator__annotator_profile__pseudonym="605")
    # Shown as A there was b.wav: "A" means b, "Model_B" means a.
    assert second.a_clip == b and second.musicality_choice == b and second.alignment_choice == a
    assert (second.musicality_confidence, second.alignment_confidence) == (Decimal("3.0"), Decimal("1.5"))

    with_ref = Pair.objects.get(condition__external_id="p2")
    assert with_ref.split == "test" and with_ref.condition.reference == ref and with_ref.condition.modality == "text+lyrics+ref"
    assert not Pair.objects.get(condition__external_id="p3").judgments.exists()

    profile = AnnotatorProfile.objects.get(pseudonym="604")
    assert profile.is_imported and not profile.user.has_usable_password()


def test_reimporting_the_same_file_changes_nothing(tmp_path, root):
    path = write_jsonl(tmp_path / "rows.jsonl", [row(), row(**{"user id": "605"}), row(**{"audio-path": "gen/c.wav", "prompt id": "p2", "prompt": "jazz trio"})])
    assert run(path, root)[0] == 0
    before = snapshot()
    code, out, err = run(path, root)
    assert code == 0, err
    assert "created: 0 systems, 0 clips, 0 conditions, 0 pairs, 0 annotators, 0 judgments" in out
    assert "skipped (already present): 3 clips, 2 conditions, 2 pairs, 3 judgments" in out
    assert snapshot() == before


def test_a_conflicting_vote_on_reimport_is_reported_by_line_and_nothing_changes(tmp_path, root):
    assert run(write_jsonl(tmp_path / "first.jsonl", [row()]), root)[0] == 0
    before = snapshot()
    changed = write_jsonl(tmp_path / "second.jsonl", [row(**{"user id": "700"}), row(**{"preference-musicality": "model_a"})])
    code, out, err = run(changed, root)
    assert code == 1
    assert "second.jsonl line 2: user id '604' already has a different vote on this pair" in err
    assert "nothing was imported" in out
    assert snapshot() == before


def test_existing_platform_annotator_is_matched_by_pseudonym(tmp_path, root):
    user = AnnotatorFactory()
    pseudonym = user.annotator_profile.pseudonym
    assert run(write_jsonl(tmp_path / "rows.jsonl", [row(**{"user id": pseudonym})]), root)[0] == 0
    assert Judgment.objects.get().annotator == user
    assert not AnnotatorProfile.objects.get(pseudonym=pseudonym).is_imported


def _garbage(root: Path) -> str:
    (root / "gen/bad.wav").write_bytes(b"RIFF not really a wave file at all")
    return "gen/bad.wav"


def _empty(root: Path) -> str:
    (root / "gen/empty.wav").write_bytes(b"")
    return "gen/empty.wav"


def _no_samples(root: Path) -> str:
    write_tone(root / "gen/silent.wav", 0.0, sr=8000)
    return "gen/silent.wav"


def _unsupported(root: Path) -> str:
    (root / "gen/a.m4a").write_bytes(b"\x00\x00\x00\x20ftypM4A ")
    return "gen/a.m4a"


def _copy_of_a(root: Path) -> str:
    shutil.copy(root / "gen/a.wav", root / "gen/a-copy.wav")
    return "gen/a-copy.wav"


def _link_outside(root: Path) -> str:
    outside = write_tone(root.parent / "outside.wav", 0.2, freq=1234, sr=8000)
    (root / "gen/link.wav").symlink_to(outside)
    return "gen/link.wav"


BAD_ROWS = {
    "missing file": (lambda r: row(audio2="gen/nope.wav"), "audio file not found"),
    "unreadable audio": (lambda r: row(audio2=_garbage(r)), "audio cannot be decoded"),
    "empty file": (lambda r: row(audio2=_empty(r)), "audio file is empty"),
    "audio without samples": (lambda r: row(audio2=_no_samples(r)), "audio has no samples"),
    "unsupported format": (lambda r: row(audio2=_unsupported(r)), "unsupported audio format '.m4a'"),
    "same path": (lambda r: row(audio2="gen/./a.wav"), "audio-path and audio2 are the same file"),
    "same content": (lambda r: row(audio2=_copy_of_a(r)), "have identical content"),
    "malformed json": (lambda r: '{"audio-path": "gen/a.wav", "audio2": ', "malformed JSON"),
    "not an object": (lambda r: '["gen/a.wav", "gen/b.wav"]', "each line must be a JSON object"),
    "missing key": (lambda r: row(audio2=DROP, split=DROP), "missing required key 'audio2', 'split'"),
    "unknown preference": (lambda r: row(**{"preference-musicality": "tie"}), "preference-musicality has unknown label 'tie'"),
    "confidence out of range": (lambda r: row(**{"confidence_preference-alignment": "5.5"}), "'5.5' is out of range"),
    "confidence below range": (lambda r: row(**{"confidence_preference-alignment": 0.5}), "0.5 is out of range"),
    "confidence not a half step": (lambda r: row(**{"confidence_preference-musicality": "2.3"}), "'2.3' is not a half step"),
    "confidence not a number": (lambda r: row(**{"confidence_preference-musicality": "high"}), "'high' is not a number"),
    "confidence missing": (lambda r: row(**{"confidence_preference-musicality": DROP}), "missing confidence_preference-musicality"),
    "user id missing": (lambda r: row(**{"user id": ""}), "missing user id"),
    "absolute path": (lambda r: row(audio2=str(r / "gen/b.wav")), "is an absolute path"),
    "dot-dot path": (lambda r: row(audio2="gen/../../outside.wav"), "leaves the audio root ('..' is not allowed)"),
    "symlink outside": (lambda r: row(audio2=_link_outside(r)), "leaves the audio root through a symbolic link"),
    "bad split": (lambda r: row(split="dev"), "split 'dev' is not train or test"),
    "modality mismatch": (lambda r: row(modality="text+lyrics"), "modality 'text+lyrics' does not match the row"),
    "empty condition": (lambda r: row(prompt=""), "no prompt, lyrics or reference audio"),
    "reference is a compared clip": (lambda r: row(**{"ref-audio-path": "gen/b.wav"}), "ref-audio-path has the same content"),
}


@pytest.mark.parametrize("case", sorted(BAD_ROWS))
def test_bad_row_is_reported_by_line_and_nothing_is_imported(tmp_path, root, case):
    make, reason = BAD_ROWS[case]
    good = row(**{"audio-path": "gen/c.wav", "prompt id": "p0"})
    path = write_jsonl(tmp_path / "rows.jsonl", [good, make(root)])
    before = snapshot()
    code, out, err = run(path, root)
    assert code == 1
    assert "rows.jsonl line 2: " in err and reason in err, err
    assert "line 1:" not in err
    assert "nothing was imported" in out
    assert snapshot() == before


def test_every_bad_row_is_listed_in_line_order(tmp_path, root):
    path = write_jsonl(
        tmp_path / "rows.jsonl",
        [row(audio2="gen/missing.wav"), "", row(), "{oops", row(**{"preference-alignment": "tie"})],
    )
    code, out, err = run(path, root)
    assert code == 1
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert [line.split(":")[1].strip() for line in lines] == ["rows.jsonl line 1", "rows.jsonl line 4", "rows.jsonl line 5"]
    assert "rows: 4 read, 1 valid, 3 invalid" in out  # the blank line is not a row
    assert Judgment.objects.count() == 0


def test_skip_invalid_imports_the_valid_rows_and_reports_the_rest(tmp_path, root):
    path = write_jsonl(tmp_path / "rows.jsonl", [row(), row(audio2="gen/missing.wav", **{"user id": "9"}), row(**{"audio-path": "gen/c.wav", "user id": "7"})])
    code, out, err = run(path, root, "--skip-invalid")
    assert code == 1  # rows were refused: scripts must notice
    assert "rows.jsonl line 2: audio2 'gen/missing.wav': audio file not found" in err
    assert "2 valid rows were imported" in err
    assert Judgment.objects.count() == 2
    assert not AnnotatorProfile.objects.filter(pseudonym="9").exists()


def test_the_same_audio_cannot_belong_to_two_systems(tmp_path, root):
    path = write_jsonl(tmp_path / "rows.jsonl", [row(), row(**{"audio-path": "gen/c.wav", "model_b": "other", "user id": "2"})])
    code, _, err = run(path, root)
    assert code == 1
    assert "rows.jsonl line 2: audio2 'gen/b.wav' has the same audio as a clip of 'yue' on line 1, but this row says 'other'" in err
    assert Clip.objects.count() == 0


def test_a_stored_clip_keeps_its_system(tmp_path, root):
    assert run(write_jsonl(tmp_path / "one.jsonl", [row()]), root)[0] == 0
    code, _, err = run(write_jsonl(tmp_path / "two.jsonl", [row(model_a="renamed", **{"user id": "8"})]), root)
    assert code == 1 and "is already stored as system 'musicgen', but this row says 'renamed'" in err


def test_conflicting_votes_and_splits_inside_one_file(tmp_path, root):
    path = write_jsonl(
        tmp_path / "rows.jsonl",
        [row(), row(**{"confidence_preference-musicality": "3.0"}), row(split="test", **{"user id": "2"}), row()],
    )
    code, out, err = run(path, root)
    assert code == 1
    assert "line 2: user id '604' already voted differently on this pair on line 1" in err
    assert "line 3: the same pair has split 'train' on line 1; the row says 'test'" in err
    assert "line 4" not in err  # an identical repeat is a duplicate, not an error
    assert Pair.objects.count() == 0


def test_identical_repeated_vote_is_stored_once(tmp_path, root):
    code, out, _ = run(write_jsonl(tmp_path / "rows.jsonl", [row(), row()]), root)
    assert code == 0
    assert Judgment.objects.count() == 1 and "1 judgments" in out.splitlines()[2]


def test_symlink_inside_the_root_is_followed(tmp_path, root):
    (root / "gen/alias.wav").symlink_to(root / "gen/b.wav")
    assert run(write_jsonl(tmp_path / "rows.jsonl", [row(audio2="gen/alias.wav")]), root)[0] == 0
    assert Clip.objects.count() == 2


def test_invalid_study_name_and_missing_root_are_refused(tmp_path, root):
    path = write_jsonl(tmp_path / "rows.jsonl", [row()])
    code, _, err = run(path, root, "--study", "not a slug")
    assert code == 1 and "Study name 'not a slug' is not valid" in err
    code, _, err = run(path, tmp_path / "nowhere")
    assert code == 1 and "is not a directory" in err
    assert snapshot()["studies"] == 0


def test_prompt_id_conflicts_are_warned_and_the_first_id_kept(tmp_path, root):
    path = write_jsonl(tmp_path / "rows.jsonl", [row(), row(**{"audio-path": "gen/c.wav", "prompt id": "other", "user id": "2"})])
    code, _, err = run(path, root)
    assert code == 0
    assert "warning: rows.jsonl line 2: prompt id 'other' names a condition already known as 'p1'" in err
    assert list(Condition.objects.values_list("external_id", flat=True)) == ["p1"]
