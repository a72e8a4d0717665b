"""Labels aggregated with a model of each annotator, beside the plain majority vote.

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

Uncertainty of the reliabilities: items are resampled with replacement and the model is refitted on
every resample (see `aggregate`), so the interval carries both how few answers an annotator gave
and how unsure the labels their answers are checked against are.

Point fits (`ds_fit`, `mace_fit`) are crowd-kit's models fitted in numpy: crowd-kit's pandas EM
took seconds for a handful of votes. crowd-kit stays the reference they are tested against
(`ds_crowdkit`, `mace_crowdkit`; tests/scoring/test_crowd.py): Dawid–Skene is the same EM and agrees
to rounding; MACE differs only in its start (see `mace_fit`).

No Django here: the report, the export, the reward model and the benchmark share it.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .crowd_intervals import ds_interval, mace_interval

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


def _dawid_skene(codes: dict):
    """Dawid–Skene point fit: P(first) per item (sorted by item), reliability per annotator, and (a, b, prior) for the interval."""
    q1, errors, prior1 = ds_state(codes)
    params = (errors[:, 0, 0], errors[:, 1, 1], prior1)
    return pd.Series(q1, index=codes["item_names"]).sort_index(), pd.Series((params[0] + params[1]) / 2, index=codes["worker_names"]), params


def ds_crowdkit(frame: pd.DataFrame, *, iterations: int = 100, tol: float = 1e-6):
    """crowd-kit's Dawid–Skene on the same frame, reduced as `ds_fit` reduces: the reference it is tested against."""
    DawidSkene, _ = _crowdkit()
    model = DawidSkene(n_iter=iterations, tol=tol)
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
    return _p_first(model.probas_), pd.Series(reliability)


def _mace(codes: dict, accelerate: bool = True):
    """MACE point fit: P(first) per item (sorted by item), competence per annotator, and (P(knows), P(guess 1)) for the interval."""
    q1, knowing, _, params = mace_fit(codes, strategy=True, accelerate=accelerate)
    return pd.Series(q1, index=codes["item_names"]).sort_index(), pd.Series(knowing, index=codes["worker_names"]), params


def mace_crowdkit(frame: pd.DataFrame, seed: int = 0, *, restarts: int = 1, iterations: int = 50):
    """crowd-kit's MACE (variational, its defaults) on the same frame: the reference `mace_fit` is tested against.

    Its restarts all draw their start from the same `random_state`, so they are one fit repeated.
    """
    _, MACE = _crowdkit()
    model = MACE(n_restarts=restarts, n_iter=iterations, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(frame)
    _, names = pd.factorize(frame["worker"])
    # spamming_[:, 1]: posterior probability that the annotator knows the answer (not spamming).
    return _p_first(model.probas_), pd.Series(model.spamming_[:, 1], index=names)


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


INTERVALS = ("analytic", "bootstrap")


def aggregate(
    workers, items, labels, *, rounds: int = 200, seed: int = 0, methods: tuple[str, ...] = METHODS, interval: str = "analytic", accelerate: bool = True
) -> Aggregate:
    """Fit the aggregates on all votes, with reliability intervals unless `rounds` is 0.

    interval="analytic" (the default): the sandwich covariance of the full fit (common.crowd_intervals),
    estimate ± 1.96 standard errors; no refits, so milliseconds where the bootstrap took seconds, and
    `rounds` and `seed` are not used. tests/scoring/test_crowd_coverage.py measures its coverage.

    accelerate: MACE's point fit takes SQUAREM steps (`mace_fit`): the same fixed point (posteriors within
    1e-4 of the plain EM's on the benchmark's votes, the same labels) in a tenth of the EM steps.

    interval="bootstrap": `rounds` resamples of the items, each refitted. Each round draws the items with replacement (an item drawn k times counts k times, with all its
    votes) and refits the model from the majority start (`ds_refit`, `mace_refit`: the same EM in
    numpy, all rounds at once); an annotator's interval is the 2.5 and 97.5 percentiles of its
    refitted reliability. Holding the item posteriors fixed and resampling only an annotator's own
    answers, as before, covered the true reliability 65-77 % of the time at a nominal 95 %;
    tests/scoring/test_crowd_coverage.py measures this one.
    """
    frame = _frame(workers, items, labels)
    if frame.empty:
        empty = pd.DataFrame(columns=[*METHODS, "p_dawid_skene", "p_mace", "votes"])
        return Aggregate(labels=empty, reliability=pd.DataFrame(columns=["votes", "dawid_skene", "mace"]))
    out = pd.DataFrame({"majority": majority_labels(frame), "votes": frame.groupby("task").size()})
    workers_index = pd.Index(frame["worker"].unique())
    reliability = pd.DataFrame({"votes": frame.groupby("worker").size()}).reindex(workers_index)
    if interval not in INTERVALS:
        raise ValueError(f"interval must be one of {', '.join(INTERVALS)}, not {interval!r}")
    rng = np.random.default_rng(seed)
    codes = _codes(frame)
    bootstrap = rounds > 0 and interval == "bootstrap"
    if bootstrap:
        weights = rng.multinomial(codes["items"], np.full(codes["items"], 1.0 / codes["items"]), size=rounds).astype(float)
    names = codes["worker_names"]
    if "dawid_skene" in methods:
        p_first, rel, params = _dawid_skene(codes)
        out["p_dawid_skene"], out["dawid_skene"] = p_first, _label(p_first)
        reliability["dawid_skene"] = rel
        if bootstrap:
            low, high = _percentiles(_in_chunks(ds_refit, codes, weights), codes)
            reliability["dawid_skene_low"], reliability["dawid_skene_high"] = low, high
        elif rounds > 0:
            low, high, _ = ds_interval(codes, *params)
            reliability["dawid_skene_low"], reliability["dawid_skene_high"] = pd.Series(low, index=names), pd.Series(high, index=names)
    if "mace" in methods:
        p_first, rel, params = _mace(codes, accelerate=accelerate)
        constant = _constant_workers(frame)
        # As in Dawid–Skene: an annotator who always gives the same answer shows no knowledge of the truth.
        rel[rel.index.isin(constant)] = 0.0
        out["p_mace"], out["mace"] = p_first, _label(p_first)
        reliability["mace"] = rel
        if rounds > 0:
            if bootstrap:
                low, high = _percentiles(_in_chunks(mace_refit, codes, weights), codes)
            else:
                low, high, _ = mace_interval(codes, *params, rel.to_numpy())
                low, high = pd.Series(low, index=names), pd.Series(high, index=names)
            low[low.index.isin(constant)], high[high.index.isin(constant)] = 0.0, 0.0
            reliability["mace_low"], reliability["mace_high"] = low, high
    return Aggregate(labels=out, reliability=reliability)


def _constant_workers(frame: pd.DataFrame) -> list:
    """Annotators who gave one label value only."""
    distinct = frame.groupby("worker")["label"].nunique()
    return list(distinct.index[distinct < 2])


def _codes(frame: pd.DataFrame) -> dict:
    """Votes as integer codes plus the sparse vote -> item and vote -> worker indicators the refits sum with."""
    from scipy import sparse

    item, item_names = pd.factorize(frame["task"])
    worker, worker_names = pd.factorize(frame["worker"])
    n = len(frame)
    ones = np.ones(n)
    return {
        "item": item,
        "worker": worker,
        "label": frame["label"].to_numpy(np.int64),
        "items": len(item_names),
        "workers": len(worker_names),
        "worker_names": worker_names,
        "item_names": item_names,
        "to_item": sparse.csr_matrix((ones, (np.arange(n), item)), shape=(n, len(item_names))),
        "to_worker": sparse.csr_matrix((ones, (np.arange(n), worker)), shape=(n, len(worker_names))),
    }


def _start(codes: dict, rounds: int) -> np.ndarray:
    """(rounds, items) P(label 1): the share of 1 votes per item, crowd-kit's majority start."""
    share = (codes["to_item"].T @ codes["label"].astype(float)) / np.asarray(codes["to_item"].sum(axis=0)).reshape(-1)
    return np.tile(share, (rounds, 1))


def _item_sums(codes: dict, per_vote: np.ndarray) -> np.ndarray:
    return np.asarray((codes["to_item"].T @ per_vote.T).T)


def _worker_sums(codes: dict, per_vote: np.ndarray) -> np.ndarray:
    return np.asarray((codes["to_worker"].T @ per_vote.T).T)


EPS = 1e-6


def ds_refit(codes: dict, weights: np.ndarray, *, iterations: int = 50) -> np.ndarray:
    """(rounds, workers) Dawid–Skene reliability refitted under item weights (rounds, items).

    The binary Dawid–Skene EM, vectorised over rounds: M-step P(answer c | truth c) per annotator
    from the weighted posteriors, class prior from the weighted items; E-step the item posteriors.
    A class an annotator never answered has P = 0, as in the full fit; an annotator with no drawn
    item on a class gets NaN there and is averaged over the other.
    """
    from scipy import sparse

    # A vote enters every sum only through its item and its (worker, label) cell, so the sums over votes are
    # sparse (cell x item) products of (rounds x items) arrays: no (rounds x votes) array is ever built.
    rounds, workers, items = len(weights), codes["workers"], codes["items"]
    cell = 2 * codes["worker"] + codes["label"]
    by_cell = sparse.csr_matrix((np.ones(len(cell)), (cell, codes["item"])), shape=(2 * workers, items))
    by_item = by_cell.T.tocsr()
    q1 = _start(codes, rounds)
    right = np.full((rounds, workers, 2), np.nan)
    for _ in range(iterations):
        sums = np.asarray(by_cell @ np.vstack([weights * (1.0 - q1), weights * q1]).T).T.reshape(2, rounds, workers, 2)
        with np.errstate(invalid="ignore", divide="ignore"):
            for c in (0, 1):
                right[:, :, c] = sums[c, :, :, c] / sums[c].sum(axis=2)
        prior = np.clip((weights * q1).sum(axis=1) / weights.sum(axis=1), EPS, 1 - EPS)
        p = np.clip(np.nan_to_num(right, nan=0.5), EPS, 1 - EPS)
        # Per cell: log P(this label | truth 1), log P(this label | truth 0); cells are (worker, label 0 / 1).
        given1 = np.stack([np.log(1 - p[:, :, 1]), np.log(p[:, :, 1])], axis=2).reshape(rounds, 2 * workers)
        given0 = np.stack([np.log(p[:, :, 0]), np.log(1 - p[:, :, 0])], axis=2).reshape(rounds, 2 * workers)
        logs = np.asarray(by_item @ np.vstack([given1, given0]).T).T
        log1 = logs[:rounds] + np.log(prior)[:, None]
        log0 = logs[rounds:] + np.log(1 - prior)[:, None]
        q1 = 1.0 / (1.0 + np.exp(np.clip(log0 - log1, -700, 700)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(right, axis=2)


def mace_refit(codes: dict, weights: np.ndarray, *, iterations: int = 50) -> np.ndarray:
    """(rounds, workers) MACE competence (P(the annotator knows)) refitted under item weights.

    Binary MACE EM vectorised over rounds: each vote is the truth when the annotator knows it
    (probability s), else a draw from the annotator's own strategy theta; started at the majority
    posteriors and s = 0.5, theta = 0.5, with add-0.5 smoothing: a plain-EM variant of the point
    fit's model (`mace_fit` takes the variational M-step).
    """
    label = codes["label"]
    vote_w = weights[:, codes["item"]]
    rounds, workers = len(weights), codes["workers"]
    q1 = _start(codes, rounds)
    s = np.full((rounds, workers), 0.5)
    theta1 = np.full((rounds, workers), 0.5)
    for _ in range(iterations):
        qv1 = q1[:, codes["item"]]
        sv, tv1 = s[:, codes["worker"]], theta1[:, codes["worker"]]
        theta_l = np.where(label == 1, tv1, 1 - tv1)
        q_l = np.where(label == 1, qv1, 1 - qv1)
        knew = q_l * sv / np.maximum(q_l * sv + (1 - sv) * theta_l, 1e-12)
        total = _worker_sums(codes, vote_w)
        s = (_worker_sums(codes, vote_w * knew) + 0.5) / (total + 1.0)
        guessed = vote_w * (1 - knew)
        theta1 = (_worker_sums(codes, guessed * (label == 1)) + 0.5) / (_worker_sums(codes, guessed) + 1.0)
        sv, tv1 = s[:, codes["worker"]], theta1[:, codes["worker"]]
        # P(vote | truth t) = s [l = t] + (1 - s) theta_l.
        theta_l = np.where(label == 1, tv1, 1 - tv1)
        like1 = np.log(sv * (label == 1) + (1 - sv) * theta_l)
        like0 = np.log(sv * (label == 0) + (1 - sv) * theta_l)
        q1 = 1.0 / (1.0 + np.exp(np.clip(_item_sums(codes, like0) - _item_sums(codes, like1), -700, 700)))
    return np.where(total > 0, s, np.nan)


# crowd-kit's floor under a probability in Dawid–Skene (errors, class priors, posteriors).
DS_EPS = 1e-10
DS_ITERATIONS = 100
DS_TOL = 1e-6


def ds_fit(codes: dict, *, iterations: int = DS_ITERATIONS, tol: float = DS_TOL):
    """(P(label 1) per item, reliability per worker) of `ds_state`'s fit."""
    q1, errors, _ = ds_state(codes, iterations=iterations, tol=tol)
    return q1, (errors[:, 0, 0] + errors[:, 1, 1]) / 2


def ds_state(codes: dict, *, iterations: int = DS_ITERATIONS, tol: float = DS_TOL):
    """Binary Dawid–Skene as crowd-kit fits it, in numpy: (P(label 1) per item, reliability per worker).

    Start: the majority posteriors (the share of each label per item); then E-step, class prior,
    M-step, until the evidence lower bound per vote gains less than `tol` or after `iterations`
    rounds. The M-step keeps only the labels an annotator gave (floored at DS_EPS) and normalises
    over them; a label the annotator never gave has probability 0, so an annotator who always gives
    the same label is right on one class only. Reliability is the mean of the confusion diagonal.
    If the votes show a single label, crowd-kit knows one class only: P = that label, reliability 1.
    Returns (P(label 1) per item, errors[worker, observed, true], P(truth 1)).
    """
    item, worker, label = codes["item"], codes["worker"], codes["label"]
    n_items, n_workers = codes["items"], codes["workers"]
    if len(label) == 0 or (label == label[0]).all():
        single = float(label[0]) if len(label) else np.nan
        return np.full(n_items, single), np.broadcast_to(np.eye(2), (n_workers, 2, 2)).copy(), single
    cell = 2 * worker + label  # a vote's (worker, observed label) row
    per_item = np.bincount(item, minlength=n_items)
    gave = np.bincount(cell, minlength=2 * n_workers).reshape(n_workers, 2) > 0

    def m_step(q):
        # errors[w, observed, true]
        counts = np.stack([np.bincount(cell, weights=q[item, c], minlength=2 * n_workers) for c in (0, 1)], axis=1).reshape(n_workers, 2, 2)
        counts = np.where(gave[:, :, None], np.maximum(counts, DS_EPS), 0.0)
        return counts / counts.sum(axis=1, keepdims=True)

    def vote_logs(errors):
        # log P(vote | truth) per vote and truth: the bound of one iteration and the E-step of the next read the same.
        with np.errstate(divide="ignore"):
            return np.log(errors.reshape(2 * n_workers, 2))[cell]

    def e_step(prior, log_errors):
        logs = np.stack([np.bincount(item, weights=log_errors[:, c], minlength=n_items) for c in (0, 1)], axis=1) + np.log(np.maximum(prior, DS_EPS))
        logs -= logs.max(axis=1, keepdims=True)
        q = np.exp(logs)
        return q / q.sum(axis=1, keepdims=True)

    def lower_bound(q, prior, log_errors):
        joint = (q[item] * (log_errors + np.log(np.maximum(prior, DS_EPS)))).sum()
        q = np.maximum(q, DS_EPS)
        return float(joint - (q * np.log(q)).sum()) / len(label)

    share = np.bincount(item, weights=label.astype(float), minlength=n_items) / per_item
    q = np.stack([1.0 - share, share], axis=1)
    prior, errors = q.mean(axis=0), m_step(q)
    log_errors = vote_logs(errors)
    bound = -np.inf
    for _ in range(iterations):
        q = e_step(prior, log_errors)
        prior = q.mean(axis=0)
        errors = m_step(q)
        log_errors = vote_logs(errors)
        new_bound = lower_bound(q, prior, log_errors)
        if new_bound - bound < tol:
            break
        bound = new_bound
    # crowd-kit floors the posteriors it reports (the bound above does it in place).
    q = np.maximum(q, DS_EPS)
    return q[:, 1], errors, float(prior[1])


# The priors of crowd-kit's variational MACE (its defaults): Beta(0.5, 0.5) on knowing vs guessing,
# a symmetric Dirichlet(10) on each annotator's guessing strategy.
MACE_KNOW_PRIOR = (0.5, 0.5)  # (guessing, knowing)
MACE_STRATEGY_PRIOR = 10.0
MACE_ITERATIONS = 3000
MACE_TOL = 1e-6


def _mace_unflat(x: np.ndarray, n_workers: int) -> tuple:
    return x[:n_workers], x[n_workers : 2 * n_workers], x[2 * n_workers :].reshape(n_workers, 2)


def mace_fit(
    codes: dict, *, iterations: int = MACE_ITERATIONS, tol: float = MACE_TOL, start: tuple | None = None, strategy: bool = False, accelerate: bool = False
):
    """Binary MACE fitted by variational EM, crowd-kit's model: (P(label 1) per item, competence per worker, log-likelihood).

    An annotator knows the answer with probability `knowing` and then gives it; otherwise (`guessing`)
    it answers by its own strategy `theta`. The variational M-step is crowd-kit's (exp digamma of the
    expected counts plus the priors above), the E-step the exact posterior, in logs so that an item
    with many votes does not underflow. Arrays follow `codes`' worker and item order.

    Start: the share of 1 votes per item, with knowing = guessing = theta = 0.5 for the first counts,
    so the fit is deterministic and independent of the order the votes come in. crowd-kit draws its
    start from `random_state` by the annotators' order of appearance and its restarts all reuse that
    one draw: its fit moves with the order of the rows. Where the votes pin the model down (several
    votes per item) both starts reach the same fit (tests/scoring/test_crowd.py). On sparse votes
    (most pairs 1-2 votes) the likelihood is flat, EM crawls and may stop on another local optimum:
    there crowd-kit's own fit moves as much under a reordering of the rows (bench/report.py
    --crowdkit; bench/results/report-cpu.txt). `start` = (knowing, guessing, theta (workers, 2))
    replaces the majority start (the tests pass crowd-kit's). Runs until no posterior and no
    competence moves by more than `tol` in an iteration (sparse votes need a few thousand, numpy
    makes that cheap) or `iterations` M-steps. Competence is `knowing` after the last M-step and the
    posteriors come from the E-step after it, as in crowd-kit. The truth has two values even where
    the votes show only one (crowd-kit then knows a single class and reports P = 1 for it): such
    items keep a posterior short of certainty, with the same label. With `strategy`, a fourth value:
    the normalised (P(knows), P(guess 1)) per worker after the last M-step, the interval's point.
    """
    from scipy.special import digamma

    item, worker, label = codes["item"], codes["worker"], codes["label"]
    n_items, n_workers = codes["items"], codes["workers"]
    is1 = label == 1
    cell = 2 * worker + label  # a vote's (worker, label) cell in theta.ravel()

    def per_worker(values):
        return np.bincount(worker, weights=values, minlength=n_workers)

    def e_step(knowing, guessing, theta, likelihood: bool = False):
        """Item posteriors P(truth 1), the log-likelihood (with `likelihood`, else None: nothing in the loop reads it),
        and per vote P(vote | guessed) and P(known)."""
        # Everything but the item's posterior depends on the vote's (worker, label) cell only: the logs are taken
        # once per cell and gathered, the same numbers as per vote at a fraction of the cost.
        noise_cell, k_cell = np.repeat(guessing, 2) * theta.ravel(), np.repeat(knowing, 2)
        hit, miss = np.log(noise_cell + k_cell), np.log(noise_cell)  # P(vote | truth = its label), P(vote | the other truth)
        cell_is1 = np.tile([False, True], n_workers)
        log1 = np.bincount(item, weights=np.where(cell_is1, hit, miss)[cell], minlength=n_items)
        log0 = np.bincount(item, weights=np.where(cell_is1, miss, hit)[cell], minlength=n_items)
        noise, k = noise_cell[cell], k_cell[cell]
        q1 = 1.0 / (1.0 + np.exp(np.clip(log0 - log1, -700, 700)))
        return q1, float((np.logaddexp(log0, log1) - np.log(2.0)).sum()) if likelihood else None, noise, k

    if start is None:
        q1 = np.bincount(item, weights=is1.astype(float), minlength=n_items) / np.bincount(item, minlength=n_items)
        knowing, guessing, theta = np.full(n_workers, 0.5), np.full(n_workers, 0.5), np.full((n_workers, 2), 0.5)
        noise, k, loglik = np.full(len(label), 0.25), np.full(len(label), 0.5), -np.inf
    else:
        knowing, guessing, theta = (np.array(a, dtype=float) for a in start)
        q1, loglik, noise, k = e_step(knowing, guessing, theta, likelihood=True)
    alpha, beta = MACE_KNOW_PRIOR

    def m_step(q1, noise, k):
        # P(the annotator knew | all votes): the truth is the vote's label (posterior q) and it was known, not guessed.
        knew = np.where(is1, q1[item], 1.0 - q1[item]) * k / (noise + k)
        guessed = 1.0 - knew
        known, guesses = per_worker(knew), per_worker(guessed)
        guessed_1 = per_worker(guessed * is1)
        norm = np.exp(digamma(known + guesses + alpha + beta))
        strategy_norm = np.exp(digamma(guesses + 2 * MACE_STRATEGY_PRIOR))[:, None]
        theta = np.exp(digamma(np.stack([guesses - guessed_1, guessed_1], axis=1) + MACE_STRATEGY_PRIOR)) / strategy_norm
        return np.exp(digamma(known + beta)) / norm, np.exp(digamma(guesses + alpha)) / norm, theta

    guessing = theta = None
    steps = 0
    while steps < iterations:
        if accelerate and guessing is not None and steps + 3 <= iterations:
            # SQUAREM (Varadhan & Roland 2008, SqS3): two plain steps give a direction, one extrapolated step along
            # it and a plain step from there; a point outside the parameters' range falls back to the plain steps.
            x0 = np.r_[knowing, guessing, theta.ravel()]
            x1 = np.r_[tuple(a.ravel() for a in m_step(q1, noise, k))]
            q_1, _, noise_1, k_1 = e_step(*_mace_unflat(x1, n_workers))
            x2 = np.r_[tuple(a.ravel() for a in m_step(q_1, noise_1, k_1))]
            r, v = x1 - x0, x2 - 2 * x1 + x0
            step = -min(-1.0, -np.sqrt((r @ r) / max(v @ v, 1e-300)))
            x = x0 + 2 * step * r + step * step * v
            if not (np.isfinite(x).all() and (x > 0).all()):
                x = x2
            knowing, guessing, theta = _mace_unflat(x, n_workers)
            q1, loglik, noise, k = e_step(knowing, guessing, theta)
            steps += 2
        new_knowing, guessing, theta = m_step(q1, noise, k)
        new_q1, loglik, noise, k = e_step(new_knowing, guessing, theta)
        steps += 1
        moved = max(np.abs(new_q1 - q1).max(initial=0.0), np.abs(new_knowing - knowing).max(initial=0.0))
        q1, knowing = new_q1, new_knowing
        if moved < tol:
            break
    # The last E-step again, for its log-likelihood only (the same posteriors).
    loglik = e_step(knowing, guessing, theta, likelihood=True)[1]
    if strategy:
        return q1, knowing, loglik, (knowing / (knowing + guessing), theta[:, 1] / theta.sum(axis=1))
    return q1, knowing, loglik


def mace_crowdkit_start(n_workers: int, seed: int = 0) -> tuple:
    """crowd-kit's MACE start for `random_state=seed` as a `mace_fit` start: (knowing, guessing, theta).

    It draws P(guess), P(know) and the strategy alike from U(1, 2.5) and normalises each row; workers
    in their order of appearance, strategy columns in the labels' order of appearance.
    """
    import scipy.stats as sps

    draw = sps.uniform(1, 1.5).rvs(size=(n_workers, 2), random_state=seed)
    draw = draw / draw.sum(axis=1, keepdims=True)
    return draw[:, 1], draw[:, 0], draw


# Rounds refitted together are (rounds x votes) arrays; this many cells at most per chunk bounds the memory.
CHUNK_CELLS = 2_000_000


def _in_chunks(refit, codes: dict, weights: np.ndarray) -> np.ndarray:
    """refit(codes, weights) over chunks of rounds (the same values; less memory on large studies)."""
    size = max(1, CHUNK_CELLS // max(len(codes["label"]), 1))
    return np.concatenate([refit(codes, weights[start : start + size]) for start in range(0, len(weights), size)], axis=0)


def _percentiles(values: np.ndarray, codes: dict) -> tuple[pd.Series, pd.Series]:
    """Per annotator: the 2.5 and 97.5 percentiles of the refitted values (NaN rounds left out)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        low, high = np.nanpercentile(values, [2.5, 97.5], axis=0)
    names = codes["worker_names"]
    return pd.Series(np.clip(low, 0.0, 1.0), index=names), pd.Series(np.clip(high, 0.0, 1.0), index=names)


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
