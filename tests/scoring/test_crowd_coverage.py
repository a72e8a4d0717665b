"""Per-annotator reliability intervals cover the true reliability (Dawid–Skene, nominal 95 %).

Simulated crowds with a known reliability per annotator: each item (a pair) gets four votes from
annotators drawn at random; an honest annotator answers right with their own probability, a
spammer flips a coin. The true Dawid–Skene reliability is the mean of P(right | truth A) and
P(right | truth B). Three crowds: the honest-and-spammer crowd of the project's tests with no
spammers and with 40 % spammers, and one whose errors depend on the true answer (an annotator
right 75-98 % of the time when A won but 55-80 % when B won). The interval is the one
`common.crowd.aggregate` reports (items resampled, model refitted each round).
"""

from __future__ import annotations

import numpy as np
import pytest

from common.crowd import _codes, _frame, _percentiles, aggregate, ds_refit

SEEDS = 12
ROUNDS = 200


def crowd(seed: int, *, items: int = 150, honest: int = 10, spam: int = 0, per_item: int = 4, dependent: bool = False):
    """(workers, items, labels, true reliability per worker)."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 2, items)
    if dependent:
        right_a, right_b = np.r_[rng.uniform(0.75, 0.98, honest), np.full(spam, 0.5)], np.r_[rng.uniform(0.55, 0.8, honest), np.full(spam, 0.5)]
    else:
        right_a = right_b = np.r_[rng.uniform(0.7, 0.95, honest), np.full(spam, 0.5)]
    workers, tasks, labels = [], [], []
    for t in range(items):
        for w in rng.choice(honest + spam, per_item, replace=False):
            p = right_a[w] if truth[t] == 1 else right_b[w]
            workers.append(int(w)), tasks.append(t), labels.append(int(truth[t]) if rng.random() < p else 1 - int(truth[t]))
    return np.array(workers), np.array(tasks), np.array(labels), (right_a + right_b) / 2


def _coverage(**kind) -> float:
    hits = total = 0
    for seed in range(SEEDS):
        workers, tasks, labels, reliability = crowd(seed, **kind)
        codes = _codes(_frame(workers, tasks, labels))
        weights = np.random.default_rng(seed).multinomial(codes["items"], np.full(codes["items"], 1.0 / codes["items"]), size=ROUNDS).astype(float)
        low, high = _percentiles(ds_refit(codes, weights), codes)
        for worker in low.index:
            total += 1
            hits += low[worker] <= reliability[worker] <= high[worker]
    return hits / total


@pytest.mark.parametrize(
    "kind",
    [{"spam": 0}, {"honest": 6, "spam": 4}, {"dependent": True}],
    ids=["no-spammers", "40-percent-spammers", "answer-dependent-errors"],
)
def test_dawid_skene_intervals_cover_the_true_reliability(kind):
    assert _coverage(**kind) >= 0.90


@pytest.mark.filterwarnings("ignore::Warning")  # crowd-kit's own pandas deprecations
def test_aggregate_reports_the_refitted_interval_around_crowd_kits_estimate():
    workers, tasks, labels, reliability = crowd(0, honest=6, spam=4)
    result = aggregate(workers, tasks, labels, rounds=ROUNDS, seed=0, methods=("dawid_skene",)).reliability
    codes = _codes(_frame(workers, tasks, labels))
    weights = np.random.default_rng(0).multinomial(codes["items"], np.full(codes["items"], 1.0 / codes["items"]), size=ROUNDS).astype(float)
    low, high = _percentiles(ds_refit(codes, weights), codes)
    assert np.allclose(result["dawid_skene_low"], low.reindex(result.index)) and np.allclose(result["dawid_skene_high"], high.reindex(result.index))
    # The estimate lies inside its interval, and a spammer's interval reaches a coin.
    assert ((result["dawid_skene_low"] <= result["dawid_skene"] + 0.02) & (result["dawid_skene"] - 0.02 <= result["dawid_skene_high"])).all()
    spammers = [w for w in result.index if reliability[w] == 0.5]
    assert (result.loc[spammers, "dawid_skene_low"] <= 0.5).all()
