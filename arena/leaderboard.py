"""Bradley–Terry ratings with a seeded bootstrap, from aggregated win counts.

The fit never looks at votes one by one: votes are first folded into counts per
(pair of systems, outcome), so a million votes cost the same as a few hundred
once aggregated. The bootstrap resamples those counts with one multinomial draw
per round (the same distribution as resampling votes with replacement) and all
rounds are solved together by a batched Newton method.

Scale: ratings are 400/ln(10) Elo points per natural-log unit of strength, so a
400-point gap means 10:1 odds, as on Chatbot Arena and Music Arena.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

ELO_PER_NAT = 400.0 / math.log(10.0)
BOARDS = ("instrumental", "vocal")
VOTES = ("a", "b", "tie", "both_bad")


@dataclass(frozen=True)
class VoteRow:
    system_a: str
    system_b: str
    vote: str
    is_instrumental: bool = True


@dataclass
class Counts:
    """Outcome counts per unordered pair (i < j): columns i wins, j wins, tie."""

    names: list[str]
    pair_i: np.ndarray
    pair_j: np.ndarray
    outcomes: np.ndarray  # (pairs, 3) int64

    @property
    def total(self) -> int:
        return int(self.outcomes.sum())


VOTE_CODES = {vote: code for code, vote in enumerate(VOTES)}


def counts_from_votes(rows: Iterable[VoteRow], *, both_bad: str = "exclude") -> Counts:
    """Fold votes into per-pair outcome counts. both_bad: "exclude" (default) or "tie"."""
    rows = list(rows)
    names = sorted({r.system_a for r in rows} | {r.system_b for r in rows})
    index = {name: k for k, name in enumerate(names)}
    try:
        codes = np.fromiter((VOTE_CODES[r.vote] for r in rows), dtype=np.int64, count=len(rows))
    except KeyError as exc:
        raise ValueError(f"unknown vote {exc.args[0]!r}; expected one of {', '.join(VOTES)}") from None
    a = np.fromiter((index[r.system_a] for r in rows), dtype=np.int64, count=len(rows))
    b = np.fromiter((index[r.system_b] for r in rows), dtype=np.int64, count=len(rows))
    return counts_from_arrays(names, a, b, codes, both_bad=both_bad)


def counts_from_arrays(names: list[str], a: np.ndarray, b: np.ndarray, codes: np.ndarray, *, both_bad: str = "exclude") -> Counts:
    """Vectorised fold: a, b index `names` (sorted); codes index VOTES (a, b, tie, both_bad)."""
    if both_bad not in ("exclude", "tie"):
        raise ValueError(f"both_bad must be 'exclude' or 'tie', not {both_bad!r}")
    a, b, codes = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64), np.asarray(codes, dtype=np.int64)
    keep = a != b
    if both_bad == "exclude":
        keep &= codes != VOTE_CODES["both_bad"]
    a, b, codes = a[keep], b[keep], np.where(codes[keep] == VOTE_CODES["both_bad"], VOTE_CODES["tie"], codes[keep])
    # Systems that only appear in dropped votes are not part of the fit.
    used = np.unique(np.concatenate([a, b]))
    remap = np.full(len(names), -1, dtype=np.int64)
    remap[used] = np.arange(len(used))
    a, b = remap[a], remap[b]
    low, high = np.minimum(a, b), np.maximum(a, b)
    a_is_low = a == low
    # Column 0: the lower-indexed system won; 1: the higher one won; 2: tie.
    column = np.where(codes == VOTE_CODES["tie"], 2, np.where((codes == VOTE_CODES["a"]) == a_is_low, 0, 1))
    n = len(used)
    pair_codes, inverse = np.unique(low * n + high, return_inverse=True)
    outcomes = np.bincount(inverse * 3 + column, minlength=3 * len(pair_codes)).reshape(-1, 3)
    return Counts(names=[names[k] for k in used], pair_i=pair_codes // n, pair_j=pair_codes % n, outcomes=outcomes.astype(np.int64))


def bt_fit(
    wins: np.ndarray, games: np.ndarray, pair_i: np.ndarray, pair_j: np.ndarray, n: int, *, ridge: float = 1e-4, tol: float = 1e-9, max_iter: int = 200
) -> np.ndarray:
    """Bradley–Terry log-strengths for a batch of count vectors.

    wins, games: (batch, pairs); wins[b, p] is how often pair_i[p] beat pair_j[p]
    (ties counted as half a win each way). Returns (batch, n) natural-log
    strengths summing to zero. The tiny ridge keeps strengths finite for a system
    that never lost (or never won) in a resample; it moves ratings by far less
    than a hundredth of a point when every system has both wins and losses.
    """
    wins = np.atleast_2d(np.asarray(wins, dtype=np.float64))
    games = np.atleast_2d(np.asarray(games, dtype=np.float64))
    batch = wins.shape[0]
    incidence = np.zeros((len(pair_i), n))
    incidence[np.arange(len(pair_i)), pair_i] = 1.0
    incidence[np.arange(len(pair_j)), pair_j] = -1.0
    theta = np.zeros((batch, n))
    eye = np.eye(n) * ridge
    for _ in range(max_iter):
        diff = theta[:, pair_i] - theta[:, pair_j]
        p = 0.5 * (1.0 + np.tanh(0.5 * diff))  # stable logistic
        grad = (wins - games * p) @ incidence - ridge * theta
        weight = games * p * (1.0 - p)
        # Negative Hessian = graph Laplacian of the pair weights + ridge (positive definite).
        lap = np.zeros((batch, n, n))
        lap[:, pair_i, pair_j] = -weight
        lap[:, pair_j, pair_i] = -weight
        idx = np.arange(n)
        lap[:, idx, idx] = -lap.sum(axis=2)
        lap += eye
        step = np.linalg.solve(lap, grad[..., None])[..., 0]
        # Damping: a near-separated resample would otherwise overshoot wildly on the first steps.
        largest = np.abs(step).max(axis=1, keepdims=True)
        step = np.where(largest > 2.0, step * (2.0 / np.maximum(largest, 1e-300)), step)
        theta += step
        if np.abs(step).max() < tol:
            break
    return theta - theta.mean(axis=1, keepdims=True)


def _to_rating(theta: np.ndarray, names: list[str], anchor: str | None, anchor_rating: float) -> np.ndarray:
    if anchor is not None:
        k = names.index(anchor)
        return ELO_PER_NAT * (theta - theta[..., k : k + 1]) + anchor_rating
    return ELO_PER_NAT * (theta - theta.mean(axis=-1, keepdims=True)) + anchor_rating


def board_compute(
    counts: Counts,
    *,
    rounds: int = 1000,
    seed: int = 0,
    anchor: str | None = None,
    anchor_rating: float = 1000.0,
    min_votes: int = 0,
    hidden: Iterable[str] = (),
    ridge: float = 1e-4,
) -> dict:
    """One board: ratings, 95% percentile intervals, ranks from interval overlap, votes per system.

    Systems in `hidden` (private) and under `min_votes` are fitted (their votes
    inform everyone else's ratings) but not listed.
    """
    names, n = counts.names, len(counts.names)
    meta = {"votes": counts.total, "rounds": rounds, "seed": seed, "anchor": anchor, "anchor_rating": anchor_rating, "min_votes": min_votes}
    if n < 2:
        return {**meta, "rows": []}
    if anchor is not None and anchor not in names:
        raise ValueError(f"anchor system {anchor!r} has no votes on this board")
    outcomes = counts.outcomes.astype(np.float64)
    wins = outcomes[:, 0] + 0.5 * outcomes[:, 2]
    games = outcomes.sum(axis=1)
    point = _to_rating(bt_fit(wins[None], games[None], counts.pair_i, counts.pair_j, n, ridge=ridge), names, anchor, anchor_rating)[0]

    if rounds > 0:
        rng = np.random.default_rng(seed)
        flat = counts.outcomes.reshape(-1)
        sample = rng.multinomial(counts.total, flat / flat.sum(), size=rounds).reshape(rounds, -1, 3).astype(np.float64)
        boot = _to_rating(
            bt_fit(sample[..., 0] + 0.5 * sample[..., 2], sample.sum(axis=2), counts.pair_i, counts.pair_j, n, ridge=ridge),
            names,
            anchor,
            anchor_rating,
        )
        lower, upper = np.percentile(boot, [2.5, 97.5], axis=0)
    else:
        lower = upper = point

    per_system = np.zeros(n, dtype=np.int64)
    np.add.at(per_system, counts.pair_i, counts.outcomes.sum(axis=1))
    np.add.at(per_system, counts.pair_j, counts.outcomes.sum(axis=1))

    hidden = set(hidden)
    shown = [k for k in range(n) if names[k] not in hidden and per_system[k] >= min_votes]
    rows = []
    for k in shown:
        rank = 1 + sum(1 for m in shown if m != k and lower[m] > upper[k])
        rows.append(
            {
                "system": names[k],
                "rating": round(float(point[k]), 2),
                "lower": round(float(lower[k]), 2),
                "upper": round(float(upper[k]), 2),
                "rank": rank,
                "votes": int(per_system[k]),
            }
        )
    rows.sort(key=lambda r: (r["rank"], -r["rating"], r["system"]))
    return {**meta, "rows": rows}


def boards_compute(
    rows: Iterable[VoteRow],
    *,
    rounds: int = 1000,
    seed: int = 0,
    both_bad: str = "exclude",
    anchor: str | None = None,
    anchor_rating: float = 1000.0,
    min_votes: int = 0,
    hidden: Iterable[str] = (),
) -> dict:
    """The instrumental and vocal boards, split on each battle's routed flag."""
    rows = list(rows)
    hidden = set(hidden)
    result = {"both_bad": both_bad, "boards": {}}
    for board in BOARDS:
        want_instrumental = board == "instrumental"
        counts = counts_from_votes((r for r in rows if r.is_instrumental == want_instrumental), both_bad=both_bad)
        board_anchor = anchor if anchor in counts.names else None
        result["boards"][board] = board_compute(
            counts, rounds=rounds, seed=seed, anchor=board_anchor, anchor_rating=anchor_rating, min_votes=min_votes, hidden=hidden
        )
    return result
