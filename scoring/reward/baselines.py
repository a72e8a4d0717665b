"""What the network must beat, fitted on the same split and rows (plain numpy and scikit-learn).

- majority: the label most training and validation votes carry on the dimension, for every pair
  (with pairs in stored order this is "always A" when A wins more often);
- judge_score: the feature judge's own per-clip score on the dimension (the signal judge scores
  musicality only: its alignment has no answer and no coverage);
- best_feature: the one clip feature, and its direction, that best orders the training and
  validation votes (chosen there; never on the test);
- logistic: L2-regularised logistic regression on the standardised feature differences of the
  two clips (C chosen on the validation votes' log-loss). It never sees the prompt: the
  prompt-blind baseline;
- logistic_interactions: the same plus every feature difference times each of the condition's
  leading principal components (fitted on the training conditions) and, with prompt attributes
  (TrainConfig.crossed), times each attribute, so the preference may depend on the prompt.
- prompt_lowrank: the low-rank clip x prompt logistic model of prompted.py (which prompt
  directions matter is learned from the votes; rank 0, the prompt-blind model, is among the
  choices), fitted in measure.py beside these.

Both logistic models are written as RewardModel weights (the network's linear term, and its
low-rank clip x condition term for the interactions), so either can be registered and scored by
the same judge adapter as the network.
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np

from ..evaluation import DIMENSIONS
from .features import PENALTY_KEYS, SIGNAL_KEYS
from .model import FeatureTable, RewardModel, TrainConfig, Votes, model_inputs

BASELINES = ("majority", "judge_score", "best_feature", "logistic", "logistic_interactions", "prompt_lowrank")
LINEAR = ("logistic", "logistic_interactions")
C_GRID = (0.01, 0.1, 1.0, 10.0)
COMPONENTS = 8
MAX_INTERACTIONS = 4096


def feature_names(kind: str, size: int) -> list[str]:
    signal = list(SIGNAL_KEYS) + [f"penalty_{k}" for k in PENALTY_KEYS] + ["musicality_score"]
    if kind == "signal" and size == len(signal):
        return signal
    return [f"{kind}[{j}]" for j in range(size)]


def vote_accuracy(margin: np.ndarray, target: np.ndarray) -> float | None:
    """Mean match score of "A when margin > 0, else B" (ties to B) against 1 / 0 / 0.5 targets; NaN targets skipped."""
    keep = np.isfinite(target)
    if not keep.any():
        return None
    pred_a = margin[keep] > 0
    t = target[keep]
    return float(np.where(t == 0.5, 0.5, (pred_a == (t == 1.0)).astype(float)).mean())


def clip_inputs(table: FeatureTable, mean, std, votes: Votes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(standardised clip A, clip B, context) as the network sees them (clip side without the reference difference)."""
    a, context = model_inputs(table, mean, std, votes.clip_a, votes.condition)
    b, _ = model_inputs(table, mean, std, votes.clip_b, votes.condition)
    d = table.clips.shape[1]
    return a[:, :d], b[:, :d], context


def crossed_difference(table: FeatureTable, mean, std, votes: Votes, crossed: int) -> np.ndarray:
    """(n, d x crossed): clip A's minus clip B's features times the condition's prompt attributes (none without attributes)."""
    if not crossed:
        return np.zeros((len(votes), 0))
    width = table.clips.shape[1] * crossed
    a, _ = model_inputs(table, mean, std, votes.clip_a, votes.condition, crossed=crossed)
    b, _ = model_inputs(table, mean, std, votes.clip_b, votes.condition, crossed=crossed)
    return a[:, -width:] - b[:, -width:]


def majority(fit: Votes) -> dict:
    """{dim: 1.0 (A) or 0.0 (B)}: the commoner label among fit votes (A on a tie: the stored order's first)."""
    out = {}
    for j, dim in enumerate(DIMENSIONS):
        t = fit.target[:, j]
        out[dim] = 1.0 if np.sum(t == 1.0) >= np.sum(t == 0.0) else 0.0
    return out


def best_feature(table: FeatureTable, mean, std, fit: Votes, names: list[str]) -> dict:
    """{dim: {"feature", "index", "sign", "fit_accuracy"}}: the single feature that orders the fit votes best."""
    a, b, _ = clip_inputs(table, mean, std, fit)
    diff = a - b
    out = {}
    for j, dim in enumerate(DIMENSIONS):
        best = None
        for k in range(diff.shape[1]):
            for sign in (1.0, -1.0):
                acc = vote_accuracy(sign * diff[:, k], fit.target[:, j])
                if acc is not None and (best is None or acc > best["fit_accuracy"] + 1e-12):
                    best = {"feature": names[k], "index": k, "sign": sign, "fit_accuracy": acc}
        out[dim] = best
    return out


def best_feature_margin(table: FeatureTable, mean, std, votes: Votes, picked: dict) -> np.ndarray:
    a, b, _ = clip_inputs(table, mean, std, votes)
    out = np.full((len(votes), len(DIMENSIONS)), np.nan)
    for j, dim in enumerate(DIMENSIONS):
        if picked.get(dim):
            k, sign = picked[dim]["index"], picked[dim]["sign"]
            out[:, j] = sign * (a[:, k] - b[:, k])
    return out


def _components(context: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(centre, projection): the leading principal components of the training conditions' context vectors, unit variance."""
    data = context[rows]
    centre = data.mean(axis=0)
    _, s, vt = np.linalg.svd(data - centre, full_matrices=False)
    keep = int(np.sum(s > 1e-8 * max(s.max(initial=0.0), 1e-12)))
    k = max(1, min(COMPONENTS, keep, len(rows) - 1))
    scale = s[:k] / np.sqrt(max(len(rows) - 1, 1))
    scale = np.where(scale > 1e-12, scale, 1.0)
    return centre, (vt[:k].T / scale)


def _design(a, b, context, centre, projection, interactions: bool, cross: np.ndarray) -> np.ndarray:
    diff = a - b
    if not interactions:
        return diff
    z = (context - centre) @ projection
    return np.concatenate([diff, (diff[:, :, None] * z[:, None, :]).reshape(len(diff), -1), cross], axis=1)


def _labelled(x: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows with a label; a "both" vote (0.5) enters as half an A and half a B."""
    keep = np.isfinite(target)
    x, t = x[keep], target[keep]
    half = t == 0.5
    xs = np.concatenate([x[~half], x[half], x[half]])
    ys = np.concatenate([t[~half], np.ones(half.sum()), np.zeros(half.sum())])
    ws = np.concatenate([np.ones((~half).sum()), np.full(half.sum(), 0.5), np.full(half.sum(), 0.5)])
    return xs, ys, ws


def _log_loss(margin: np.ndarray, target: np.ndarray) -> float:
    keep = np.isfinite(target)
    m, t = margin[keep], target[keep]
    return float(np.mean(np.logaddexp(0.0, -m) * t + np.logaddexp(0.0, m) * (1 - t))) if len(t) else np.inf


def fit_logistic(table: FeatureTable, mean, std, train_votes: Votes, val_votes: Votes, *, interactions: bool, config: TrainConfig, seed: int) -> tuple[RewardModel, dict]:
    """A logistic model per dimension as RewardModel weights, and what was chosen (C per dimension, components)."""
    from sklearn.linear_model import LogisticRegression

    a, b, context = clip_inputs(table, mean, std, train_votes)
    va, vb, vcontext = clip_inputs(table, mean, std, val_votes)
    d = a.shape[1]
    centre = projection = None
    if interactions:
        _, train_first = np.unique(train_votes.condition, return_index=True)
        centre, projection = _components(context, train_first)
        while d * projection.shape[1] > MAX_INTERACTIONS and projection.shape[1] > 1:
            projection = projection[:, :-1]
    crossed = config.crossed if interactions else 0
    cross, vcross = crossed_difference(table, mean, std, train_votes, crossed), crossed_difference(table, mean, std, val_votes, crossed)
    x, vx = _design(a, b, context, centre, projection, interactions, cross), _design(va, vb, vcontext, centre, projection, interactions, vcross)
    clip_size = 2 * d + int(config.similarity) + d * config.crossed
    n_cross = cross.shape[1]
    context_size = context.shape[1]
    weights, about = {}, {"C": {}, "components": 0 if projection is None else int(projection.shape[1]), "inputs": int(x.shape[1])}
    for j, dim in enumerate(DIMENSIONS):
        xs, ys, ws = _labelled(x, train_votes.target[:, j])
        best = None
        for c in C_GRID:
            if len(np.unique(ys)) < 2:
                coef = np.zeros(x.shape[1])
            else:
                model = LogisticRegression(C=c, fit_intercept=False, max_iter=2000, random_state=seed)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    model.fit(xs, ys, sample_weight=ws)
                coef = model.coef_[0]
            loss = _log_loss(vx @ coef, val_votes.target[:, j])
            if best is None or loss < best[0] - 1e-12:
                best = (loss, c, coef)
        _, c, coef = best
        about["C"][dim] = c
        linear = np.zeros(clip_size + context_size)
        rank = 1 if projection is None else projection.shape[1]
        clip_w, context_w = np.zeros((rank, clip_size)), np.zeros((rank, context_size))
        linear[:d] = coef[:d]
        if n_cross:
            # The crossed inputs are the last block of the clip side.
            linear[clip_size - n_cross : clip_size] = coef[len(coef) - n_cross :]
        if projection is not None:
            w = coef[d : len(coef) - n_cross].reshape(d, rank)  # feature x component
            clip_w[:, :d] = w.T
            context_w[:, :] = projection.T
            # z = context @ P - centre @ P: the constant part is a plain linear term on the clip.
            linear[:d] -= w @ (centre @ projection)
        weights.update(
            {
                f"{dim}.linear.weight": linear[None, :],
                f"{dim}.clip.weight": clip_w,
                f"{dim}.context.weight": context_w,
                f"{dim}.hidden.weight": np.zeros((1, clip_size + context_size)),
                f"{dim}.hidden.bias": np.zeros(1),
                f"{dim}.out.weight": np.zeros((1, 1)),
                f"{dim}.out.bias": np.zeros(1),
            }
        )
    weights = {k: np.asarray(v, dtype=np.float32) for k, v in weights.items()}
    cfg = dataclasses.replace(config, hidden=1, rank=1 if projection is None else int(projection.shape[1]))
    return RewardModel(weights=weights, mean=mean, std=std, config=cfg, seed=seed, best_epoch={dim: 0 for dim in DIMENSIONS}), about


def compose(models: dict[str, RewardModel], picks: dict[str, str], base: RewardModel) -> RewardModel:
    """One RewardModel whose each dimension's weights come from the model picked for it."""
    weights = {}
    for dim in DIMENSIONS:
        source = models[picks[dim]]
        weights.update({k: v for k, v in source.weights.items() if k.startswith(f"{dim}.")})
    best = {dim: models[picks[dim]].best_epoch.get(dim, 0) for dim in DIMENSIONS}
    capacity = {dim: models[picks[dim]].capacity[dim] for dim in DIMENSIONS if dim in models[picks[dim]].capacity}
    return RewardModel(weights=weights, mean=base.mean, std=base.std, config=base.config, seed=base.seed, history=base.history, best_epoch=best, capacity=capacity)
