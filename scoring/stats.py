"""Numeric helpers shared by the agreement statistics and the judge evaluation (numpy only)."""

from __future__ import annotations

import math

import numpy as np


def num(value, digits: int = 4):
    """A JSON-safe number: NaN and inf become None."""
    if value is None:
        return None
    value = float(value)
    if not math.isfinite(value):
        return None
    return round(value, digits)


def bootstrap_sums(stats: np.ndarray, *, rounds: int, seed: int) -> np.ndarray:
    """Column sums of `stats` (units x K) over `rounds` resamples of the units, with replacement.

    Resampling U units with replacement gives each *distinct* row a multinomial
    count, so the draws are made over distinct rows (a pair with 3 votes, 2 for
    clip_a, looks like every other such pair): the same distribution as drawing
    unit indices, at the cost of the few hundred distinct rows instead of the
    tens of thousands of units.
    """
    units, width = stats.shape
    if units == 0 or rounds == 0:
        return np.full((rounds, width), np.nan)
    distinct, counts = np.unique(stats, axis=0, return_counts=True)
    rng = np.random.default_rng(seed)
    weights = rng.multinomial(units, counts / units, size=rounds).astype(float)
    return weights @ distinct


def percentile_ci(samples: np.ndarray) -> list:
    """The 95% percentile interval of bootstrap samples, non-finite samples left out; [None, None] when none remain."""
    samples = np.asarray(samples, dtype=float)
    samples = samples[np.isfinite(samples)]
    if samples.size == 0:
        return [None, None]
    low, high = np.percentile(samples, [2.5, 97.5])
    return [num(low), num(high)]
