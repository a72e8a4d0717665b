"""Study planner: how many conditions, and votes (or ratings) on each, separate two systems with a given power.

The model is the one the results section tests against (scoring/results.py), fitted to a pilot or
set by the researcher:
- pairwise: each condition has its own expected score of a over b (ties as half), logit-normal
  around the study's win rate with a between-condition spread; each vote is a tie with the pilot's
  tie rate and otherwise a win for a with the probability that keeps the condition's expected
  score. The marginal win rate over conditions is the one asked for (the logit's centre is solved
  for it), so "a wins 60 %" means 60 % of votes over conditions like the pilot's.
- rating: each condition has its own true difference of a's and b's means, normal around the
  difference with a between-condition spread; each rating scatters around its condition's mean
  with the pilot's rating spread.
Power is the share of simulated studies whose test, the results section's own (the cluster-robust
test of a win rate of one half over conditions, or the paired t-test over conditions), rejects at
alpha. alpha defaults to 0.05 over the number of comparisons: Holm's first, strictest step, so a
comparison planned here is significant in the report whatever the others do.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
from scipy import optimize
from scipy import stats as sps
from scipy.special import expit, logit

from . import results

POWER = 0.8
ALPHA = 0.05
SIMULATIONS = 2000
MIN_CONDITIONS = 3
MAX_CONDITIONS = 5000
VOTES_PER_CONDITION = (1, 2, 3, 4, 6, 8)
# The pilot's between-condition spread is estimated; with few conditions the estimate is rough.
DEFAULT_CONDITION_SD = 0.5
_NODES, _WEIGHTS = np.polynomial.hermite_e.hermegauss(41)
_WEIGHTS = _WEIGHTS / _WEIGHTS.sum()


@dataclass(frozen=True)
class PairwiseModel:
    win_rate: float  # of a over b, ties as half, over conditions
    condition_sd: float  # spread of the conditions' logits
    tie_rate: float
    source: str = "typed"

    def centre(self) -> float:
        """The logit centre whose logit-normal mean is the win rate."""
        if self.condition_sd <= 0:
            return float(logit(self.win_rate))
        return float(optimize.brentq(lambda m: float(_WEIGHTS @ expit(m + self.condition_sd * _NODES)) - self.win_rate, -30, 30))


@dataclass(frozen=True)
class RatingModel:
    difference: float  # a's mean rating minus b's
    condition_sd: float  # spread of the conditions' true differences
    rating_sd: float  # spread of one rating around its condition's mean
    source: str = "typed"


# --- Fitting a pilot --------------------------------------------------------------------


def fit_pairwise(frame: pd.DataFrame, a: str, b: str, dim: str) -> PairwiseModel | None:
    """The pairwise model from a pilot's votes between a and b (results frame columns); None without votes between them.

    The between-condition spread is the method of moments: the spread of the conditions' mean scores
    less what the votes' own noise explains (a vote with tie rate t and expected score s has
    variance s - t/4 - s^2), carried to the logit scale at the win rate.
    """
    votes = results.oriented(frame, dim, [a, b])
    if not len(votes["score"]):
        return None
    table = pd.DataFrame({"condition": votes["condition"], "score": votes["score"]})
    per = table.groupby("condition")["score"].agg(["sum", "size"])
    rate = float(per["sum"].sum() / per["size"].sum())
    tie = float((votes["score"] == 0.5).mean())
    rate = float(np.clip(rate, 0.01, 0.99))
    spread = DEFAULT_CONDITION_SD
    if len(per) >= 2:
        means = per["sum"] / per["size"]
        weights = per["size"] / per["size"].sum()
        between = float((weights * (means - rate) ** 2).sum()) * len(per) / (len(per) - 1)
        noise = float((weights * (rate - tie / 4 - rate**2) / per["size"]).sum())
        spread = float(np.sqrt(max(between - noise, 0.0)) / (rate * (1 - rate)))
    return PairwiseModel(win_rate=rate, condition_sd=min(spread, 3.0), tie_rate=min(tie, 0.9), source="pilot")


def fit_rating(frame: pd.DataFrame, a: str, b: str, dim: str) -> RatingModel | None:
    """The rating model from a pilot's ratings (system, condition, dimension, value); None without a condition rated for both."""
    part = frame[(frame["dimension"] == dim) & frame["system"].isin([a, b])]
    if part.empty:
        return None
    cells = part.groupby(["condition", "system"])["value"].agg(["mean", "size", "var"])
    means = cells["mean"].unstack("system")
    if a not in means or b not in means:
        return None
    both = means[[a, b]].dropna()
    if both.empty:
        return None
    d = (both[a] - both[b]).to_numpy(float)
    within = cells["var"].dropna()
    sizes = cells.loc[within.index, "size"]
    rating_sd = float(np.sqrt(((sizes - 1) * within).sum() / (sizes - 1).sum())) if len(within) and (sizes - 1).sum() > 0 else 0.0
    counts = cells["size"].unstack("system").loc[both.index]
    noise = float((rating_sd**2 * (1 / counts[a] + 1 / counts[b])).mean())
    spread = float(np.sqrt(max(float(np.var(d, ddof=1)) - noise, 0.0))) if len(d) >= 2 else 0.0
    return RatingModel(difference=float(d.mean()), condition_sd=spread, rating_sd=rating_sd, source="pilot")


# --- Simulated power --------------------------------------------------------------------


def cluster_p_values(wins: np.ndarray, games: np.ndarray) -> np.ndarray:
    """results.cluster_test on each row of (studies, conditions) wins and games, at once."""
    games = np.asarray(games, dtype=float)
    wins = np.asarray(wins, dtype=float)
    used = games > 0
    c = used.sum(axis=1)
    total = games.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = wins.sum(axis=1) / total
        resid = np.where(used, wins - rate[:, None] * games, 0.0)
        var = (c / (c - 1)) * (resid**2).sum(axis=1) / total**2
        t = (rate - 0.5) / np.sqrt(var)
        p = 2 * sps.t.sf(np.abs(t), df=c - 1)
    p = np.where(var <= 0, np.where(rate != 0.5, 0.0, 1.0), p)
    return np.where(c < 2, np.nan, p)


def simulate_pairwise(model: PairwiseModel, conditions: int, votes: int, *, simulations: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(studies, conditions) wins (ties as half) and games of simulated studies."""
    rng = np.random.default_rng(seed)
    s = expit(model.centre() + model.condition_sd * rng.standard_normal((simulations, conditions)))
    t = model.tie_rate
    q = np.clip((s - t / 2) / (1 - t), 0.0, 1.0) if t < 1 else np.full_like(s, 0.5)
    ties = rng.binomial(votes, t, size=s.shape)
    won = rng.binomial(votes - ties, q)
    return won + ties / 2, np.full(s.shape, float(votes))


def power_pairwise(model: PairwiseModel, conditions: int, votes: int, *, alpha: float = ALPHA, simulations: int = SIMULATIONS, seed: int = 0) -> float:
    wins, games = simulate_pairwise(model, conditions, votes, simulations=simulations, seed=seed)
    p = cluster_p_values(wins, games)
    return float(np.mean(np.nan_to_num(p, nan=1.0) < alpha))


def power_rating(model: RatingModel, conditions: int, ratings: int, *, alpha: float = ALPHA, simulations: int = SIMULATIONS, seed: int = 0) -> float:
    """Power of the paired t-test over conditions when each system gets `ratings` ratings per condition."""
    if conditions < 2:
        return 0.0
    rng = np.random.default_rng(seed)
    noise_sd = model.rating_sd * np.sqrt(2.0 / ratings)
    d = model.difference + model.condition_sd * rng.standard_normal((simulations, conditions)) + noise_sd * rng.standard_normal((simulations, conditions))
    sd = d.std(axis=1, ddof=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = d.mean(axis=1) / (sd / np.sqrt(conditions))
    p = np.where(sd > 0, 2 * sps.t.sf(np.abs(t), df=conditions - 1), 1.0)
    return float(np.mean(p < alpha))


def _smallest(power_at, target: float) -> tuple[int | None, float]:
    """The fewest conditions whose simulated power reaches the target: doubling, then bisection."""
    low, high = MIN_CONDITIONS - 1, MIN_CONDITIONS
    value = power_at(high)
    while value < target:
        if high >= MAX_CONDITIONS:
            return None, value
        low, high = high, min(2 * high, MAX_CONDITIONS)
        value = power_at(high)
    while high - low > 1:
        mid = (low + high) // 2
        at = power_at(mid)
        if at >= target:
            high, value = mid, at
        else:
            low = mid
    return high, value


def plan(model: PairwiseModel | RatingModel, *, power: float = POWER, alpha: float = ALPHA, per_condition=VOTES_PER_CONDITION, simulations: int = SIMULATIONS, seed: int = 0) -> dict:
    """For each number of votes (or ratings per system) on a condition, the fewest conditions that reach the power."""
    pairwise = isinstance(model, PairwiseModel)
    if pairwise and not 0 < model.win_rate < 1:
        raise ValueError("the win rate must lie strictly between 0 and 1")
    null = (model.win_rate == 0.5) if pairwise else (model.difference == 0)
    rows = []
    for k in per_condition:
        if null:
            rows.append({"per_condition": k, "conditions": None, "total": None, "power": None})
            continue

        def power_at(c, k=k):
            # One seed for every size: the same draws, so power rises with the size and the bisection is stable.
            if pairwise:
                return power_pairwise(model, c, k, alpha=alpha, simulations=simulations, seed=seed)
            return power_rating(model, c, k, alpha=alpha, simulations=simulations, seed=seed)

        conditions, reached = _smallest(power_at, power)
        rows.append({"per_condition": k, "conditions": conditions, "total": None if conditions is None else conditions * k * (1 if pairwise else 2), "power": round(reached, 3)})
    return {
        "kind": "pairwise" if pairwise else "rating",
        "model": {k: (round(v, 4) if isinstance(v, float) else v) for k, v in asdict(model).items()},
        "power": power,
        "alpha": alpha,
        "simulations": simulations,
        "seed": seed,
        "rows": rows,
        "unit": "votes" if pairwise else "ratings",
        "note": "No difference to find: the two systems are modelled as equal." if null else None,
    }
