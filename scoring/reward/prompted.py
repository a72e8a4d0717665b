"""Prompt conditioning learned from the data: a low-rank bilinear logistic model (plain numpy and scikit-learn).

The margin of clip A over clip B under a condition with context vector c is

    w . dx  +  sum_k (u_k . dx) (v_k . z),   dx = x_A - x_B (standardised clip features),
                                             z = (c - centre) * scale,

where c is the whole context side the network sees (the feature judge's text-tower embedding of
the prompt when it has one, otherwise the hashed words and bigrams of the prompt, lyrics, flags,
the reference clip). Nothing in it is a word list: which prompt directions matter (v_k), and which
clip features they turn (u_k), are fitted on the training votes. A condition's effect is a few
directions, so rank 1 to 3 carries it with d + r (d + e) parameters instead of the d x e of
every feature times every context column.

Fitted by alternating L2 logistic regressions (scikit-learn): with V fixed the inputs are dx and
dx times each z . v_k, which fits w and U; with U fixed they are dx and each u_k . dx times z,
which fits w and V; the factors are rebalanced to equal norms after each pass, so the one C
penalises both. Start: V from the leading right singular vectors of the residual gradient
dx^T diag(y - p) z of the prompt-blind logistic fit (the directions the blind model most gets
wrong). Capacity is chosen per dimension on the validation votes' log-loss (the validation side
is whole held-out conditions, so a prompt direction must carry over to prompts it never saw):
rank 0 (the prompt-blind logistic model: the conditioning switched off) or RANKS x C_GRID.

The result is written as RewardModel weights (the linear term and the network's low-rank clip x
context term), so it registers and scores like the network.
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
from threadpoolctl import threadpool_limits

from ..evaluation import DIMENSIONS
from .model import FeatureTable, RewardModel, TrainConfig, Votes

RANKS = (1, 2, 3)
C_GRID = (0.1, 1.0, 10.0)
ROUNDS = 4
MAX_COMPONENTS = 64  # of the context vector (a text tower's embedding may be wider than the conditions are many)


def _labelled(target: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row index, 0/1 label, weight): a "both" vote (0.5) enters as half an A and half a B."""
    keep = np.flatnonzero(np.isfinite(target))
    t = target[keep]
    half = t == 0.5
    rows = np.concatenate([keep[~half], keep[half], keep[half]])
    ys = np.concatenate([t[~half], np.ones(half.sum()), np.zeros(half.sum())])
    ws = np.concatenate([np.ones((~half).sum()), np.full(half.sum(), 0.5), np.full(half.sum(), 0.5)])
    return rows, ys, ws


def _logistic(x: np.ndarray, y: np.ndarray, w: np.ndarray, c: float, seed: int) -> np.ndarray:
    from sklearn.linear_model import LogisticRegression

    if len(np.unique(y)) < 2:
        return np.zeros(x.shape[1])
    model = LogisticRegression(C=c, fit_intercept=False, max_iter=2000, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(x, y, sample_weight=w)
    return model.coef_[0]


def _log_loss(margin: np.ndarray, target: np.ndarray) -> float:
    keep = np.isfinite(target)
    m, t = margin[keep], target[keep]
    return float(np.mean(np.logaddexp(0.0, -m) * t + np.logaddexp(0.0, m) * (1 - t))) if len(t) else np.inf


def margin_of(dx: np.ndarray, z: np.ndarray, w: np.ndarray, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """(n,) margins of the bilinear model: u (d, r), v (e, r)."""
    return dx @ w + ((dx @ u) * (z @ v)).sum(axis=1)


def fit_factors(dx, z, target, val_dx, val_z, val_target, *, rank: int, c: float, seed: int) -> tuple[float, tuple]:
    """(best validation log-loss, (w, u, v)) of one rank and C, over the alternating passes."""
    rows, ys, ws = _labelled(target)
    x, zz = dx[rows], z[rows]
    d, e = dx.shape[1], z.shape[1]
    w = _logistic(x, ys, ws, c, seed)
    residual = (ys - 1.0 / (1.0 + np.exp(-(x @ w)))) * ws
    _, _, vt = np.linalg.svd((x * residual[:, None]).T @ zz, full_matrices=False)
    v = vt[:rank].T.copy()
    if v.shape[1] < rank:
        v = np.concatenate([v, np.zeros((e, rank - v.shape[1]))], axis=1)
    u = np.zeros((d, rank))
    best = (_log_loss(margin_of(val_dx, val_z, w, u, v), val_target), (w, u, v))
    for _ in range(ROUNDS):
        coef = _logistic(np.concatenate([x, (x[:, :, None] * (zz @ v)[:, None, :]).reshape(len(x), -1)], axis=1), ys, ws, c, seed)
        w, u = coef[:d], coef[d:].reshape(d, rank)
        u, v = _balanced(u, v)
        coef = _logistic(np.concatenate([x, ((x @ u)[:, :, None] * zz[:, None, :]).reshape(len(x), -1)], axis=1), ys, ws, c, seed)
        w, v = coef[:d], coef[d:].reshape(rank, e).T
        u, v = _balanced(u, v)
        loss = _log_loss(margin_of(val_dx, val_z, w, u, v), val_target)
        if loss < best[0] - 1e-9:
            best = (loss, (w, u, v))
    return best


def _balanced(u: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The same products u_k v_k^T with ||u_k|| = ||v_k||, so one L2 penalty weighs both factors alike."""
    nu, nv = np.linalg.norm(u, axis=0), np.linalg.norm(v, axis=0)
    ok = (nu > 1e-12) & (nv > 1e-12)
    factor = np.where(ok, np.sqrt(np.where(ok, nv, 1.0) / np.where(ok, nu, 1.0)), 1.0)
    return u * factor, v / factor


def inputs(table: FeatureTable, mean, std, votes: Votes) -> tuple[np.ndarray, np.ndarray]:
    """(clip-feature differences dx, raw context c) of the votes, as the network's inputs give them."""
    from .baselines import clip_inputs

    a, b, context = clip_inputs(table, mean, std, votes)
    return a - b, context


def context_basis(context: np.ndarray, condition: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(centre, basis (e, k)) from the training conditions, each counted once: z = (c - centre) @ basis.

    The basis spans the centred training conditions (at most MAX_COMPONENTS leading directions),
    scaled so that z has mean row norm 1. Exact for the fit: an L2-penalised v lies in that span
    anyway, and a held-out condition's part outside it could not have been learned from.
    """
    _, first = np.unique(condition, return_index=True)
    rows = context[first]
    centre = rows.mean(axis=0)
    _, s, vt = np.linalg.svd(rows - centre, full_matrices=False)
    keep = max(1, min(MAX_COMPONENTS, int(np.sum(s > 1e-8 * max(s.max(initial=0.0), 1e-12)))))
    basis = vt[:keep].T
    spread = float(np.mean(np.linalg.norm((rows - centre) @ basis, axis=1))) if len(rows) > 1 else 0.0
    return centre, basis / (spread if spread > 1e-12 else 1.0)


def fit_prompt_lowrank(table: FeatureTable, mean, std, train_votes: Votes, val_votes: Votes, *, config: TrainConfig, seed: int) -> tuple[RewardModel, dict]:
    """The bilinear model per dimension as RewardModel weights, and what was chosen (rank and C per dimension, each tried)."""
    dx, context = inputs(table, mean, std, train_votes)
    val_dx, val_context = inputs(table, mean, std, val_votes)
    centre, basis = context_basis(context, train_votes.condition)
    z, val_z = (context - centre) @ basis, (val_context - centre) @ basis
    d, e, k = dx.shape[1], context.shape[1], basis.shape[1]
    clip_size = 2 * d + int(config.similarity) + d * config.crossed
    chosen, weights = {}, {}
    max_rank = max(RANKS)
    # Hundreds of small fits: BLAS threads only contend with each other here.
    with threadpool_limits(limits=1):
        for j, dim in enumerate(DIMENSIONS):
            tried = []
            for c in C_GRID:
                rows, ys, ws = _labelled(train_votes.target[:, j])
                w = _logistic(dx[rows], ys, ws, c, seed)
                tried.append({"rank": 0, "C": c, "val_loss": _log_loss(val_dx @ w, val_votes.target[:, j]), "factors": (w, np.zeros((d, 1)), np.zeros((k, 1)))})
            for rank in RANKS:
                for c in C_GRID:
                    loss, factors = fit_factors(dx, z, train_votes.target[:, j], val_dx, val_z, val_votes.target[:, j], rank=rank, c=c, seed=seed)
                    tried.append({"rank": rank, "C": c, "val_loss": loss, "factors": factors})
            # The lowest validation loss; ties (within rounding) go to the lower rank, then the stronger penalty.
            best = min(tried, key=lambda t: (round(t["val_loss"], 9), t["rank"], t["C"]))
            w, u, v = best["factors"]
            linear = np.zeros(clip_size + e)
            linear[:d] = w
            clip_w, context_w = np.zeros((max_rank, clip_size)), np.zeros((max_rank, e))
            r = u.shape[1]
            clip_w[:r, :d] = u.T
            on_context = basis @ v  # (e, r): v in the context's own columns
            context_w[:r] = on_context.T
            # (u . x)(v . (c - centre) B): the centre's part is a plain linear term on the clip.
            linear[:d] -= u @ (on_context.T @ centre)
            weights.update(
                {
                    f"{dim}.linear.weight": linear[None, :],
                    f"{dim}.clip.weight": clip_w,
                    f"{dim}.context.weight": context_w,
                    f"{dim}.hidden.weight": np.zeros((1, clip_size + e)),
                    f"{dim}.hidden.bias": np.zeros(1),
                    f"{dim}.out.weight": np.zeros((1, 1)),
                    f"{dim}.out.bias": np.zeros(1),
                }
            )
            chosen[dim] = {"rank": best["rank"], "C": best["C"], "val_loss": best["val_loss"], "tried": [{k: t[k] for k in ("rank", "C", "val_loss")} for t in tried]}
    weights = {name: np.asarray(v, dtype=np.float32) for name, v in weights.items()}
    cfg = dataclasses.replace(config, hidden=1, rank=max_rank)
    model = RewardModel(weights=weights, mean=mean, std=std, config=cfg, seed=seed, best_epoch={dim: 0 for dim in DIMENSIONS})
    return model, {"context_columns": e, "components": k, "chosen": chosen}
