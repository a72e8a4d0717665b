"""The CMI-RewardBench evaluation rules and the two views (per vote, per pair majority) over plain rows."""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from scoring import evaluation
from scoring.evaluation import BOTH, MAJORITY, MODEL_A, MODEL_B, VOTE, evaluate

ROOT = Path(__file__).resolve().parents[2]


def test_ties_predict_b_and_missing_scores_predict_nothing():
    assert evaluation.prefer(0.7, 0.7) == "model_b"
    assert evaluation.prefer(0.71, 0.7) == "model_a"
    assert evaluation.prefer("3.5", "2") == "model_a"
    assert evaluation.prefer(None, 0.2) is None
    assert evaluation.prefer(float("nan"), 0.2) is None


def test_the_array_tie_rule_is_the_scalar_one():
    values = [None, float("nan"), -1.0, 0.0, 0.5, 0.5000001, 2.0]
    grid = list(itertools.product(values, values))
    arrays = evaluation.prefers_a([np.nan if a is None else a for a, _ in grid], [np.nan if b is None else b for _, b in grid])
    for (a, b), pref in zip(grid, arrays, strict=True):
        expected = evaluation.prefer(a, b)
        assert (None if np.isnan(pref) else (MODEL_A if pref == 1 else MODEL_B)) == expected, (a, b)


def test_label_mapping_and_match_scores():
    assert [evaluation.normalize_label(x) for x in ("A", "model_b", " Both ", "neither", "tie", "BOTH_BAD", "", None)] == [
        "model_a", "model_b", "both", "both", None, None, None, None,
    ]
    assert evaluation.match_score("model_a", "a") == 1.0
    assert evaluation.match_score("model_a", "model_b") == 0.0
    assert evaluation.match_score("both", "model_b") == 0.5
    assert evaluation.match_score("model_a", "neither") == 0.5
    assert evaluation.match_score("neither", "both") == 1.0
    assert evaluation.match_score("model_a", "tie") is None
    assert evaluation.accuracy([("model_a", "a"), ("model_a", "b"), ("both", "b"), ("model_a", "tie")]) == {"accuracy": 0.5, "n": 3}
    assert evaluation.accuracy([]) == {"accuracy": None, "n": 0}
    scores = evaluation.match_scores([0, 0, 2, 1, -1], [0, 1, 1, 2, 0])
    assert scores[:4].tolist() == [1.0, 0.0, 0.5, 0.5] and np.isnan(scores[4])


def test_confidence_buckets_accept_strings():
    assert [evaluation.confidence_bucket(x) for x in ("2.5", 3, "3.0", 3.5, None, "x")] == ["<3", "=3", "=3", ">3", None, None]
    assert evaluation.confidence_buckets([1.0, 3.0, 4.5, np.nan]).tolist() == ["<3", "=3", ">3", ""]


def test_breakdowns_by_modality_reference_vocals_and_confidence():
    rows = [
        {"pred_alignment": "model_a", "label_alignment": "model_a", "confidence_alignment": "4.0", "lyrics": "", "ref": ""},
        {"pred_alignment": "model_a", "label_alignment": "model_b", "confidence_alignment": "2.0", "lyrics": "la", "ref": ""},
        {"pred_alignment": "model_b", "label_alignment": "model_b", "confidence_alignment": "3.0", "lyrics": "", "ref": "r.wav"},
        {"pred_alignment": "both", "label_alignment": "model_b", "confidence_alignment": "5.0", "modality": "text+lyrics+ref"},
    ]
    out = evaluate(rows, view=VOTE, dimensions=("alignment",))["alignment"]
    assert out["all"] == {"accuracy": 2.5 / 4, "n": 4}
    assert out["by_modality"]["text"] == {"accuracy": 1.0, "n": 1}
    assert out["by_modality"]["text+lyrics"] == {"accuracy": 0.0, "n": 1}
    assert out["no_ref"] == {"accuracy": 0.5, "n": 2}
    assert out["ref"] == {"accuracy": 0.75, "n": 2}
    assert out["instrumental"] == {"accuracy": 1.0, "n": 2}
    assert out["vocal"] == {"accuracy": 0.25, "n": 2}
    assert out["w/o audio"] == 0.5 and out["w/ audio"] == 0.75
    assert out["by_confidence"]["all"] == {"<3": {"accuracy": 0.0, "n": 1}, "=3": {"accuracy": 1.0, "n": 1}, ">3": {"accuracy": 0.75, "n": 2}}
    assert out["by_confidence"]["ref"]["=3"] == {"accuracy": 1.0, "n": 1}


def test_headline_is_the_mean_of_the_two_dimensions():
    rows = [{"pred_alignment": "a", "label_alignment": "a", "pred_musicality": "a", "label_musicality": "b"}]
    assert evaluate(rows, view=VOTE)["headline"] == 0.5


def test_without_a_known_modality_only_the_overall_buckets_remain():
    rows = [{"pred_alignment": "a", "label_alignment": "a", "confidence_alignment": 4}, {"pred_alignment": None, "label_alignment": "b"}]
    out = evaluate(rows, view=VOTE, dimensions=("alignment",))["alignment"]
    assert list(out) == ["all", "coverage", "by_confidence"]
    assert list(out["by_confidence"]) == ["all"]
    assert out["coverage"] == {"answered": 1, "labelled": 2, "share": 0.5}


# Three pairs: p1 A-majority (2 of 3, confidences 4 and 5), p2 a tie, p3 a "both" majority.
VOTES = [
    {"pair_id": "p1", "pred_musicality": "model_a", "label_musicality": "a", "confidence_musicality": 4, "modality": "text"},
    {"pair_id": "p1", "pred_musicality": "model_a", "label_musicality": "a", "confidence_musicality": "5.0", "modality": "text"},
    {"pair_id": "p1", "pred_musicality": "model_a", "label_musicality": "b", "confidence_musicality": 1, "modality": "text"},
    {"pair_id": "p2", "pred_musicality": "model_b", "label_musicality": "a", "confidence_musicality": 3, "modality": "text+ref"},
    {"pair_id": "p2", "pred_musicality": "model_b", "label_musicality": "b", "confidence_musicality": 3, "modality": "text+ref"},
    {"pair_id": "p3", "pred_musicality": "model_b", "label_musicality": "neither", "confidence_musicality": 2, "modality": "text+lyrics"},
    {"pair_id": "p3", "pred_musicality": "model_b", "label_musicality": "tie", "confidence_musicality": 5, "modality": "text+lyrics"},
]


def test_the_majority_view_scores_pairs_and_counts_ties():
    out = evaluate(VOTES, view=MAJORITY, dimensions=("musicality",))["musicality"]
    # p1: A right (1); p3: "both" against B (0.5); p2 has no majority; the "tie" vote on p3 does not count.
    assert out["all"] == {"accuracy": 0.75, "n": 2}
    assert out["coverage"] == {"answered": 2, "labelled": 2, "share": 1.0, "ties": 1}
    assert out["by_modality"]["text"] == {"accuracy": 1.0, "n": 1} and out["by_modality"]["text+lyrics"] == {"accuracy": 0.5, "n": 1}
    # p1's confidence is its majority's mean, 4.5; p3's is 2.
    assert out["by_confidence"]["all"] == {"<3": {"accuracy": 0.5, "n": 1}, "=3": {"accuracy": None, "n": 0}, ">3": {"accuracy": 1.0, "n": 1}}
    # The same votes one by one: six countable votes.
    assert evaluate(VOTES, view=VOTE, dimensions=("musicality",))["musicality"]["all"]["n"] == 6


def test_pair_majority_needs_more_than_half_of_the_labelled_votes():
    table = evaluation.pair_majority([7, 7, 7, 3, 3, 9], [0, 0, 1, 1, evaluation.NO_LABEL, 2], [4, 5, 1, 2, 5, np.nan])
    assert table["pair_id"].tolist() == [3, 7, 9]
    assert table["n"].tolist() == [1, 3, 1]
    assert table["majority"].tolist() == [1, 0, 2]
    assert table["confidence"][:2].tolist() == [2.0, 4.5] and np.isnan(table["confidence"][2])
    assert table["share"].tolist() == pytest.approx([1.0, 2 / 3, 1.0])


def test_bad_input_is_refused_with_a_clear_message():
    with pytest.raises(ValueError, match="view must be one of vote, majority"):
        evaluate(VOTES, view="pairs")
    with pytest.raises(TypeError):
        evaluate(VOTES)  # the view is always chosen explicitly
    with pytest.raises(ValueError, match="rounds must be"):
        evaluate(VOTES, view=VOTE, rounds=-1)
    with pytest.raises(ValueError, match="every row needs one"):
        evaluate([{"pred_alignment": "a", "label_alignment": "a"}], view=MAJORITY)
    disagreeing = [dict(VOTES[0]), {**VOTES[1], "pred_musicality": "model_b"}]
    with pytest.raises(ValueError, match="pair 'p1': its rows disagree on pred_musicality"):
        evaluate(disagreeing, view=MAJORITY, dimensions=("musicality",))


def test_bootstrap_intervals_are_seeded_and_resample_the_units():
    rng = np.random.default_rng(1)
    rows = [
        {"pair_id": i // 3, "pred_alignment": "a" if rng.random() < 0.7 else "b", "label_alignment": "a", "modality": "text"}
        for i in range(300)
    ]
    for i in range(0, 300, 3):  # one judge label per pair
        for j in (1, 2):
            rows[i + j]["pred_alignment"] = rows[i]["pred_alignment"]
    for view in (VOTE, MAJORITY):
        first = evaluate(rows, view=view, dimensions=("alignment",), rounds=400, seed=5)["alignment"]["all"]
        again = evaluate(rows, view=view, dimensions=("alignment",), rounds=400, seed=5)["alignment"]["all"]
        other = evaluate(rows, view=view, dimensions=("alignment",), rounds=400, seed=6)["alignment"]["all"]
        low, high = first["ci"]
        assert first == again and first["ci"] != other["ci"]
        assert low < first["accuracy"] < high and high - low < 0.35
    # Resampling 100 pairs is wider than resampling their 300 votes, which repeat each pair's answer.
    votes_ci = evaluate(rows, view=VOTE, dimensions=("alignment",), rounds=400)["alignment"]["all"]["ci"]
    pairs_ci = evaluate(rows, view=MAJORITY, dimensions=("alignment",), rounds=400)["alignment"]["all"]["ci"]
    assert pairs_ci[1] - pairs_ci[0] > votes_ci[1] - votes_ci[0]
    assert "ci" not in evaluate(rows, view=VOTE, dimensions=("alignment",))["alignment"]["all"]
    assert evaluate([{"pair_id": 1, "pred_alignment": "a", "label_alignment": "a"}] * 2, view=VOTE, rounds=50)["alignment"]["all"]["ci"] == [1.0, 1.0]


def test_breakdown_rounds_for_display_before_averaging():
    figures = evaluation.breakdown([1, 0, 0, 1, 1, 0], ["text", "text", "text", "text+lyrics", "text+lyrics", "text+lyrics"], [np.nan] * 6, digits=4)
    assert figures["by_modality"]["text"]["accuracy"] == 0.3333 and figures["by_modality"]["text+lyrics"]["accuracy"] == 0.6667
    assert figures["w/o audio"] == 0.5 and "ci" not in figures["all"]
    assert evaluation.breakdown([], [], [], rounds=0)["all"] == {"accuracy": None, "n": 0, "ci": [None, None]}


@pytest.mark.engine
def test_the_module_needs_neither_django_nor_pandas():
    code = "import sys; import scoring.evaluation; bad = [m for m in ('django', 'pandas', 'torch') if m in sys.modules]; print(bad); sys.exit(1 if bad else 0)"
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": "/tmp"}, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def test_judges_share_the_vocabulary_and_tie_rule():
    from scoring import judges

    assert judges.prefer is evaluation.prefer
    assert (judges.MODEL_A, judges.MODEL_B, judges.BOTH, judges.DIMENSIONS) == (MODEL_A, MODEL_B, BOTH, evaluation.DIMENSIONS)
