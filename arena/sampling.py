"""Which two systems meet in a battle: by weight, or where the leaderboard knows least.

- "weighted" (default): the first system by weight, the second by weight among the rest. The
  probability of an unordered pair {i, j} is w_i/W * w_j/(W - w_i) + w_j/W * w_i/(W - w_j).
- "informative": votes go where they move the board most, as the Chatbot Arena paper proposes
  (Chiang et al. 2024, active sampling): pairs whose 95% intervals overlap most. The overlap of
  two intervals is the share of the narrower one the other covers (1 for a system with no
  interval yet); P_info(i, j) is proportional to P_weighted(i, j) * overlap(i, j). A floor keeps
  the weighted draw in the mix: P = floor * P_weighted + (1 - floor) * P_info, so every pair the
  weighted draw could give keeps at least `floor` times its chance.

Each battle records the probability of the pair it got (and the policy), so the board can be
re-fitted without the sampling's bias by weighting each vote with 1 / probability.
"""

from __future__ import annotations

import random

WEIGHTED, INFORMATIVE = "weighted", "informative"
POLICIES = (WEIGHTED, INFORMATIVE)


def pair_key(a, b) -> tuple:
    return (a, b) if a <= b else (b, a)


def weighted_pairs(weights: dict) -> dict[tuple, float]:
    """P of each unordered pair under the weighted draw (systems with weight <= 0 never drawn)."""
    live = {k: float(w) for k, w in weights.items() if w > 0}
    total = sum(live.values())
    out: dict[tuple, float] = {}
    names = sorted(live)
    for x, i in enumerate(names):
        for j in names[x + 1 :]:
            wi, wj = live[i], live[j]
            out[pair_key(i, j)] = wi / total * wj / (total - wi) + wj / total * wi / (total - wj)
    return out


def interval_overlap(a: tuple[float, float] | None, b: tuple[float, float] | None) -> float:
    """Share of the narrower interval that the other covers, in [0, 1]; 1 when either is unknown."""
    if a is None or b is None:
        return 1.0
    low, high = max(a[0], b[0]), min(a[1], b[1])
    narrower = min(a[1] - a[0], b[1] - b[0])
    if narrower <= 0:
        return 1.0 if high >= low else 0.0
    return max(0.0, min(1.0, (high - low) / narrower))


def pair_probabilities(weights: dict, *, policy: str = WEIGHTED, intervals: dict | None = None, floor: float = 0.25) -> dict[tuple, float]:
    """P of each unordered pair of systems (keys of `weights`) under the policy; the values sum to 1."""
    if policy not in POLICIES:
        raise ValueError(f"sampling policy must be one of {', '.join(POLICIES)}, not {policy!r}")
    if not 0.0 <= floor <= 1.0:
        raise ValueError(f"the sampling floor must be between 0 and 1, not {floor}")
    base = weighted_pairs(weights)
    if policy == WEIGHTED or not base:
        return base
    intervals = intervals or {}
    raw = {pair: p * interval_overlap(intervals.get(pair[0]), intervals.get(pair[1])) for pair, p in base.items()}
    total = sum(raw.values())
    if total <= 0:
        return base
    return {pair: floor * base[pair] + (1.0 - floor) * raw[pair] / total for pair in base}


def pair_pick(probabilities: dict[tuple, float], *, rng: random.Random) -> tuple[tuple, float]:
    """One unordered pair drawn with the given probabilities, and its probability (sides are the caller's coin)."""
    pairs = sorted(probabilities)
    chosen = rng.choices(pairs, weights=[probabilities[p] for p in pairs])[0]
    return chosen, probabilities[chosen]
