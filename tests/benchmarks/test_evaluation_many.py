"""The many-submission figures of scoring.evaluation (and the resampling and tests of scoring.stats
behind them) on small cases worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from scoring.evaluation import (
    NO_LABEL,
    calibration,
    chance_accuracy,
    compare_submissions,
    human_ceiling,
    item_scores,
)
from scoring.stats import cluster_bootstrap, holm, significance_groups


def test_item_scores_count_missing_as_wrong_and_both_as_half():
    truth = np.array([0, 1, 2, 0])
    pred = np.array([[0, 0, 0, NO_LABEL]])
    assert item_scores(pred, truth).tolist() == [[1.0, 0.0, 0.5, 0.0]]
    with pytest.raises(ValueError):
        item_scores(pred, np.array([0, 1, NO_LABEL, 0]))


def test_cluster_bootstrap_is_seeded_paired_and_draws_whole_clusters():
    scores = np.array([[1, 1, 0, 0, 1, 0], [1, 1, 0, 0, 1, 0]], dtype=float)
    a = cluster_bootstrap(scores, clusters=[0, 0, 1, 1, 2, 2], rounds=300, seed=4)
    b = cluster_bootstrap(scores, clusters=[0, 0, 1, 1, 2, 2], rounds=300, seed=4)
    assert np.array_equal(a, b)
    assert np.array_equal(a[:, 0], a[:, 1])  # the same resamples for every submission
    # Clusters are {1,1}, {0,0}, {1,0}: any resample's accuracy is a multiple of 1/6 over whole clusters.
    assert set(np.round(a[:, 0] * 6, 9)) <= {0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0}
    assert a.mean() == pytest.approx(0.5, abs=0.05)


def test_cluster_bootstrap_spread_matches_the_binomial():
    rng = np.random.default_rng(0)
    scores = (rng.random((1, 2000)) < 0.7).astype(float)
    boot = cluster_bootstrap(scores, rounds=2000, seed=1)
    p = scores.mean()
    assert boot[:, 0].std() == pytest.approx(np.sqrt(p * (1 - p) / 2000), rel=0.1)


def test_holm_adjustment():
    assert holm([0.01, 0.04, 0.03]).tolist() == pytest.approx([0.03, 0.06, 0.06])


def test_groups_from_tests():
    acc = np.array([0.9, 0.85, 0.6])
    significant = np.array([[False, False, True], [False, False, True], [True, True, False]])
    assert significance_groups(acc, significant).tolist() == [1, 1, 3]


def test_compare_submissions_ranks_and_covers():
    truth = np.zeros(400, dtype=int)
    items = np.arange(400)
    # The first two disagree on 90 items and differ by 10 of them: not told apart. One nested in the
    # other would be (a paired test sees that every difference has one sign).
    pred = np.array([np.where(items < 360, 0, 1), np.where(items >= 50, 0, 1), np.where(items < 200, 0, 1)])
    out = compare_submissions(pred, truth, rounds=500, seed=0)
    assert out["accuracy"] == pytest.approx([0.9, 0.875, 0.5])
    assert out["rank"] == [1, 1, 3]
    nested = compare_submissions(np.array([pred[0], np.where(items < 350, 0, 1)]), truth, rounds=500, seed=0)
    assert nested["rank"] == [1, 2]
    for acc, (low, high) in zip(out["accuracy"], out["ci"]):
        assert low <= acc <= high
    assert out["chance"] == 0.5


def test_human_ceiling_leave_one_out():
    # Item 0: A, A, B -> held-out A meets {A, B} (no majority: skipped), held-out B meets {A, A}: 0.
    # Item 1: B, B, B -> each held-out B meets {B, B}: 1, 1, 1. Item 2: one vote, nothing to compare.
    out = human_ceiling([0, 0, 0, 1, 1, 1, 2], [0, 0, 1, 1, 1, 1, 0])
    assert out == {"accuracy": 0.75, "n": 4}


def test_calibration_brier_and_bins():
    out = calibration([0.9, 0.2, np.nan, 0.6], [0, 1, 0, 1])
    assert out["n"] == 3
    assert out["brier"] == pytest.approx((0.01 + 0.04 + 0.36) / 3)
    assert [b["n"] for b in out["bins"]] == [1, 1, 1]
    assert calibration([np.nan], [0]) is None
    assert chance_accuracy([0, 1, 2]) == 0.5
