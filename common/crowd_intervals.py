"""Per-annotator reliability intervals from the full fit's information (no refits).

Items are independent given the model's parameters, so the log-likelihood is a sum over items and
two matrices come out of one pass over the votes:

- H, the observed information, by Louis's method: the expected complete-data information given
  the votes, less the information the unknown true labels take away (per item, the variance of the
  complete-data score over the item's two possible truths: q (1 - q) d dᵀ, d the score under
  truth 1 minus the score under truth 0);
- B, the sum over items of the outer product of each item's observed score.

The covariance of the parameters is the sandwich H⁻¹ B H⁻¹: it is what resampling the items and
refitting estimates (the bootstrap `common.crowd.aggregate` used before), to first order, and it
holds where the model is wrong as well (the per-item scores carry what the data does). A
reliability's variance follows by the delta method; its interval is the estimate ± 1.96 standard
errors, clipped to [0, 1].

Parameters on the boundary (an annotator who never gave a label has P = 0 there, one whose answers
on a class all match the truth P ≈ 1) are held fixed: the likelihood has no curvature to read there,
and a resample keeps them where they are too.

Both models are binary: Dawid–Skene with a = P(answer 0 | truth 0), b = P(answer 1 | truth 1) per
annotator and the class prior; MACE with s = P(knows) and theta = P(guess 1) per annotator and a
uniform prior over the truth. All arrays follow `common.crowd._codes`.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse

Z95 = 1.959963984540054
# Closer than this to 0 or 1 a probability is taken as on the boundary and held fixed.
BOUNDARY = 1e-6


COVARIANCE = {"dawid_skene": "sandwich", "mace": "opg"}


def _inverse(matrix: np.ndarray) -> np.ndarray:
    """The inverse of a symmetric information matrix: by Cholesky where it is positive definite (a few ms
    for 600 parameters), else the pseudo-inverse, so that a direction the votes do not pin down (a MACE
    annotator who never guesses says nothing of its strategy) adds no variance rather than an overflow."""
    from scipy.linalg import LinAlgError, cho_factor, cho_solve

    try:
        return cho_solve(cho_factor(matrix, lower=True), np.eye(len(matrix)))
    except LinAlgError:
        return np.linalg.pinv(matrix, rcond=1e-12, hermitian=True)


def _solve_sandwich(H: np.ndarray, B: np.ndarray, free: np.ndarray, kind: str = "sandwich") -> np.ndarray:
    """H⁻¹ B H⁻¹ (kind "sandwich"), B⁻¹ ("opg") or H⁻¹ ("information") on the free parameters, zero on the fixed ones."""
    size = len(H)
    cov = np.zeros((size, size))
    idx = np.flatnonzero(free)
    if len(idx) == 0:
        return cov
    h, b = H[np.ix_(idx, idx)], B[np.ix_(idx, idx)]
    inverse = _inverse(b if kind == "opg" else h)
    cov[np.ix_(idx, idx)] = inverse if kind in ("opg", "information") else inverse @ b @ inverse
    return cov


# Chosen by coverage (docs/crowd.md): on log-odds Dawid–Skene covered 0.955–0.985 on the five simulated crowds,
# above the nominal rate and wider; on the raw scale 0.905–0.97.
SCALE = {"dawid_skene": "raw", "mace": "raw"}


def _interval(estimate: np.ndarray, variance: np.ndarray, scale: str = "raw", votes: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    se = np.sqrt(np.maximum(variance, 0.0))
    if scale == "logit":
        # On the log-odds scale (delta method): the interval bends away from 0 and 1 as a probability's does.
        margin = 0.5 / (votes + 1.0)
        p = np.clip(estimate, margin, 1 - margin)
        centre, half = np.log(p / (1 - p)), Z95 * se / (p * (1 - p))
        return 1 / (1 + np.exp(-(centre - half))), 1 / (1 + np.exp(-(centre + half)))
    return np.clip(estimate - Z95 * se, 0.0, 1.0), np.clip(estimate + Z95 * se, 0.0, 1.0)


def ds_posterior(codes: dict, a: np.ndarray, b: np.ndarray, prior1: float) -> np.ndarray:
    """P(truth 1) per item at these Dawid–Skene parameters (the E-step)."""
    a_, b_ = np.clip(a, BOUNDARY, 1 - BOUNDARY), np.clip(b, BOUNDARY, 1 - BOUNDARY)
    worker, is1 = codes["worker"], codes["label"] == 1
    given1 = np.where(is1, np.log(b_[worker]), np.log(1 - b_[worker]))
    given0 = np.where(is1, np.log(1 - a_[worker]), np.log(a_[worker]))
    pi = float(np.clip(prior1, BOUNDARY, 1 - BOUNDARY))
    gap = np.bincount(codes["item"], weights=given0 - given1, minlength=codes["items"]) + np.log(1 - pi) - np.log(pi)
    return 1.0 / (1.0 + np.exp(np.clip(gap, -700, 700)))


def mace_posterior(codes: dict, s: np.ndarray, theta1: np.ndarray) -> np.ndarray:
    """P(truth 1) per item at these MACE parameters, the truth uniform a priori."""
    s_, t_ = np.clip(s, BOUNDARY, 1 - BOUNDARY), np.clip(theta1, BOUNDARY, 1 - BOUNDARY)
    worker, is1 = codes["worker"], codes["label"] == 1
    sv, theta_x = s_[worker], np.where(is1, t_[worker], 1 - t_[worker])
    hit, miss = np.log(sv + (1 - sv) * theta_x), np.log((1 - sv) * theta_x)
    gap = np.bincount(codes["item"], weights=np.where(is1, miss - hit, hit - miss), minlength=codes["items"])
    return 1.0 / (1.0 + np.exp(np.clip(gap, -700, 700)))


def ds_matrices(codes: dict, q1: np.ndarray, a: np.ndarray, b: np.ndarray, prior1: float):
    """H and B of binary Dawid–Skene at (a, b, prior1) with item posteriors q1; parameters [a_w..., b_w..., prior1]."""
    item, worker, label = codes["item"], codes["worker"], codes["label"]
    W = codes["workers"]
    size = 2 * W + 1
    a_, b_ = np.clip(a, BOUNDARY, 1 - BOUNDARY), np.clip(b, BOUNDARY, 1 - BOUNDARY)
    pi = float(np.clip(prior1, BOUNDARY, 1 - BOUNDARY))
    qv1 = q1[item]
    is1 = label == 1
    # Complete-data score of one vote: on b_w under truth 1, on a_w under truth 0.
    score_b = np.where(is1, 1.0 / b_[worker], -1.0 / (1.0 - b_[worker]))
    score_a = np.where(is1, -1.0 / (1.0 - a_[worker]), 1.0 / a_[worker])
    info_b = np.where(is1, 1.0 / b_[worker] ** 2, 1.0 / (1.0 - b_[worker]) ** 2)
    info_a = np.where(is1, 1.0 / (1.0 - a_[worker]) ** 2, 1.0 / a_[worker] ** 2)
    complete = np.zeros(size)
    complete[:W] = np.bincount(worker, weights=(1.0 - qv1) * info_a, minlength=W)
    complete[W : 2 * W] = np.bincount(worker, weights=qv1 * info_b, minlength=W)
    complete[-1] = float((q1 / pi**2 + (1.0 - q1) / (1.0 - pi) ** 2).sum())
    items = np.arange(codes["items"])
    rows = np.concatenate([item, item, items])
    cols = np.concatenate([worker, W + worker, np.full(codes["items"], 2 * W)])
    # d: score under truth 1 minus score under truth 0; s: the observed score (its expectation over the truth).
    d = sparse.csr_matrix((np.concatenate([-score_a, score_b, np.full(codes["items"], 1.0 / pi + 1.0 / (1.0 - pi))]), (rows, cols)), shape=(codes["items"], size))
    s = sparse.csr_matrix((np.concatenate([(1.0 - qv1) * score_a, qv1 * score_b, q1 / pi - (1.0 - q1) / (1.0 - pi)]), (rows, cols)), shape=(codes["items"], size))
    missing = (d.T @ sparse.diags(q1 * (1.0 - q1)) @ d).toarray()
    H = np.diag(complete) - missing
    B = (s.T @ s).toarray()
    return H, B


def _binomial_floor(codes: dict, weight: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Per worker p~(1 - p~) / (n + 1), p~ = (k + 0.5) / (n + 1): n the votes on items of a class (weighted by
    the posterior of that class), k those that answered it."""
    W, worker = codes["workers"], codes["worker"]
    w = weight[codes["item"]]
    n = np.bincount(worker, weights=w, minlength=W)
    k = np.bincount(worker, weights=w * right, minlength=W)
    p = (k + 0.5) / (n + 1.0)
    return p * (1.0 - p) / (n + 1.0)


def ds_interval(codes: dict, a: np.ndarray, b: np.ndarray, prior1: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(low, high, standard error) of each annotator's Dawid–Skene reliability (a + b) / 2."""
    W = codes["workers"]
    q1 = ds_posterior(codes, a, b, prior1)
    H, B = ds_matrices(codes, q1, a, b, prior1)
    free = np.r_[(a > BOUNDARY) & (a < 1 - BOUNDARY), (b > BOUNDARY) & (b < 1 - BOUNDARY), BOUNDARY < prior1 < 1 - BOUNDARY]
    cov = _solve_sandwich(H, B, free, COVARIANCE["dawid_skene"])
    idx = np.arange(W)
    # Each confusion probability's variance is at least a binomial one on its soft counts, half a vote added each
    # way: on the boundary the information says nothing (an annotator right on all of a few votes would get
    # [1, 1]), and with a handful of votes the curvature is too sure of itself.
    floor = np.r_[_binomial_floor(codes, 1.0 - q1, codes["label"] == 0), _binomial_floor(codes, q1, codes["label"] == 1)]
    # An annotator who gave one label only answers it on every resample too: nothing to floor there.
    both = np.bincount(codes["worker"], weights=codes["label"], minlength=W)
    both = (both > 0) & (both < np.bincount(codes["worker"], minlength=W))
    diag = np.maximum(np.diag(cov)[: 2 * W], np.where(np.r_[both, both], floor, 0.0))
    variance = (diag[idx] + diag[W + idx] + 2 * cov[idx, W + idx]) / 4
    low, high = _interval((a + b) / 2, variance, SCALE["dawid_skene"], np.bincount(codes["worker"], minlength=W))
    return low, high, np.sqrt(np.maximum(variance, 0.0))


def mace_matrices(codes: dict, q1: np.ndarray, s: np.ndarray, theta1: np.ndarray):
    """H and B of binary MACE (ML, uniform truth prior) at (s, theta1) with item posteriors q1; parameters [s_w..., theta_w...]."""
    item, worker, label = codes["item"], codes["worker"], codes["label"]
    W = codes["workers"]
    s_, t_ = np.clip(s, BOUNDARY, 1 - BOUNDARY), np.clip(theta1, BOUNDARY, 1 - BOUNDARY)
    sv, tv = s_[worker], t_[worker]
    is1 = label == 1
    theta_x = np.where(is1, tv, 1.0 - tv)  # P(guess = this vote's label)
    e = np.where(is1, 1.0, -1.0)  # d theta_x / d theta
    qv1 = q1[item]
    scores, infos = {}, {}
    for truth in (0, 1):
        hit = (label == truth).astype(float)
        p = sv * hit + (1.0 - sv) * theta_x  # P(vote | truth)
        scores[truth] = (hit - theta_x) / p, (1.0 - sv) * e / p
        # Minus the second derivatives of log P(vote | truth): (s, s), (theta, theta), (s, theta).
        infos[truth] = (hit - theta_x) ** 2 / p**2, (1.0 - sv) ** 2 / p**2, e * hit / p**2
    weight = {0: 1.0 - qv1, 1: qv1}
    blocks = [np.bincount(worker, weights=sum(weight[t] * infos[t][k] for t in (0, 1)), minlength=W) for k in range(3)]
    idx = np.arange(W)
    H = np.zeros((2 * W, 2 * W))
    H[idx, idx], H[W + idx, W + idx], H[idx, W + idx] = blocks
    H[W + idx, idx] = blocks[2]
    rows = np.concatenate([item, item])
    cols = np.concatenate([worker, W + worker])
    d = sparse.csr_matrix((np.concatenate([scores[1][0] - scores[0][0], scores[1][1] - scores[0][1]]), (rows, cols)), shape=(codes["items"], 2 * W))
    obs = sparse.csr_matrix(
        (np.concatenate([qv1 * scores[1][0] + (1 - qv1) * scores[0][0], qv1 * scores[1][1] + (1 - qv1) * scores[0][1]]), (rows, cols)), shape=(codes["items"], 2 * W)
    )
    H -= (d.T @ sparse.diags(q1 * (1.0 - q1)) @ d).toarray()
    return H, (obs.T @ obs).toarray()


def mace_interval(codes: dict, s: np.ndarray, theta1: np.ndarray, estimate: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(low, high, standard error) of each annotator's MACE competence, the interval around `estimate`."""
    W = codes["workers"]
    H, B = mace_matrices(codes, mace_posterior(codes, s, theta1), s, theta1)
    free = np.r_[(s > BOUNDARY) & (s < 1 - BOUNDARY), (theta1 > BOUNDARY) & (theta1 < 1 - BOUNDARY)]
    cov = _solve_sandwich(H, B, free, COVARIANCE["mace"])
    variance = np.diag(cov)[:W]
    low, high = _interval(estimate, variance, SCALE["mace"], np.bincount(codes["worker"], minlength=W))
    return low, high, np.sqrt(np.maximum(variance, 0.0))
