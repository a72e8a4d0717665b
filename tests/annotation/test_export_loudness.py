"""The exports record loudness matching: the option and target in the datasheet, per clip the figures and the gain applied, the audio unchanged."""

from __future__ import annotations

import csv
import io
import json
from decimal import Decimal

import numpy as np
import pytest

from annotation import services
from annotation.dataset import dataset_export
from annotation.models import Pair
from annotation.ratings import exports
from annotation.ratings import services as rating_services
from common.loudness import page_gain_db
from tests.factories import AnnotatorFactory, ClipFactory, ConditionFactory, JudgmentFactory, StudyFactory
from tests.ratings_helpers import answer_for, listen_all

pytestmark = pytest.mark.django_db
SR = 48000


def tone(amp: float, freq: float = 997.0) -> np.ndarray:
    return amp * np.sin(2 * np.pi * freq * np.arange(2 * SR) / SR)


def ingest(audio, **kwargs):
    return services.clip_ingest_array(audio=audio, sample_rate=SR, fmt="WAV", **kwargs)[0]


def _voted_pair(study, clip_a, clip_b, condition=None):
    pair = Pair.objects.create(study=study, condition=condition or ConditionFactory(), clip_a=clip_a, clip_b=clip_b, clip_key=Pair.key_for(clip_a.pk, clip_b.pk))
    JudgmentFactory(
        pair=pair, annotator=AnnotatorFactory(), a_clip=clip_a, alignment_choice=clip_a, musicality_choice=clip_b,
        alignment_confidence=Decimal("3.0"), musicality_confidence=Decimal("3.0"), rationale="heard both",
    )
    return pair


def _csv(text: str) -> dict[str, dict]:
    return {row["audio-path"]: row for row in csv.DictReader(io.StringIO(text))}


def test_pairwise_export_records_the_option_the_target_and_each_clips_gain(tmp_path):
    study = StudyFactory(name="levels", loudness_target_lufs=-20.0)
    loud, quiet, reference = ingest(tone(0.4)), ingest(tone(0.03, 440.0)), ingest(tone(0.1, 330.0), kind="reference")
    old_a, old_b = ClipFactory(), ClipFactory()  # never measured: played at 0 dB
    _voted_pair(study, loud, quiet, ConditionFactory(reference=reference))
    _voted_pair(study, old_a, old_b)
    out = tmp_path / "ds"
    dataset_export(out_dir=out, studies=[study])

    sheet = (out / "README.md").read_text(encoding="utf-8")
    assert "## Loudness" in sheet
    assert "`levels`: loudness matching on; target -20 LUFS, true-peak ceiling -1 dBTP." in sheet
    assert "Clips without a measured loudness: 2 of 5 rows of `loudness.csv`." in sheet
    assert "the audio files here are the stored files, unchanged" in sheet

    rows = _csv((out / "loudness.csv").read_text(encoding="utf-8"))
    assert len(rows) == 5 and {r["study"] for r in rows.values()} == {"levels"}
    by_clip = {}
    for path, row in rows.items():
        # The audio in the export is byte for byte the stored file.
        exported = (out / path).read_bytes()
        clip = next(c for c in (loud, quiet, reference, old_a, old_b) if c.file.open("rb").read() == exported)
        by_clip[clip.pk] = row
    for clip in (loud, quiet, reference):
        row = by_clip[clip.pk]
        assert float(row["loudness_lufs"]) == pytest.approx(clip.loudness_lufs, abs=1e-3)
        assert float(row["true_peak_dbtp"]) == pytest.approx(clip.true_peak_dbtp, abs=1e-3)
        assert float(row["gain_db"]) == page_gain_db(clip.loudness_lufs, clip.true_peak_dbtp, target_lufs=-20.0)
    assert float(by_clip[loud.pk]["gain_db"]) < 0 < float(by_clip[quiet.pk]["gain_db"])
    for clip in (old_a, old_b):
        assert by_clip[clip.pk]["loudness_lufs"] == "" and float(by_clip[clip.pk]["gain_db"]) == 0.0


def test_pairwise_export_of_an_unmatched_study_says_so_and_when_the_setting_changed(tmp_path):
    study = StudyFactory(name="as-stored", loudness_match=False)
    loud, quiet = ingest(tone(0.4)), ingest(tone(0.03, 440.0))
    _voted_pair(study, loud, quiet)
    dataset_export(out_dir=tmp_path / "before", studies=[study])
    assert "last changed" not in (tmp_path / "before" / "README.md").read_text(encoding="utf-8")
    # Changed once votes exist: the datasheet says votes from before were heard at other levels.
    study = services.study_update(study=study, loudness_match=True)
    study = services.study_update(study=study, loudness_match=False)
    dataset_export(out_dir=tmp_path / "ds", studies=[study])
    sheet = (tmp_path / "ds" / "README.md").read_text(encoding="utf-8")
    assert "`as-stored`: loudness matching off; every clip was played as stored (gain 0 dB)." in sheet
    assert "The setting was last changed on" in sheet and "earlier setting's levels" in sheet
    rows = _csv((tmp_path / "ds" / "loudness.csv").read_text(encoding="utf-8"))
    assert [float(r["gain_db"]) for r in rows.values()] == [0.0, 0.0]
    assert all(r["loudness_lufs"] != "" for r in rows.values())


def test_rating_export_records_loudness_and_an_import_keeps_the_setting(tmp_path):
    study = StudyFactory(name="rated-levels", overlap_target=1, min_listen_seconds=1.0, loudness_target_lufs=-24.0)
    rating_services.rating_task_set(study=study, task="multi", dimensions=["musicality"])
    clips = [ingest(tone(0.4)), ingest(tone(0.03, 440.0))]
    rating_services.rating_item_add(study=study, condition=ConditionFactory(), clips=clips)
    from tests.factories import StudyAnnotatorFactory

    user = StudyAnnotatorFactory(study=study).annotator
    assignment = rating_services.rating_next(study=study, annotator=user)
    listen_all(assignment, seconds=1.0)
    rating_services.rating_submit(assignment_id=assignment.pk, annotator=user, idempotency_key="k1", ratings=answer_for(assignment, 60))

    files = exports.ratings_export(study=study)
    sheet = json.loads(files["datasheet.json"])
    assert sheet["loudness"]["match"] is True and sheet["loudness"]["target_lufs"] == -24.0 and sheet["loudness"]["ceiling_dbtp"] == -1.0
    assert "BS.1770" in sheet["loudness"]["rule"] and sheet["loudness"]["per_clip"] == "loudness.csv"
    rows = _csv(files["loudness.csv"].decode("utf-8"))
    for clip in clips:
        row = rows[exports.audio_path(clip)]
        assert float(row["gain_db"]) == page_gain_db(clip.loudness_lufs, clip.true_peak_dbtp, target_lufs=-24.0)
        assert float(row["loudness_lufs"]) + float(row["gain_db"]) == pytest.approx(-24.0, abs=0.1)

    imported = exports.ratings_import(files=files, name="rated-levels-copy")
    assert (imported.loudness_match, imported.loudness_target_lufs) == (True, -24.0)
    # An export from before loudness matching was played as stored: its import is too.
    legacy = dict(files)
    legacy["datasheet.json"] = json.dumps({k: v for k, v in sheet.items() if k != "loudness"}).encode()
    assert exports.ratings_import(files=legacy, name="rated-legacy").loudness_match is False
