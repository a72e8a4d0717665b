"""CMI-RewardBench files, exactly: text kept byte for byte through import and export, and both / neither labels."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from annotation.models import Condition, Judgment
from tests.audio import write_tone

from tests.annotation.dataset_files import export, read_rows, row, run, snapshot, wipe_database, write_jsonl

pytestmark = pytest.mark.django_db


@pytest.fixture
def root(tmp_path):
    """Three short, distinct tones, at the paths test_import's rows name."""
    audio = tmp_path / "audio"
    for i, name in enumerate(("gen/a.wav", "gen/b.wav", "gen/c.wav")):
        write_tone(audio / name, 0.2, freq=300 + 110 * i, sr=8000)
    return audio

# Leading and trailing spaces, tabs and newlines in every free-text field.
PROMPT = "  anime rock, female vocal\n"
LYRICS = "\n[Verse 1]\nla la la\n\n"
FEEDBACK = "\tB 更干净。\nA follows the prompt.  \n"


def exact_rows() -> list[dict]:
    return [
        row(**{"user id": "604", "prompt": PROMPT, "lyrics": LYRICS, "feedback": FEEDBACK}),
        # The same pair and condition up to surrounding whitespace: one condition, each vote exact.
        row(**{"user id": "605", "prompt": PROMPT.strip(), "lyrics": LYRICS.strip(), "feedback": " ok ", "preference-alignment": "model_b"}),
        row(**{"audio-path": "gen/c.wav", "prompt id": "p2", "user id": "604", "prompt": " lofi\r\n", "lyrics": "", "feedback": ""}),
    ]


def key(r: dict) -> tuple:
    return (r["user id"], r["prompt"].strip())


def test_prompt_lyrics_and_feedback_round_trip_byte_for_byte(tmp_path, root):
    given = exact_rows()
    code, out, err = run(write_jsonl(tmp_path / "in.jsonl", given), root)
    assert code == 0, err
    # Deduplication ignores surrounding whitespace: the first two rows share one condition.
    assert Condition.objects.count() == 2
    first = tmp_path / "first"
    export(first)
    exported = {key(r): r for r in read_rows(first / "train.jsonl")}
    assert len(exported) == 3
    for r in given:
        back = exported[key(r)]
        for field in ("prompt", "lyrics", "feedback"):
            assert back[field] == r[field], (field, back[field], r[field])
    # The export itself survives import into an empty database and export, byte for byte.
    wipe_database()
    call_command("import_pairs", str(first / "train.jsonl"), "--audio-root", str(first), stdout=io.StringIO())
    second = tmp_path / "second"
    export(second)
    assert (second / "train.jsonl").read_bytes() == (first / "train.jsonl").read_bytes()


def test_both_and_neither_labels_are_imported_stored_and_exported_as_given(tmp_path, root):
    given = [
        row(**{"user id": "604", "preference-musicality": "both", "preference-alignment": "Neither"}),
        row(**{"user id": "605", "preference-musicality": "model_a", "preference-alignment": "both"}),
    ]
    path = write_jsonl(tmp_path / "in.jsonl", given)
    code, out, err = run(path, root)
    assert code == 0, err
    first = Judgment.objects.get(annotator__annotator_profile__pseudonym="604")
    assert (first.musicality_choice, first.musicality_tie, first.alignment_choice, first.alignment_tie) == (None, "both", None, "neither")
    second = Judgment.objects.get(annotator__annotator_profile__pseudonym="605")
    assert second.musicality_choice == second.a_clip and second.musicality_tie == "" and second.alignment_tie == "both"
    # Importing the same file again changes nothing; a different label for the same vote is refused.
    before = snapshot()
    assert run(path, root)[0] == 0 and snapshot() == before
    changed = write_jsonl(tmp_path / "changed.jsonl", [row(**{"user id": "604", "preference-musicality": "model_b", "preference-alignment": "neither"})])
    code, out, err = run(changed, root)
    assert code == 1 and "musicality both" in out + err and snapshot() == before
    export(tmp_path / "ds")
    back = {r["user id"]: r for r in read_rows(tmp_path / "ds" / "train.jsonl")}
    assert (back["604"]["preference-musicality"], back["604"]["preference-alignment"]) == ("both", "neither")
    assert (back["605"]["preference-musicality"], back["605"]["preference-alignment"]) == ("model_a", "both")


def test_a_nul_character_is_refused_by_line(tmp_path, root):
    code, out, err = run(write_jsonl(tmp_path / "in.jsonl", [row(), row(**{"user id": "9", "lyrics": "a\u0000b"})]), root)
    assert code == 1 and "line 2: lyrics contains a NUL character" in out + err
    assert Judgment.objects.count() == 0


def test_whitespace_only_text_is_no_condition(tmp_path, root):
    code, out, err = run(write_jsonl(tmp_path / "in.jsonl", [row(**{"prompt": " \n", "lyrics": "\t"})]), root)
    assert code == 1 and "no prompt, lyrics or reference audio" in out + err
