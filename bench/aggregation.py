"""Label aggregation on simulated studies with a known truth: majority vote vs Dawid–Skene vs MACE.

    .venv/bin/python bench/aggregation.py [--items 400] [--annotators 30] [--votes-per-item 5] [--seeds 5]

Each simulated study has `items` binary pairs with a true winner and a pool of annotators:
  - honest-but-noisy: right with a personal accuracy drawn from U(0.6, 0.95);
  - adversaries (10% of the pool): flip the truth with probability drawn from U(0.75, 0.95)
    (their true accuracy is 1 minus that);
  - spammers (0 / 20 / 40% of the pool): answer at random (accuracy 0.5).
Every item gets `votes-per-item` votes from distinct annotators drawn uniformly.

Printed per spammer share: label accuracy against the truth (mean over seeds, and the range over
seeds; a tie in the majority vote scores 0.5, as a coin would), the gain of each model over majority
with a 95% interval from resampling items within each seed (items are the clusters: each keeps all
its votes), and the Spearman rank correlation between each model's estimated annotator reliability
and the true accuracy (mean over seeds). The baseline is the majority vote on the same votes.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "platform")]

from common.crowd import aggregate  # noqa: E402

SPAMMER_SHARES = (0.0, 0.2, 0.4)
ADVERSARY_SHARE = 0.1


def simulate(*, items: int, annotators: int, per_item: int, spammers: float, seed: int):
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 2, items)
    n_spam = int(round(spammers * annotators))
    n_adv = int(round(ADVERSARY_SHARE * annotators))
    accuracy = rng.uniform(0.6, 0.95, annotators)
    kind = np.array(["honest"] * annotators, dtype=object)
    order = rng.permutation(annotators)
    spam, adv = order[:n_spam], order[n_spam : n_spam + n_adv]
    accuracy[spam] = 0.5
    kind[spam] = "spammer"
    accuracy[adv] = 1.0 - rng.uniform(0.75, 0.95, len(adv))
    kind[adv] = "adversary"
    workers, tasks, labels = [], [], []
    for item in range(items):
        for w in rng.choice(annotators, per_item, replace=False):
            right = rng.random() < accuracy[w]
            workers.append(int(w))
            tasks.append(item)
            labels.append(int(truth[item] if right else 1 - truth[item]))
    return np.array(workers), np.array(tasks), np.array(labels), truth, accuracy, kind


def correct(predicted: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Per item: 1 right, 0 wrong, 0.5 for no label (a tie)."""
    return np.where(np.isnan(predicted), 0.5, (predicted == truth).astype(float))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=400)
    parser.add_argument("--annotators", type=int, default=30)
    parser.add_argument("--votes-per-item", type=int, default=5)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--resamples", type=int, default=2000)
    args = parser.parse_args()
    print(
        f"{args.items} items x {args.votes_per_item} votes, {args.annotators} annotators "
        f"({ADVERSARY_SHARE:.0%} adversaries), seeds 0..{args.seeds - 1}; baseline: majority vote on the same votes"
    )
    header = f"{'spammers':>8} {'method':<12} {'accuracy':>8} {'seed range':>15} {'gain vs majority [95% CI]':>28} {'rank corr. reliability':>23}"
    print(header)
    print("-" * len(header))
    started = time.perf_counter()
    for share in SPAMMER_SHARES:
        per_method = {"majority": [], "dawid_skene": [], "mace": []}
        rho = {"dawid_skene": [], "mace": []}
        item_scores = {m: [] for m in per_method}
        for seed in range(args.seeds):
            workers, tasks, labels, truth, accuracy, _ = simulate(
                items=args.items, annotators=args.annotators, per_item=args.votes_per_item, spammers=share, seed=seed
            )
            result = aggregate(workers, tasks, labels, rounds=0, seed=seed)
            for method in per_method:
                scores = correct(result.labels[method].reindex(range(args.items)).to_numpy(float), truth)
                item_scores[method].append(scores)
                per_method[method].append(scores.mean())
            for method in rho:
                estimate = result.reliability[method].reindex(range(args.annotators)).to_numpy(float)
                rho[method].append(spearmanr(estimate, accuracy, nan_policy="omit").statistic)
        rng = np.random.default_rng(12345)
        for method, values in per_method.items():
            gain = ""
            if method != "majority":
                # Resample items within each seed (the same items for both methods), average over seeds.
                diffs = np.zeros(args.resamples)
                for s in range(args.seeds):
                    d = item_scores[method][s] - item_scores["majority"][s]
                    idx = rng.integers(0, len(d), (args.resamples, len(d)))
                    diffs += d[idx].mean(axis=1) / args.seeds
                point = np.mean([m - b for m, b in zip(values, per_method["majority"])])
                low, high = np.percentile(diffs, [2.5, 97.5])
                gain = f"{point * 100:+.1f} pt [{low * 100:+.1f}, {high * 100:+.1f}]"
            corr = f"{np.mean(rho[method]):.3f}" if method in rho else "-"
            spread = f"{min(values):.3f}-{max(values):.3f}"
            print(f"{share:>8.0%} {method:<12} {np.mean(values):>8.3f} {spread:>15} {gain:>28} {corr:>23}")
    print(f"({time.perf_counter() - started:.1f} s)")


if __name__ == "__main__":
    main()
