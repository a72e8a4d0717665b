"""Leaderboard benchmark: 1,000,000 votes over 50 systems, 1000 bootstrap rounds.

Ours (arena.leaderboard): fold the votes into per-pair outcome counts once, draw
every bootstrap round as one multinomial over those counts, and solve all
rounds together with a batched Newton method.

Baseline, measured in the same run: the common method (Music Arena's
`lb/scoring.py` shape) — a logistic regression on a per-vote design matrix
(+1 for system A, -1 for system B, ties as two half-weight rows), refitted on a
row-level resample in every bootstrap round. It is fitted with scipy's L-BFGS
on a sparse matrix, with the same tiny L2 penalty as ours. 1000 rounds of it do
not fit in a reasonable time on a small machine, so a few rounds are timed and
the total is extrapolated; the output says so.

    .venv/bin/python bench/leaderboard.py [--votes N] [--systems K] [--rounds R] [--baseline-rounds B]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
from scipy import sparse
from scipy.optimize import minimize

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from arena.leaderboard import ELO_PER_NAT, VOTES, board_compute, counts_from_arrays  # noqa: E402

RIDGE = 1e-4


def simulate(n_votes: int, n_systems: int, seed: int):
    rng = np.random.default_rng(seed)
    strength = rng.normal(0.0, 0.6, n_systems)
    a = rng.integers(0, n_systems, n_votes)
    b = (a + rng.integers(1, n_systems, n_votes)) % n_systems  # never equal to a
    p_a = 1.0 / (1.0 + np.exp(-(strength[a] - strength[b])))
    u = rng.random(n_votes)
    codes = np.where(u < 0.05, 3, np.where(u < 0.15, 2, np.where(rng.random(n_votes) < p_a, 0, 1)))
    return [f"system-{k:02d}" for k in range(n_systems)], a, b, codes


def baseline_design(a, b, codes, n_systems):
    """One row per vote (two half-weight rows per tie); both_bad dropped, as in Music Arena."""
    keep = codes != VOTES.index("both_bad")
    a, b, codes = a[keep], b[keep], codes[keep]
    tie = codes == VOTES.index("tie")
    rows_a = np.concatenate([a, a[tie]])
    rows_b = np.concatenate([b, b[tie]])
    y = np.concatenate([(codes == 0).astype(float), np.zeros(tie.sum())])
    y[: len(codes)][tie] = 1.0  # first copy of a tie: A wins with weight 1/2, second copy: B wins with weight 1/2
    weight = np.concatenate([np.where(tie, 0.5, 1.0), np.full(tie.sum(), 0.5)])
    vote_of_row = np.concatenate([np.arange(len(codes)), np.flatnonzero(tie)])
    m = len(rows_a)
    x = sparse.csr_matrix(
        (np.concatenate([np.ones(m), -np.ones(m)]), (np.concatenate([np.arange(m), np.arange(m)]), np.concatenate([rows_a, rows_b]))), shape=(m, n_systems)
    )
    return x, y, weight, vote_of_row, len(codes)


def logistic_fit(x, y, weight, n_systems):
    def loss(theta):
        z = x @ theta
        value = np.sum(weight * (np.logaddexp(0.0, z) - y * z)) + 0.5 * RIDGE * theta @ theta
        grad = x.T @ (weight * (1.0 / (1.0 + np.exp(-z)) - y)) + RIDGE * theta
        return value, grad

    fit = minimize(loss, np.zeros(n_systems), jac=True, method="L-BFGS-B", options={"maxiter": 1000, "gtol": 1e-8, "ftol": 1e-15})
    theta = fit.x - fit.x.mean()
    return ELO_PER_NAT * theta + 1000.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--votes", type=int, default=1_000_000)
    parser.add_argument("--systems", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--baseline-rounds", type=int, default=5, help="bootstrap rounds actually run for the baseline (the rest extrapolated)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    names, a, b, codes = simulate(args.votes, args.systems, args.seed)
    print(f"{args.votes:,} votes over {args.systems} systems; {args.rounds} bootstrap rounds")

    start = time.perf_counter()
    counts = counts_from_arrays(names, a, b, codes)
    t_fold = time.perf_counter() - start
    start = time.perf_counter()
    board = board_compute(counts, rounds=args.rounds, seed=args.seed)
    t_ours = t_fold + time.perf_counter() - start
    ours = {row["system"]: row for row in board["rows"]}
    print(f"ours: fold {t_fold:.2f} s + fit and {args.rounds} rounds {t_ours - t_fold:.2f} s = {t_ours:.2f} s")

    start = time.perf_counter()
    x, y, weight, vote_of_row, n_kept = baseline_design(a, b, codes, args.systems)
    t_design = time.perf_counter() - start
    start = time.perf_counter()
    point = logistic_fit(x, y, weight, args.systems)
    t_point = time.perf_counter() - start
    rng = np.random.default_rng(args.seed)
    start = time.perf_counter()
    for _ in range(args.baseline_rounds):
        # Resample votes with replacement; a vote's rows (two for a tie) keep their weights times its multiplicity.
        multiplicity = np.bincount(rng.integers(0, n_kept, n_kept), minlength=n_kept)
        logistic_fit(x, y, weight * multiplicity[vote_of_row], args.systems)
    t_rounds = time.perf_counter() - start
    per_round = t_rounds / max(args.baseline_rounds, 1)
    t_base = t_design + t_point + per_round * args.rounds
    print(
        f"baseline (per-vote logistic regression, L-BFGS): design {t_design:.2f} s + point fit {t_point:.2f} s + "
        f"{per_round:.2f} s/round x {args.rounds} rounds = {t_base:.1f} s "
        f"(EXTRAPOLATED from {args.baseline_rounds} measured rounds, {t_rounds:.1f} s)"
    )
    diff = max(abs(ours[name]["rating"] - point[k]) for k, name in enumerate(names))
    widths = [row["upper"] - row["lower"] for row in board["rows"]]
    print(f"speed-up: {t_base / t_ours:.0f}x (baseline extrapolated / ours measured)")
    print(f"largest rating difference, ours vs baseline point fit: {diff:.4f} Elo points")
    print(f"ours: 95% interval widths {min(widths):.1f}-{max(widths):.1f} points; ratings {min(point):.0f}-{max(point):.0f}")
    if not math.isfinite(diff) or diff > 0.5:
        sys.exit("ratings disagree by more than 0.5 points")


if __name__ == "__main__":
    main()
