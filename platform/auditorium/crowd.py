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

Uncertainty of the reliabilities is a bootstrap over items (items are resampled,
each copy keeping all its votes), so an annotator with few votes gets a wide interval.

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
        diagonal = [float(block.loc[c, c]) if c in block.index and c in block.columns else np.nan for c in (0, 1)]
        reliability[worker] = float(np.nanmean(diagonal))
    probas = model.probas_
    p_first = probas[1] if 1 in probas.columns else pd.Series(0.0, index=probas.index)
    return p_first.sort_index(), pd.Series(reliability)


def _mace(frame: pd.DataFrame, seed: int, *, restarts: int = 3, iterations: int = 50):
    _, MACE = _crowdkit()
    model = MACE(n_restarts=restarts, n_iter=iterations, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(frame)
    _, names = pd.factorize(frame["worker"])
    probas = model.probas_
    p_first = probas[1] if 1 in probas.columns else pd.Series(0.0, index=probas.index)
    # spamming_[:, 1]: posterior probability that the annotator knows the answer (not spamming).
    return p_first.sort_index(), pd.Series(model.spamming_[:, 1], index=names)


def _label(p: pd.Series) -> pd.Series:
    return pd.Series(np.where(p > 0.5, 1.0, np.where(p < 0.5, 0.0, np.nan)), index=p.index)


@dataclass
class Aggregate:
    """Per item: labels and P(first clip won) by method; per annotator: reliability and its interval."""

    labels: pd.DataFrame  # index item; columns majority, dawid_skene, mace (1.0 / 0.0 / NaN), p_dawid_skene, p_mace, votes
    reliability: pd.DataFrame  # index worker; dawid_skene, dawid_skene_low/high, mace, mace_low/high, votes


def aggregate(workers, items, labels, *, rounds: int = 30, seed: int = 0, methods: tuple[str, ...] = METHODS) -> Aggregate:
    """Fit the aggregates on all votes, then `rounds` bootstrap refits over items for the reliability intervals."""
    frame = _frame(workers, items, labels)
    if frame.empty:
        empty = pd.DataFrame(columns=[*METHODS, "p_dawid_skene", "p_mace", "votes"])
        return Aggregate(labels=empty, reliability=pd.DataFrame(columns=["votes", "dawid_skene", "mace"]))
    out = pd.DataFrame({"majority": majority_labels(frame), "votes": frame.groupby("task").size()})
    reliability = pd.DataFrame({"votes": frame.groupby("worker").size()})
    fits = {}
    if "dawid_skene" in methods:
        fits["dawid_skene"] = lambda f: _dawid_skene(f)
    if "mace" in methods:
        fits["mace"] = lambda f: _mace(f, seed)
    for name, fit in fits.items():
        p_first, rel = fit(frame)
        out[f"p_{name}"] = p_first
        out[name] = _label(p_first)
        reliability[name] = rel
    if rounds > 0 and fits:
        if "mace" in fits:
            # Each bootstrap refit of MACE gets one restart and fewer iterations: a refit starts
            # near the full fit's optimum, and restarts multiply the cost of every round.
            fits["mace"] = lambda f: _mace(f, seed, restarts=1, iterations=20)
        low_high = _bootstrap(frame, fits, rounds=rounds, seed=seed)
        for name in fits:
            reliability[f"{name}_low"], reliability[f"{name}_high"] = low_high[name]
    return Aggregate(labels=out, reliability=reliability)


def _bootstrap(frame: pd.DataFrame, fits: dict, *, rounds: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    items = frame["task"].unique()
    by_item = {item: rows for item, rows in frame.groupby("task", sort=False)}
    draws = {name: [] for name in fits}
    for r in range(rounds):
        chosen = rng.choice(len(items), size=len(items), replace=True)
        parts = []
        for copy, k in enumerate(chosen):
            part = by_item[items[k]].copy()
            part["task"] = copy  # each copy is its own item
            parts.append(part)
        sample = pd.concat(parts, ignore_index=True)
        for name, fit in fits.items():
            draws[name].append(fit(sample)[1])
    workers = frame["worker"].unique()
    result = {}
    for name, series in draws.items():
        table = pd.DataFrame(series).reindex(columns=workers)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            result[name] = (table.quantile(0.025).reindex(workers), table.quantile(0.975).reindex(workers))
    return result


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
