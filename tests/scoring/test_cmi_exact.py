"""CMI-RewardBench interop in scoring: results keyed by exported paths, both / neither votes, the evaluator's modality means."""

from __future__ import annotations

import io
import json
from decimal import Decimal

import pytest
from django.core.management import call_command

from annotation.models import Judgment
from scoring import report
from scoring.evaluation import VOTE, evaluate
from scoring.models import ExternalResultSet, Judge, ScoringRun, Verdict
from scoring.selectors import run_comparison_rows
from tests.factories import AnnotatorFactory, ConditionFactory, JudgmentFactory, PairFactory, StudyFactory

pytestmark = pytest.mark.django_db


def result_row(audio_a: str, audio_b: str, mi: tuple[float, float]) -> dict:
    return {
        "source": "cmi-arena-annotation", "audio_a": audio_a, "audio_b": audio_b,
        "scores_a": {"MI": mi[0], "TA": mi[0]}, "scores_b": {"MI": mi[1], "TA": mi[1]},
        "preference": {"instruction_following": {"preference": "model_a", "confidence": 3.0}, "music_quality": {"preference": "model_a", "confidence": 3.0}},
    }


def import_results(tmp_path, rows) -> dict:
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"rows": rows}))
    out = io.StringIO()
    call_command("compare_judges", "--import-results", str(path), "--json", stdout=out)
    return json.loads(out.getvalue())


def test_results_keyed_by_exported_paths_link_to_the_stored_pairs(tmp_path):
    study = StudyFactory(name="exported")
    pairs = [PairFactory(study=study, condition=ConditionFactory()) for _ in range(3)]
    annotator = AnnotatorFactory()
    for pair in pairs:
        JudgmentFactory(pair=pair, annotator=annotator, alignment_choice=pair.clip_a, musicality_choice=pair.clip_a)
    call_command("export_dataset", "--out", str(tmp_path / "ds"), stdout=io.StringIO())
    exported = [json.loads(line) for line in (tmp_path / "ds" / "train.jsonl").read_text().splitlines()]
    assert all(r["audio-path"].startswith("gen-audio/") and r["audio-path"].endswith(".wav") for r in exported)
    first, second, third = exported
    rows = [
        # As exported: audio-path is the clip shown as A (the pair's clip_a here); MI prefers it.
        result_row(first["audio-path"], first["audio2"], (2.0, 1.0)),
        # Under a dataset folder and in the other order: still the same pair, still oriented right.
        result_row("cmi-pref/" + second["audio2"], "cmi-pref/" + second["audio-path"], (1.0, 2.0)),
        # A hash no clip has links nothing; nor does a right hash under another extension.
        result_row("gen-audio/0123456789abcdef.wav", third["audio2"], (2.0, 1.0)),
        result_row(third["audio-path"].replace(".wav", ".mp3"), third["audio2"], (2.0, 1.0)),
    ]
    summary = import_results(tmp_path, rows)
    assert summary["linked_pairs"] == 2
    def pair_of(path: str) -> int:
        stem = path.rsplit("/", 1)[1].removesuffix(".wav")
        (pair,) = [p for p in pairs if stem in (p.clip_a.sha256[:16], p.clip_b.sha256[:16])]
        return pair.pk

    linked = dict(ExternalResultSet.objects.get().rows.filter(pair__isnull=False).values_list("row_index", "pair_id"))
    assert linked == {0: pair_of(first["audio-path"]), 1: pair_of(second["audio-path"])}
    data = report.report_build(study=study, options=report.ReportOptions(rounds=0), use_cache=False)
    (judge,) = [j for j in data["judges"] if j["source"] == "external"]
    # Both linked rows prefer the pair's clip_a, which every human chose.
    assert (judge["dimensions"]["musicality"]["n"], judge["dimensions"]["musicality"]["accuracy"]) == (2, 1.0)


def tie_study():
    """Pair 1: two of three votes say both / neither on musicality (majority both); pair 2: plain votes."""
    study = StudyFactory(name="ties")
    one, two = (PairFactory(study=study, condition=ConditionFactory()) for _ in range(2))
    people = [AnnotatorFactory() for _ in range(3)]
    for person, tie in zip(people, ("both", "neither", ""), strict=True):
        JudgmentFactory(
            pair=one, annotator=person, alignment_choice=one.clip_a,
            musicality_choice=None if tie else one.clip_b, musicality_tie=tie, musicality_confidence=Decimal("4.0"),
        )
    for person in people[:2]:
        JudgmentFactory(pair=two, annotator=person, alignment_choice=two.clip_a, musicality_choice=two.clip_a)
    judge = Judge.objects.create(key="rubric-ties", kind=Judge.Kind.RUBRIC)
    run = ScoringRun.objects.create(judge=judge, study=study, state=ScoringRun.State.DONE)
    for pair in (one, two):
        Verdict.objects.create(run=run, pair=pair, alignment_choice=pair.clip_a, musicality_choice=pair.clip_a, details={"labels": {"alignment": "model_a", "musicality": "model_a"}})
    return study, one, two, run


def test_both_and_neither_votes_score_half_as_the_evaluator_does():
    study, one, two, run = tie_study()
    data = report.report_build(study=study, options=report.ReportOptions(rounds=0), use_cache=False)
    (judge,) = [j for j in data["judges"] if j["source"] == "run"]
    # Pair 1's majority is both (2 of 3): 0.5 against any answer; pair 2 is right: (0.5 + 1) / 2.
    assert judge["dimensions"]["musicality"]["n"] == 2 and judge["dimensions"]["musicality"]["accuracy"] == 0.75
    assert judge["dimensions"]["alignment"]["accuracy"] == 1.0
    # Two-valued agreement statistics leave the both / neither votes out, and the report says how many.
    assert data["study"]["both_or_neither_votes"] == 2 and data["study"]["votes"] == 5
    assert data["agreement"]["total_votes"] == 3 and data["position_bias"]["musicality"]["votes"] == 3
    # Per-vote rows for a run carry the label as stored; the vote view scores them 0.5.
    rows = run_comparison_rows(run=run)
    assert sorted(r["label_musicality"] for r in rows if r["pair_id"] == one.pk) == ["both", "model_b", "neither"]
    figures = evaluate(rows, view=VOTE)["musicality"]["all"]
    assert figures == {"accuracy": (0.5 + 0.5 + 0.0 + 1.0 + 1.0) / 5, "n": 5}
    assert Judgment.objects.filter(musicality_choice__isnull=True).count() == 2


def test_modality_means_average_the_modalities_that_have_votes():
    rows = [
        {"pred_alignment": "model_a", "label_alignment": "model_a", "modality": "text"},
        {"pred_alignment": "model_b", "label_alignment": "model_a", "modality": "text"},
        {"pred_alignment": "model_a", "label_alignment": "model_a", "modality": "text+lyrics+ref"},
    ]
    out = evaluate(rows, view=VOTE, dimensions=("alignment",))["alignment"]
    # No text+lyrics and no text+ref votes: each mean is its one modality's accuracy, as the evaluator's _safe_mean gives.
    assert out["by_modality"]["text+lyrics"]["accuracy"] is None and out["by_modality"]["text+ref"]["accuracy"] is None
    assert out["w/o audio"] == 0.5 and out["w/ audio"] == 1.0
    only_text = evaluate(rows[:2], view=VOTE, dimensions=("alignment",))["alignment"]
    assert only_text["w/o audio"] == 0.5 and only_text["w/ audio"] is None
