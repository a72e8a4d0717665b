"""Simulated crowds with a known reliability per annotator, for the interval tests (tests/scoring/test_crowd_coverage.py)."""

from __future__ import annotations

import numpy as np


def crowd(seed: int, *, items: int = 150, honest: int = 10, spam: int = 0, per_item: int = 4, dependent: bool = False, difficulty: bool = False, sparse: bool = False):
    """(workers, items, labels, true reliability per worker).

    With `difficulty`, a model neither fit assumes: each item has a difficulty d ~ U(0, 1) that
    pulls every annotator towards a coin on it, P(right) = 0.5 + (p - 0.5)(1 - d); the true
    reliability is then the annotator's P(right) averaged over the items' difficulties. With `sparse`,
    the benchmark's shape (bench/report.py): 1, 2, 3 or 5 votes per item (55/20/15/10 %), so most
    items have one vote and each annotator gives a few dozen."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 2, items)
    hardness = rng.uniform(0, 1, items) if difficulty else np.zeros(items)
    if dependent:
        right_a, right_b = np.r_[rng.uniform(0.75, 0.98, honest), np.full(spam, 0.5)], np.r_[rng.uniform(0.55, 0.8, honest), np.full(spam, 0.5)]
    else:
        right_a = right_b = np.r_[rng.uniform(0.7, 0.95, honest), np.full(spam, 0.5)]
    workers, tasks, labels = [], [], []
    for t in range(items):
        size = int(rng.choice([1, 2, 3, 5], p=[0.55, 0.2, 0.15, 0.1])) if sparse else per_item
        for w in rng.choice(honest + spam, size, replace=False):
            p = 0.5 + ((right_a[w] if truth[t] == 1 else right_b[w]) - 0.5) * (1 - hardness[t])
            workers.append(int(w)), tasks.append(t), labels.append(int(truth[t]) if rng.random() < p else 1 - int(truth[t]))
    return np.array(workers), np.array(tasks), np.array(labels), 0.5 + ((right_a + right_b) / 2 - 0.5) * (1 - hardness.mean())
