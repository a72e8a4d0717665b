"""The analytic reliability intervals: their information matrices against scipy's numerical derivatives
of the marginal log-likelihood, and the intervals against the bootstrap on a sample study."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.differentiate import hessian, jacobian

from common import crowd, crowd_intervals

from .simulated_crowds import crowd as simulated


def _small(seed=0):
    workers, tasks, labels, _ = simulated(seed, items=24, honest=3, spam=1)
    return crowd._codes(crowd._frame(workers, tasks, labels))


def _batched(per_item, codes, size):
    """per_item(parameters) -> (items,) as scipy.differentiate calls it: parameters (size, ...) -> (items, ...)."""

    def f(theta):
        flat = theta.reshape(size, -1)
        return np.stack([per_item(column) for column in flat.T], axis=1).reshape((codes["items"], *theta.shape[1:]))

    return f


def _ds_item_loglik(codes):
    W, worker, item, is1 = codes["workers"], codes["worker"], codes["item"], codes["label"] == 1

    def per_item(theta):
        a, b, pi = theta[:W][worker], theta[W : 2 * W][worker], theta[2 * W]
        log1 = np.bincount(item, weights=np.where(is1, np.log(b), np.log(1 - b)), minlength=codes["items"]) + np.log(pi)
        log0 = np.bincount(item, weights=np.where(is1, np.log(1 - a), np.log(a)), minlength=codes["items"]) + np.log(1 - pi)
        return np.logaddexp(log0, log1)

    return _batched(per_item, codes, 2 * W + 1)


def _mace_item_loglik(codes):
    W, worker, item, label = codes["workers"], codes["worker"], codes["item"], codes["label"]

    def per_item(theta):
        s, t1 = theta[:W][worker], theta[W:][worker]
        theta_x = np.where(label == 1, t1, 1 - t1)
        logs = [np.bincount(item, weights=np.log(s * (label == truth) + (1 - s) * theta_x), minlength=codes["items"]) for truth in (0, 1)]
        return np.logaddexp(*logs) - np.log(2.0)

    return _batched(per_item, codes, 2 * W)


def _check(per_item, point, H, B):
    total = lambda theta: per_item(theta).sum(axis=0)  # noqa: E731
    numeric_H = -hessian(total, point, initial_step=1e-2).ddf
    scores = jacobian(per_item, point, initial_step=1e-2).df  # (items, parameters)
    assert np.allclose(H, numeric_H, rtol=1e-4, atol=1e-4 * np.abs(numeric_H).max())
    assert np.allclose(B, scores.T @ scores, rtol=1e-4, atol=1e-4 * np.abs(B).max())


def test_dawid_skene_information_and_scores_equal_scipys_derivatives():
    codes = _small(0)
    _, errors, prior1 = crowd.ds_state(codes)
    # At the fit and away from it: Louis's identity holds at any parameter, not only at the optimum.
    for a, b, pi in ((errors[:, 0, 0], errors[:, 1, 1], prior1), (np.full(codes["workers"], 0.7), np.linspace(0.6, 0.9, codes["workers"]), 0.4)):
        a, b = np.clip(a, 0.05, 0.95), np.clip(b, 0.05, 0.95)
        H, B = crowd_intervals.ds_matrices(codes, crowd_intervals.ds_posterior(codes, a, b, pi), a, b, pi)
        _check(_ds_item_loglik(codes), np.r_[a, b, pi], H, B)


def test_mace_information_and_scores_equal_scipys_derivatives():
    codes = _small(1)
    _, _, _, (s, theta1) = crowd.mace_fit(codes, strategy=True)
    for knows, guess in ((np.clip(s, 0.05, 0.95), np.clip(theta1, 0.05, 0.95)), (np.linspace(0.2, 0.8, codes["workers"]), np.full(codes["workers"], 0.45))):
        H, B = crowd_intervals.mace_matrices(codes, crowd_intervals.mace_posterior(codes, knows, guess), knows, guess)
        _check(_mace_item_loglik(codes), np.r_[knows, guess], H, B)


def test_the_posteriors_are_the_fits_own():
    codes = _small(2)
    q1, errors, prior1 = crowd.ds_state(codes)
    # The fit's posteriors are one E-step behind its parameters, so the two agree only as far as EM has converged.
    assert np.abs(crowd_intervals.ds_posterior(codes, errors[:, 0, 0], errors[:, 1, 1], prior1) - q1).max() < 1e-3


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_analytic_intervals_against_the_bootstrap_on_a_sample_study():
    """The estimates are the same exactly (the point fits did not change). Dawid–Skene's bounds lie within 0.06
    of the refitted bootstrap's. MACE's bootstrap refitted another model (plain EM, add-0.5 smoothing, 50
    iterations) than the variational point fit, so its intervals missed a spammer's competence of 0 (55 %
    coverage with 40 % spammers, docs/crowd.md): there the new interval must reach 0 where the old did not."""
    workers, tasks, labels, truth = simulated(5, items=200, honest=8, spam=2)
    fast = crowd.aggregate(workers, tasks, labels, rounds=200, seed=0).reliability
    slow = crowd.aggregate(workers, tasks, labels, rounds=200, seed=0, interval="bootstrap").reliability
    for method in ("dawid_skene", "mace"):
        assert np.array_equal(fast[method].to_numpy(), slow[method].to_numpy())
        assert ((fast[f"{method}_low"] <= fast[method]) & (fast[method] <= fast[f"{method}_high"])).all()
        assert (fast[f"{method}_high"] - fast[f"{method}_low"] > 0.02).all()
    for bound in ("low", "high"):
        gap = np.abs(fast[f"dawid_skene_{bound}"] - slow[f"dawid_skene_{bound}"])
        assert gap.max() < 0.06, (bound, gap.max())
    spammers = [w for w in fast.index if truth[w] == 0.5]
    assert (fast.loc[spammers, "mace_low"] == 0.0).all()
    assert (slow.loc[spammers, "mace_low"] > 0.0).any()


def test_an_unknown_interval_method_is_refused():
    with pytest.raises(ValueError, match="interval must be one of analytic, bootstrap"):
        crowd.aggregate([1, 2], [1, 1], [0, 1], interval="sandwich")


def test_squarem_mace_reaches_the_plain_ems_fit():
    workers, tasks, labels, _ = simulated(4, sparse=True, items=400, honest=30)
    codes = crowd._codes(crowd._frame(workers, tasks, labels))
    q_plain, know_plain, loglik_plain = crowd.mace_fit(codes)
    q_fast, know_fast, loglik_fast = crowd.mace_fit(codes, accelerate=True)
    assert np.abs(q_fast - q_plain).max() < 1e-3 and np.abs(know_fast - know_plain).max() < 1e-3
    assert abs(loglik_fast - loglik_plain) < 1e-3 * abs(loglik_plain)
    assert np.array_equal(crowd._label(pd.Series(q_fast)).fillna(-1), crowd._label(pd.Series(q_plain)).fillna(-1))
