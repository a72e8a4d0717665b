"""Labels aggregated with a model of each annotator (crowd-kit), beside the plain majority vote.

Input is always long-form votes: one row per (annotator, item) with a binary label
(1 = the item's first clip won, 0 = its second). Three aggregates come out:

- majority: the share of votes; a tie gives no label (NaN).
- Dawid–Skene: a 2x2 confusion matrix per annotator, fitted by EM. An annotator's
  reliability is the mean of its diagonal (the chance of reporting the true label,
  averaged over the two true labels), so 0.5 is a coin, 1 a perfect annotator and
  values below 0.5 an annotator who answers the opposite of the truth.
- MACE: each annotator either knows the answer or answers by a personal strategy;
  its reliability is the posterior probability of knowing (a flipper and a coin
  both come out low: MACE cannot tell them apart, Dawid–Skene can).

Uncertainty of the reliabilities: each annotator's answers are resampled (see `aggregate`), so an
annotator with few votes gets a wide interval.

No Django here: the report, the export, the reward model and the benchmark share it.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

METHODS = ("majority", "dawid_skene", "mace")
CONFIDENCE_LEVELS = (1, 2, 3, 4, 5)


def _crowdkit():
    # Imported on first use: crowd-kit pulls in nltk and friends, which most requests never need.
    from crowdkit.aggregation import MACE, DawidSkene

    return DawidSkene, MACE


def _frame(workers, items, labels) -> pd.DataFrame:
    frame = pd.DataFrame({"worker": np.asarray(workers), "task": np.asarray(items), "label": np.asarray(labels, dtype=np.int64)})
    if len(frame) and not frame["label"].isin((0, 1)).all():
        raise ValueError("labels must be 0 or 1")
    return frame


def majority_labels(frame: pd.DataFrame) -> pd.Series:
    """Per item: 1.0 or 0.0 for a strict majority, NaN on a tie."""
    share = frame.groupby("task", sort=True)["label"].mean()
    return pd.Series(np.where(share > 0.5, 1.0, np.where(share < 0.5, 0.0, np.nan)), index=share.index, name="majority")


def _dawid_skene(frame: pd.DataFrame):
    DawidSkene, _ = _crowdkit()
    model = DawidSkene(n_iter=100, tol=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(frame)
    # errors_: rows (worker, observed label), columns true label; P(observed = true) per true label.
    errors = model.errors_
    reliability = {}
    for worker in frame["worker"].unique():
        block = errors.loc[worker]
        # A label the annotator never gave is reported with probability 0 (not unknown): a voter who always
        # gives the same label is right on one class only, not perfectly reliable.
        diagonal = [(float(block.loc[c, c]) if c in block.index else 0.0) if c in block.columns else np.nan for c in (0, 1)]
        reliability[worker] = float(np.nanmean(diagonal))
    p_first = _p_first(model.probas_)
    # Per vote: the posterior that the item's true label is 0 and 1 (for the intervals).
    q1 = p_first.reindex(frame["task"]).to_numpy(float)
    terms = {"q1": q1}
    return p_first, pd.Series(reliability), terms


def _mace(frame: pd.DataFrame, seed: int, *, restarts: int = 3, iterations: int = 50):
    _, MACE = _crowdkit()
    model = MACE(n_restarts=restarts, n_iter=iterations, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(frame)
    codes, names = pd.factorize(frame["worker"])
    label_codes, label_names = pd.factorize(frame["label"])
    p_first = _p_first(model.probas_)
    # spamming_[:, 1]: posterior probability that the annotator knows the answer (not spamming).
    competence = pd.Series(model.spamming_[:, 1], index=names)
    # Per vote: P(the annotator knew | this vote) = q(l) s1 / (q(l) s1 + s0 theta_l), the quantity
    # MACE's M-step averages into the competence.
    q_label = np.where(frame["label"].to_numpy() == 1, p_first.reindex(frame["task"]).to_numpy(float), 1 - p_first.reindex(frame["task"]).to_numpy(float))
    s1, s0 = model.spamming_[codes, 1], model.spamming_[codes, 0]
    theta = model.thetas_[codes, label_codes]
    knowing = q_label * s1 / np.maximum(q_label * s1 + s0 * theta, 1e-12)
    return p_first, competence, {"knowing": knowing}


def _p_first(probas: pd.DataFrame) -> pd.Series:
    return (probas[1] if 1 in probas.columns else pd.Series(0.0, index=probas.index)).sort_index()


# A posterior this close to 0.5 is a tie the model cannot break (EM lands a hair off 0.5 on symmetric votes).
UNDECIDED = 1e-3


def _label(p: pd.Series) -> pd.Series:
    return pd.Series(np.where(p > 0.5 + UNDECIDED, 1.0, np.where(p < 0.5 - UNDECIDED, 0.0, np.nan)), index=p.index)


@dataclass
class Aggregate:
    """Per item: labels and P(first clip won) by method; per annotator: reliability and its interval."""

    labels: pd.DataFrame  # index item; columns majority, dawid_skene, mace (1.0 / 0.0 / NaN), p_dawid_skene, p_mace, votes
    reliability: pd.DataFrame  # index worker; dawid_skene, dawid_skene_low/high, mace, mace_low/high, votes


def aggregate(workers, items, labels, *, rounds: int = 200, seed: int = 0, methods: tuple[str, ...] = METHODS) -> Aggregate:
    """Fit the aggregates on all votes; `rounds` resamples of each annotator's votes give the reliability intervals.

    The intervals resample the annotator's answers (pairs) with the item posteriors held at the
    full fit, and recompute the model's own estimate of that annotator (Dawid–Skene's confusion
    diagonal, MACE's share of votes it knew): they show how much the estimate rests on few
    answers, not the labels' own uncertainty (a full refit per resample would, at 100x the cost).
    """
    frame = _frame(workers, items, labels)
    if frame.empty:
        empty = pd.DataFrame(columns=[*METHODS, "p_dawid_skene", "p_mace", "votes"])
        return Aggregate(labels=empty, reliability=pd.DataFrame(columns=["votes", "dawid_skene", "mace"]))
    out = pd.DataFrame({"majority": majority_labels(frame), "votes": frame.groupby("task").size()})
    workers_index = pd.Index(frame["worker"].unique())
    reliability = pd.DataFrame({"votes": frame.groupby("worker").size()}).reindex(workers_index)
    rng = np.random.default_rng(seed)
    if "dawid_skene" in methods:
        p_first, rel, terms = _dawid_skene(frame)
        out["p_dawid_skene"], out["dawid_skene"] = p_first, _label(p_first)
        reliability["dawid_skene"] = rel
        if rounds > 0:
            low, high = _resampled(frame, rng, rounds, lambda w, v: _ds_diagonal(terms["q1"][v], frame["label"].to_numpy()[v], w), rel)
            reliability["dawid_skene_low"], reliability["dawid_skene_high"] = low, high
    if "mace" in methods:
        p_first, rel, terms = _mace(frame, seed)
        out["p_mace"], out["mace"] = p_first, _label(p_first)
        reliability["mace"] = rel
        if rounds > 0:
            low, high = _resampled(frame, rng, rounds, lambda w, v: (w * terms["knowing"][v]).sum(axis=1) / w.sum(axis=1), rel)
            reliability["mace_low"], reliability["mace_high"] = low, high
    return Aggregate(labels=out, reliability=reliability)


def _ds_diagonal(q1: np.ndarray, label: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Dawid–Skene's M-step for one annotator under resampling weights w (rounds, votes): mean of P(obs=c | true=c)."""
    q0 = 1 - q1
    with np.errstate(invalid="ignore", divide="ignore"):
        right1 = (w * (q1 * (label == 1))).sum(axis=1) / (w * q1).sum(axis=1)
        right0 = (w * (q0 * (label == 0))).sum(axis=1) / (w * q0).sum(axis=1)
    return np.nanmean(np.stack([right0, right1]), axis=0)


def _resampled(frame: pd.DataFrame, rng, rounds: int, estimate, point: pd.Series) -> tuple[pd.Series, pd.Series]:
    """Per annotator: a 95% interval around the model's own estimate `point`, as wide as the spread of
    `estimate(weights, vote_index)` over multinomial resamples of their votes about its unweighted value.

    Shifted onto `point` because the fitted model's figure (crowd-kit's, after smoothing and its last
    M-step) can sit a little off the same quantity recomputed from the final posteriors.
    """
    low, high = {}, {}
    for worker, index in frame.groupby("worker", sort=False).indices.items():
        n = len(index)
        weights = rng.multinomial(n, np.full(n, 1.0 / n), size=rounds).astype(float)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            values = estimate(weights, index)
            centre = estimate(np.ones((1, n)), index)[0]
            if not (np.isfinite(values).any() and np.isfinite(centre)):
                low[worker] = high[worker] = np.nan
                continue
            spread = np.nanpercentile(values, [2.5, 97.5]) - centre
            low[worker], high[worker] = np.clip(point[worker] + spread, 0.0, 1.0)
    return pd.Series(low), pd.Series(high)


def calibration(workers, items, labels, confidences, aggregate_labels: pd.Series) -> pd.DataFrame:
    """Per annotator and stated confidence level 1-5: votes and how many agree with the aggregate label.

    Half steps go to the level below (1.5 counts as 1), so each level holds what the
    annotator said at least that sure. Items without an aggregate label are left out.
    """
    frame = _frame(workers, items, labels)
    frame["level"] = np.floor(np.asarray(confidences, dtype=float)).clip(1, 5)
    frame["target"] = aggregate_labels.reindex(frame["task"]).to_numpy()
    frame = frame[np.isfinite(frame["target"]) & np.isfinite(frame["level"])]
    frame["agree"] = (frame["label"] == frame["target"]).astype(int)
    grouped = frame.groupby(["worker", "level"])["agree"].agg(["size", "sum"])
    return grouped.rename(columns={"size": "n", "sum": "agree"}).reset_index()
