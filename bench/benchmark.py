"""Judge-benchmark scoring: 20 submissions on a 10,000-item benchmark, 1,000 bootstrap rounds, all pairwise tests.

    .venv/bin/python bench/benchmark.py [--items 10000] [--submissions 20] [--rounds 1000] [--cluster-size 4] [--repeat 3]

Measures `scoring.evaluation.compare_submissions` (what the leaderboard and `benchmark_scores`
run per part and dimension): accuracies, cluster-bootstrap intervals (items sharing a condition
resampled together), paired bootstrap tests between every two submissions with Holm's
adjustment, and significance groups. The baseline, timed in the same run, is one submission
scored with no intervals (a plain accuracy). Synthetic data: seeded truth (A, B, and 5% "both"),
submissions right with probabilities from 0.55 to 0.75, 3% of their answers missing.
Prints the best of --repeat runs of each, and the ratio. Also, in the same run, the bootstrap's
draw (rounds x clusters counts) as `cluster_bootstrap` makes it (uint16 indices counted with one
bincount) against numpy's `rng.multinomial`, which gives the same distribution.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scoring.evaluation import NO_LABEL, compare_submissions, item_scores  # noqa: E402
from scoring.stats import mcnemar_tests  # noqa: E402


def synthetic(items: int, submissions: int, cluster_size: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    truth = rng.choice([0, 1, 2], size=items, p=[0.475, 0.475, 0.05])
    clusters = np.arange(items) // cluster_size
    skill = np.linspace(0.55, 0.75, submissions)
    right = rng.random((submissions, items)) < skill[:, None]
    pred = np.where(right, truth[None, :], 1 - np.minimum(truth, 1)[None, :])
    pred[rng.random(pred.shape) < 0.03] = NO_LABEL
    return pred, truth, clusters


def best_of(repeat: int, fn) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--submissions", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--cluster-size", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    pred, truth, clusters = synthetic(args.items, args.submissions, args.cluster_size)

    # The baseline takes a fraction of a millisecond: many tries, so one scheduling hiccup does not set it.
    baseline = best_of(max(args.repeat, 50), lambda: compare_submissions(pred[:1], truth))
    full = best_of(args.repeat, lambda: compare_submissions(pred, truth, clusters=clusters, rounds=args.rounds, seed=0))
    result = compare_submissions(pred, truth, clusters=clusters, rounds=args.rounds, seed=0)
    pairs = args.submissions * (args.submissions - 1) // 2
    print(f"items {args.items}, clusters {len(np.unique(clusters))}, submissions {args.submissions}, rounds {args.rounds}, pairwise tests {pairs}")
    print(f"baseline: one submission, no intervals        {baseline * 1000:10.2f} ms")
    print(f"full: all submissions, intervals, all tests    {full * 1000:10.2f} ms")
    print(f"ratio full / baseline                          {full / baseline:10.1f}x")
    # McNemar's exact test on every pair is part of the full job; its own share, in the same run.
    scores = item_scores(pred, truth)
    mcnemar = best_of(args.repeat, lambda: mcnemar_tests(scores))
    print(f"of which McNemar's exact test, {pairs} pairs       {mcnemar * 1000:10.2f} ms")

    def binomtest_per_pair():
        # The same p-values with one scipy.stats.binomtest call per pair (the comparison for the vectorised cdf).
        from scipy.stats import binomtest

        d = mcnemar_tests(scores)["discordant"]
        return [binomtest(int(min(d[i, j], d[j, i])), int(d[i, j] + d[j, i]), 0.5).pvalue for i in range(len(d)) for j in range(i + 1, len(d)) if d[i, j] + d[j, i]]

    looped = best_of(args.repeat, binomtest_per_pair)
    print(f"McNemar with binomtest per pair: {looped * 1000:.1f} ms ({looped / mcnemar:.0f}x the vectorised cdf)")
    n_clusters = len(np.unique(clusters))
    rng = np.random.default_rng(0)

    def by_indices():
        draws = rng.integers(0, n_clusters, size=(args.rounds, n_clusters), dtype=np.uint16)
        offsets = (np.arange(args.rounds, dtype=np.int64) * n_clusters)[:, None]
        return np.bincount((draws + offsets).ravel(), minlength=args.rounds * n_clusters)

    indices = best_of(args.repeat, by_indices)
    multinomial = best_of(args.repeat, lambda: rng.multinomial(n_clusters, np.full(n_clusters, 1.0 / n_clusters), size=args.rounds))
    print(f"draw: indices + bincount {indices * 1000:.1f} ms, rng.multinomial {multinomial * 1000:.1f} ms ({multinomial / indices:.1f}x)")
    # The full job is submissions x rounds bootstrap accuracies (plus the tests): per accuracy it costs this share of one plain scoring.
    print(f"per bootstrap accuracy / one plain scoring     {full / (baseline * args.submissions * args.rounds):10.3f}")
    print(f"groups (best first): {sorted(set(result['rank']))}; top accuracy {max(a for a in result['accuracy']):.4f}, interval {result['ci'][int(np.argmax(result['accuracy']))]}")


if __name__ == "__main__":
    main()
