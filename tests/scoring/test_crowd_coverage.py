"""Per-annotator reliability intervals cover the true reliability (Dawid–Skene and MACE, nominal 95 %).

Simulated crowds with a known reliability per annotator: each item (a pair) gets four votes from
annotators drawn at random; an honest annotator answers right with their own probability, a
spammer flips a coin. The true Dawid–Skene reliability r is the mean of P(right | truth A) and
P(right | truth B); for binary labels MACE's competence is P(right | A) + P(right | B) - 1 = 2r - 1.
Four crowds: the honest-and-spammer crowd of the project's tests with no spammers and with 40 %
spammers, one whose errors depend on the true answer (right 75-98 % when A won, 55-80 % when B
won), one with per-item difficulty that neither model assumes, and one as sparse as the benchmark's
votes (most items one vote, each annotator a few dozen). The interval is the one
`common.crowd.aggregate` reports (analytic, common.crowd_intervals).
"""

from __future__ import annotations

import numpy as np
import pytest

from common.crowd import _codes, _frame, _percentiles, aggregate, ds_refit

from .simulated_crowds import crowd

SEEDS = 12
ROUNDS = 200
CROWDS = [{"spam": 0}, {"honest": 6, "spam": 4}, {"dependent": True}, {"difficulty": True}, {"sparse": True, "items": 400, "honest": 30}]
CROWD_IDS = ["no-spammers", "40-percent-spammers", "answer-dependent-errors", "item-difficulty", "sparse-votes"]


def _coverage(method: str, **kind) -> float:
    hits = total = 0
    for seed in range(SEEDS):
        workers, tasks, labels, reliability = crowd(seed, **kind)
        result = aggregate(workers, tasks, labels, methods=(method,)).reliability
        truth = reliability if method == "dawid_skene" else np.clip(2 * reliability - 1, 0, 1)
        for worker, row in result.iterrows():
            total += 1
            hits += row[f"{method}_low"] - 1e-12 <= truth[worker] <= row[f"{method}_high"] + 1e-12
    return hits / total


@pytest.mark.parametrize("kind", CROWDS, ids=CROWD_IDS)
@pytest.mark.parametrize("method", ["dawid_skene", "mace"])
def test_intervals_cover_the_true_reliability(method, kind):
    assert _coverage(method, **kind) >= 0.90


@pytest.mark.filterwarnings("ignore::Warning")  # crowd-kit's own pandas deprecations
def test_the_bootstrap_interval_is_the_refitted_one_around_crowd_kits_estimate():
    workers, tasks, labels, reliability = crowd(0, honest=6, spam=4)
    result = aggregate(workers, tasks, labels, rounds=ROUNDS, seed=0, methods=("dawid_skene",), interval="bootstrap").reliability
    codes = _codes(_frame(workers, tasks, labels))
    weights = np.random.default_rng(0).multinomial(codes["items"], np.full(codes["items"], 1.0 / codes["items"]), size=ROUNDS).astype(float)
    low, high = _percentiles(ds_refit(codes, weights), codes)
    assert np.allclose(result["dawid_skene_low"], low.reindex(result.index)) and np.allclose(result["dawid_skene_high"], high.reindex(result.index))
    # The estimate lies inside its interval, and a spammer's interval reaches a coin.
    assert ((result["dawid_skene_low"] <= result["dawid_skene"] + 0.02) & (result["dawid_skene"] - 0.02 <= result["dawid_skene_high"])).all()
    spammers = [w for w in result.index if reliability[w] == 0.5]
    assert (result.loc[spammers, "dawid_skene_low"] <= 0.5).all()
