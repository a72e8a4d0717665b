"""ds_refit sums over (worker, label) cells; it must give what the EM summed vote by vote gives."""

import warnings

import numpy as np

from common import crowd


def _ds_refit_by_vote(codes, weights, iterations=50):
    label, item, worker = codes["label"], codes["item"], codes["worker"]
    rounds, workers, items = len(weights), codes["workers"], codes["items"]
    vote_w = weights[:, item]
    q1 = crowd._start(codes, rounds)
    right = np.full((rounds, workers, 2), np.nan)
    for _ in range(iterations):
        qv1 = q1[:, item]
        for c, qv in ((0, 1.0 - qv1), (1, qv1)):
            mass = np.stack([np.bincount(worker, weights=row, minlength=workers) for row in vote_w * qv])
            hits = np.stack([np.bincount(worker, weights=row, minlength=workers) for row in vote_w * qv * (label == c)])
            with np.errstate(invalid="ignore", divide="ignore"):
                right[:, :, c] = hits / mass
        prior = np.clip((weights * q1).sum(axis=1) / weights.sum(axis=1), crowd.EPS, 1 - crowd.EPS)
        p = np.clip(np.nan_to_num(right, nan=0.5), crowd.EPS, 1 - crowd.EPS)
        pw = p[:, worker, :]
        per1 = np.where(label == 1, np.log(pw[:, :, 1]), np.log(1 - pw[:, :, 1]))
        per0 = np.where(label == 0, np.log(pw[:, :, 0]), np.log(1 - pw[:, :, 0]))
        log1 = np.stack([np.bincount(item, weights=row, minlength=items) for row in per1]) + np.log(prior)[:, None]
        log0 = np.stack([np.bincount(item, weights=row, minlength=items) for row in per0]) + np.log(1 - prior)[:, None]
        q1 = 1.0 / (1.0 + np.exp(np.clip(log0 - log1, -700, 700)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(right, axis=2)


def test_ds_refit_matches_the_vote_by_vote_em():
    rng = np.random.default_rng(3)
    n_items, n_workers = 120, 15
    items = np.repeat(np.arange(n_items), rng.integers(1, 5, n_items))
    workers = rng.integers(0, n_workers, len(items))
    truth = rng.random(n_items) < 0.5
    skill = rng.uniform(0.3, 0.95, n_workers)  # some below 0.5: flippers must come out below 0.5 as well
    labels = np.where(rng.random(len(items)) < skill[workers], truth[items], ~truth[items]).astype(int)
    frame = crowd._frame(workers, items, labels).drop_duplicates(["worker", "task"])
    codes = crowd._codes(frame)
    weights = rng.multinomial(codes["items"], np.full(codes["items"], 1.0 / codes["items"]), size=30).astype(float)
    expected, got = _ds_refit_by_vote(codes, weights), crowd.ds_refit(codes, weights)
    assert np.array_equal(np.isnan(expected), np.isnan(got))
    assert np.nanmax(np.abs(expected - got)) < 1e-10
    assert np.nanmin(got) < 0.5 < np.nanmax(got)
