"""What active selection ranks by, in plain numpy (the platform and bench/active.py call these).

- uncertainty: how unsure the reward model is about a pair, from P(A preferred) per dimension:
  1 - |2p - 1| (1 for a coin flip, 0 for certainty), averaged over the dimensions.
- disagreement: how much automatic judges disagree on a pair, from each judge's label
  (1 prefers A, 0 prefers B, 0.5 both/neither, NaN no answer): with q the mean label of the judges
  that answered, 1 - |2q - 1| (1 for an even split, 0 when all agree). Needs two judges on a
  dimension; the dimensions with two are averaged, and a pair with none gets NaN (not ranked).
"""

from __future__ import annotations

import warnings

import numpy as np


def uncertainty(prob_a) -> np.ndarray:
    """(n, dims) probabilities -> (n,) uncertainty in [0, 1]; NaN probabilities are skipped."""
    p = np.asarray(prob_a, dtype=np.float64)
    p = p.reshape(len(p), -1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(1.0 - np.abs(2.0 * p - 1.0), axis=1)


def disagreement(labels) -> np.ndarray:
    """(n, judges, dims) labels -> (n,) disagreement in [0, 1], NaN where no dimension has two answers."""
    values = np.asarray(labels, dtype=np.float64)
    if values.ndim == 2:
        values = values[:, :, None]
    answered = np.isfinite(values).sum(axis=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        share = np.nanmean(values, axis=1)
        per_dim = np.where(answered >= 2, 1.0 - np.abs(2.0 * share - 1.0), np.nan)
        return np.nanmean(per_dim, axis=1)
