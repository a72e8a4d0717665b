"""Imported per-row results: subsets, MOS correlations, and the TuneJury rows reproducing their published figures."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from scoring import compare, services
from scoring.models import ExternalResultRow, ExternalResultSet
from tests.fixtures import TUNEJURY, needs_tunejury


def test_mos_correlations_drop_missing_values_and_need_two_rows():
    out = compare.mos_correlations([1, 2, 3, None, 5], [1.5, 2.5, 2.0, 4.0, None])
    assert out["n"] == 3
    assert out["srcc"] == pytest.approx(0.5)
    assert out["ktau"] == pytest.approx(1 / 3)
    assert compare.mos_correlations([1, None], [2, 3]) == {"lcc": None, "srcc": None, "ktau": None, "n": 1}


def test_subset_of_follows_the_evaluator_rules():
    assert compare.subset_of("cmi-arena-annotation") == "CMI-Pref"
    assert compare.subset_of("Music Arena ['01-2025JULAUG']") == "Music Arena"
    assert compare.subset_of("PAM (music)") == "PAM"
    assert compare.subset_of("SongEval") == "MusicEval"
    assert compare.subset_of("cmi-arena-annotation-v2") is None


@needs_tunejury
@pytest.mark.django_db
def test_tunejury_import_reproduces_the_published_figures_and_reimport_changes_nothing():
    out = io.StringIO()
    call_command("compare_judges", "--import-results", str(TUNEJURY), "--json", stdout=out)
    figures = json.loads(out.getvalue())
    head = figures["headline"]
    assert figures["rows"] == 2753 and figures["created"] is True
    assert head["CMI-Pref musicality accuracy"]["n"] == 500
    assert round(head["CMI-Pref musicality accuracy"]["accuracy"], 4) == 0.6600
    assert head["Music Arena musicality accuracy"]["n"] == 1340
    assert round(head["Music Arena musicality accuracy"]["accuracy"], 4) == 0.6761
    assert round(head["PAM SRCC (MI vs musicality MOS)"]["srcc"], 4) == 0.4995
    assert round(head["MusicEval SRCC (MI vs musicality MOS)"]["srcc"], 4) == 0.8089
    published = figures["published"]
    assert head["CMI-Pref musicality accuracy"]["accuracy"] == pytest.approx(published["CMI-Pref"]["pairwise_accuracy_mi"], abs=1e-12)
    assert head["PAM SRCC (MI vs musicality MOS)"]["srcc"] == pytest.approx(published["PAM"]["srcc_mi_vs_musicality"], abs=1e-9)
    # The CMI-Pref rows carry confidences, so the bucket breakdown exists; they carry no prompt, so no modality split.
    cmi = figures["computed"]["CMI-Pref"]["musicality"]
    assert sum(b["n"] for b in cmi["by_confidence"]["all"].values()) == 500
    assert "by_modality" not in cmi

    stored = (ExternalResultSet.objects.count(), ExternalResultRow.objects.count(), ExternalResultSet.objects.get().created_at)
    again = io.StringIO()
    call_command("compare_judges", "--import-results", str(TUNEJURY), "--json", stdout=again)
    assert json.loads(again.getvalue())["created"] is False
    assert (ExternalResultSet.objects.count(), ExternalResultRow.objects.count(), ExternalResultSet.objects.get().created_at) == stored


@pytest.mark.django_db
def test_bad_result_files_are_refused_and_store_nothing(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"rows": [{"source": "cmi-arena-annotation", "audio_a": "a.mp3", "scores_a": {"MI": 1}}]}))
    with pytest.raises(CommandError, match="row 0: a CMI-Pref row needs audio_b and scores_b"):
        call_command("compare_judges", "--import-results", str(bad))
    unknown = tmp_path / "unknown.json"
    unknown.write_text(json.dumps([{"source": "somewhere", "audio_a": "a", "scores_a": {}}]))
    with pytest.raises(CommandError, match="not a CMI-RewardBench subset"):
        call_command("compare_judges", "--import-results", str(unknown))
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(CommandError, match="not valid JSON"):
        call_command("compare_judges", "--import-results", str(broken))
    assert not ExternalResultSet.objects.exists() and not ExternalResultRow.objects.exists()


@pytest.mark.django_db
def test_imported_rows_link_to_stored_pairs_by_original_audio_path(tmp_path):
    import numpy as np

    from annotation.services import clip_ingest_array, condition_get_or_create, pair_get_or_create
    from tests.factories import StudyFactory

    study = StudyFactory(name="linked")
    condition, _ = condition_get_or_create(prompt="p")
    a = clip_ingest_array(audio=np.full(8000, 0.1, np.float32), sample_rate=16000, fmt="WAV", original_name="cmi-pref/gen-audio/aaa.mp3")[0]
    b = clip_ingest_array(audio=np.full(8000, 0.2, np.float32), sample_rate=16000, fmt="WAV", original_name="cmi-pref/gen-audio/bbb.mp3")[0]
    pair, _ = pair_get_or_create(study=study, condition=condition, clip_a=a, clip_b=b)
    path = tmp_path / "rows.json"
    row = {"source": "cmi-arena-annotation", "audio_a": "cmi-pref/gen-audio/bbb.mp3", "audio_b": "cmi-pref/gen-audio/aaa.mp3",
           "scores_a": {"MI": 2, "TA": 1}, "scores_b": {"MI": 1, "TA": 1},
           "preference": {"instruction_following": {"preference": "model_a", "confidence": 3.0}, "music_quality": {"preference": "model_a", "confidence": 4.0}}}
    path.write_text(json.dumps({"rows": [row]}))
    result_set, created = services.external_results_import(path=path)
    assert created and result_set.rows.get().pair_id == pair.pk
    assert result_set.computed_summary["CMI-Pref"]["musicality"]["all"] == {"accuracy": 1.0, "n": 1}
    # Ties predict B: TA 1 vs 1 -> model_b, human said model_a.
    assert result_set.computed_summary["CMI-Pref"]["alignment"]["all"] == {"accuracy": 0.0, "n": 1}
