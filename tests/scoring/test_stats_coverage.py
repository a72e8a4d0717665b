"""Coverage of the clustered accuracy intervals: simulated test sets with a known expected accuracy.

Each replicate draws C test conditions; a condition's own accuracy varies around the truth (a
Beta spread: some prompts are easy, some hard), it holds 6-20 scored votes, and the interval is
the one the reward model and the judge reports print (scoring.evaluation.cluster_ci). Nominal 95 %;
the tests ask for at least 90 %, with enough replicates that a 95 % interval rarely misses that.
"""

from __future__ import annotations

import numpy as np
import pytest

from scoring.evaluation import cluster_ci, interval_method
from scoring.stats import SMALL_SAMPLE_CLUSTERS, cluster_bootstrap, cluster_t_interval, percentile_ci

REPLICATES = 400
TRUTH = 0.7


def _test_set(rng, clusters: int, *, truth: float = TRUTH, spread: float = 8.0):
    """(scores, cluster codes): per cluster an accuracy ~ Beta with mean `truth`, then 6-20 coin scores."""
    rates = rng.beta(truth * spread, (1 - truth) * spread, size=clusters)
    sizes = rng.integers(6, 21, size=clusters)
    codes = np.repeat(np.arange(clusters), sizes)
    return (rng.random(codes.size) < rates[codes]).astype(float), codes


def _paired(rng, clusters: int):
    """Two judges on the same votes: a condition-level shared difficulty, the second 5 points worse on average."""
    base = rng.beta(0.72 * 8, 0.28 * 8, size=clusters)
    sizes = rng.integers(6, 21, size=clusters)
    codes = np.repeat(np.arange(clusters), sizes)
    u = rng.random(codes.size)
    a = (u < base[codes]).astype(float)
    b = (u < np.clip(base[codes] - 0.05 + 0.1 * rng.standard_normal(clusters)[codes], 0, 1)).astype(float)
    # E[a - b] = 0.05 minus what the clip at 0 and 1 removes; estimated once by a large draw below.
    return a - b, codes


def _coverage(draw, clusters: int, truth: float, *, seed: int, rounds: int = 400) -> float:
    rng = np.random.default_rng(seed)
    hits = 0
    for k in range(REPLICATES):
        scores, codes = draw(rng, clusters)
        low, high = cluster_ci(scores, codes, rounds=rounds, seed=k)
        hits += low <= truth <= high
    return hits / REPLICATES


def _paired_truth() -> float:
    rng = np.random.default_rng(12345)
    diffs, codes = _paired(rng, 200_000)
    return float(diffs.mean())


@pytest.mark.parametrize("clusters", [6, 7])
def test_few_clusters_use_the_t_interval_and_cover(clusters):
    assert interval_method(clusters) == "t"
    assert _coverage(_test_set, clusters, TRUTH, seed=clusters) >= 0.90
    assert _coverage(_paired, clusters, _paired_truth(), seed=100 + clusters) >= 0.90


@pytest.mark.parametrize("clusters", [15, 25, 40])
def test_moderate_cluster_counts_cover(clusters):
    assert interval_method(clusters) == ("t" if clusters < SMALL_SAMPLE_CLUSTERS else "bootstrap")
    assert _coverage(_test_set, clusters, TRUTH, seed=clusters) >= 0.90
    assert _coverage(_paired, clusters, _paired_truth(), seed=100 + clusters) >= 0.90


def test_the_percentile_bootstrap_alone_is_liberal_at_six_clusters():
    """Why the switch exists: the same simulation, bootstrap only, misses more often than 1 in 10."""
    rng = np.random.default_rng(6)
    hits = 0
    for k in range(REPLICATES):
        scores, codes = _test_set(rng, 6)
        low, high = percentile_ci(cluster_bootstrap(scores, codes, rounds=400, seed=k)[:, 0])
        hits += low <= TRUTH <= high
    assert hits / REPLICATES < 0.90


def test_the_t_interval_is_the_cluster_robust_ratio_interval():
    # Two clusters of sizes 2 and 4: mean 4/6; residuals 1 - 2/3*2 = -1/3 and 3 - 2/3*4 = 1/3.
    scores, codes = np.array([1, 0, 1, 1, 1, 0.0]), np.array([0, 0, 1, 1, 1, 1])
    low, high = cluster_t_interval(scores, codes)
    se = np.sqrt(2 / 1 * (2 / 9)) / 6
    assert np.isclose((low + high) / 2, 4 / 6, atol=1e-4)
    assert np.isclose((high - low) / 2, 12.7062047 * se, atol=1e-3)
    assert cluster_t_interval([1.0, 0.0], [0, 0]) == [None, None]
