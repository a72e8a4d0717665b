"""Simulated pairwise studies with a known truth: Bradley–Terry strengths, condition effects, annotators of known accuracy."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.special import expit

from arena.leaderboard import bt_fit

TIE_SHARE = 0.1


def simulate(
    *, seed: int, strengths=(0.6, 0.2, -0.2, -0.6), conditions: int = 60, pairs_per_condition: int = 3, votes_per_pair: int = 3, spread: float = 0.3, annotators: int = 15
) -> tuple[pd.DataFrame, dict]:
    """One study: each condition shifts every system's strength by N(0, spread); annotator k reports the
    condition's Bradley–Terry draw with probability a_k ~ U(0.7, 0.95) and its opposite otherwise; a tenth of votes are ties.

    Returns the results frame (scoring.results' columns, one dimension `musicality`) and the truth of this
    study's population: each pair's expected score and the Bradley–Terry projection of those expectations.
    """
    rng = np.random.default_rng(seed)
    theta = np.asarray(strengths, dtype=float)
    k = len(theta)
    names = [f"s{i}" for i in range(k)]
    accuracy = rng.uniform(0.7, 0.95, annotators)
    all_pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]
    rows = []
    for c in range(conditions):
        local = theta + rng.normal(0.0, spread, k)
        for p in rng.choice(len(all_pairs), size=pairs_per_condition, replace=False):
            i, j = all_pairs[p]
            if rng.random() < 0.5:
                i, j = j, i  # which system is clip_a varies
            prob = expit(local[i] - local[j])
            who = rng.integers(0, annotators, votes_per_pair)
            draw = rng.random(votes_per_pair) < prob
            honest = rng.random(votes_per_pair) < accuracy[who]
            score = np.where(draw == honest, 1.0, 0.0)
            score = np.where(rng.random(votes_per_pair) < TIE_SHARE, 0.5, score)
            for w, s in zip(who, score):
                rows.append((f"c{c}-{i}-{j}", int(w), names[i], names[j], c, s))
    frame = pd.DataFrame(rows, columns=["pair_id", "annotator", "system_a", "system_b", "condition", "score_musicality"])
    frame["score_alignment"] = np.nan
    return frame, truth(theta, spread=spread, mean_accuracy=float(accuracy.mean()), names=names)


def truth(theta: np.ndarray, *, spread: float, mean_accuracy: float, names: list[str]) -> dict:
    """Expected score of the first system of each pair (Gauss–Hermite over the condition effects) and the BT projection."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(60)
    weights = weights / weights.sum()
    # The difference of two independent N(0, spread) effects is N(0, spread * sqrt 2).
    k = len(theta)
    rate = {}
    i_idx, j_idx, q = [], [], []
    for i in range(k):
        for j in range(i + 1, k):
            p = float((weights * expit(theta[i] - theta[j] + spread * np.sqrt(2) * nodes)).sum())
            decided = mean_accuracy * p + (1 - mean_accuracy) * (1 - p)
            value = TIE_SHARE * 0.5 + (1 - TIE_SHARE) * decided
            rate[(names[i], names[j])] = value
            i_idx.append(i)
            j_idx.append(j)
            q.append(value)
    games = np.ones((1, len(q)))
    projected = bt_fit(np.asarray(q)[None] * games, games, np.array(i_idx), np.array(j_idx), k, ridge=1e-10)[0]
    return {"win_rate": rate, "strength": dict(zip(names, projected))}
