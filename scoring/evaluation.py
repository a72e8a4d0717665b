"""Machine-versus-human accuracy with the CMI-RewardBench rules: one vocabulary, one tie rule, two views.

Plain Python and numpy only (no Django, no pandas): the judges, the scoring services, the study
report and offline code (a reward model scored on held-out pairs) all evaluate through here.

Rules (docs/formats.md; CMI-RewardBench `evaluate_results.py` and `_pair_pref_label`):

- Labels: a/model_a, b/model_b, both/neither -> both, case and surrounding spaces ignored; any
  other label (empty, "tie", "BOTH_BAD") drops the row (`normalize_label`).
- Two scores -> a prediction: A only when score(A) > score(B), so **ties predict B**; a missing
  or NaN score predicts nothing (`prefer`; `prefers_a` is the same rule on arrays).
- A prediction against a label scores 1 on an exact match, 0.5 when either side is "both" (and
  they differ), otherwise 0 (`match_score` / `match_scores`); accuracy is the mean score.
- Breakdowns: modality (given, or inferred from non-empty lyrics / ref), no_ref / ref,
  instrumental / vocal, confidence buckets <3 / =3 / >3 (over all units, and crossed with
  no_ref / ref); "w/o audio" and "w/ audio" are the unweighted means of their two modality
  accuracies, over the modalities that have units (None only when neither has); the headline is the mean of the dimensions' accuracies.

Two views, always chosen explicitly (`evaluate(rows, view=...)`):

- VOTE ("vote"): every human vote is a unit, as CMI-RewardBench scores its rows (one vote per
  row). Scoring-run summaries and imported result sets use it.
- MAJORITY ("majority"): votes are grouped by `pair_id`; a pair is a unit when more than half of
  its labelled votes carry one label (`pair_majority`), and its confidence is the mean confidence
  of those votes. Pairs without such a majority (ties) are left out and counted. The study
  report uses this view.

A row is one human vote, a plain dict (what `scoring.selectors.run_comparison_rows` builds):

    pair_id            the pair voted on (required by the majority view; one type throughout)
    pred_<dim>         the judge's label for the pair, or None when it gave none
                       (the majority view requires the same value on every row of a pair)
    label_<dim>        the human label, any spelling normalize_label accepts
    confidence_<dim>   optional, 1-5, numbers or numeric strings such as "2.0"
    modality           optional; otherwise `lyrics` / `ref` (when present) to infer it

`evaluate` returns {dim: block, ..., "headline": mean accuracy or None}, each block:

    "all":           {"accuracy", "n"} (+ "ci": [low, high], 95% percentile bootstrap over units, when rounds > 0)
    "coverage":      {"answered", "labelled", "share"}: units with a countable human label and how many
                     the judge labelled (+ "ties": pairs left out without a majority, majority view)
    "by_modality":   {modality: {"accuracy", "n"}}                  } only when some row has a
    "no_ref", "ref", "instrumental", "vocal": {"accuracy", "n"}     } known modality
    "w/o audio", "w/ audio": float or None                          }
    "by_confidence": {"all": {bucket: {"accuracy", "n"}}, plus "no_ref" and "ref" when modality is known}

An accuracy is None when n is 0. Figures are not rounded (`breakdown(digits=...)` rounds for display).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from .stats import SMALL_SAMPLE_CLUSTERS, bootstrap_sums, cluster_bootstrap, cluster_t_interval, mcnemar_tests, num, paired_tests, percentile_ci, significance_groups

# --- Vocabulary ------------------------------------------------------------------------------

ALIGNMENT, MUSICALITY = "alignment", "musicality"
DIMENSIONS = (ALIGNMENT, MUSICALITY)

# Pair labels in the pair's stored order (CMI-RewardBench). NEITHER is a judge's answer; for
# scoring it means the same as BOTH.
MODEL_A, MODEL_B, BOTH, NEITHER = "model_a", "model_b", "both", "neither"
# Label codes for arrays: the index in LABELS; -1 means no (countable) label.
LABELS = (MODEL_A, MODEL_B, BOTH)
CODE = {label: code for code, label in enumerate(LABELS)}
NO_LABEL = -1

MODALITIES = ("text", "text+lyrics", "text+ref", "text+lyrics+ref")
NO_REF = ("text", "text+lyrics")
REF = ("text+ref", "text+lyrics+ref")
INSTRUMENTAL = ("text", "text+ref")
VOCAL = ("text+lyrics", "text+lyrics+ref")
BUCKETS = ("<3", "=3", ">3")

VOTE, MAJORITY = "vote", "majority"
VIEWS = (VOTE, MAJORITY)

_SPELLINGS = {"a": MODEL_A, "model_a": MODEL_A, "b": MODEL_B, "model_b": MODEL_B, "both": BOTH, "neither": BOTH}


# --- Rules -------------------------------------------------------------------------------------


def normalize_label(value) -> str | None:
    """The evaluator's label mapping: a/model_a, b/model_b, both/neither -> both; anything else -> None."""
    if not isinstance(value, str):
        return None
    return _SPELLINGS.get(value.strip().lower())


def label_code(value) -> int:
    """The code (index in LABELS) of any label spelling; NO_LABEL when it does not count."""
    label = normalize_label(value)
    return NO_LABEL if label is None else CODE[label]


def number(value) -> float | None:
    """A finite-or-infinite float from a number or numeric string; None for missing, NaN, bools and text."""
    if value is None or isinstance(value, bool):
        return None
    try:
        result = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(result) else result


def prefers_a(score_a, score_b) -> np.ndarray:
    """The tie rule on arrays, in clip terms: 1.0 where score(A) > score(B), else 0.0 (ties go to B); NaN where a score is missing."""
    a, b = np.asarray(score_a, dtype=float), np.asarray(score_b, dtype=float)
    return np.where(np.isnan(a) | np.isnan(b), np.nan, (a > b).astype(float))


def prefer(score_a, score_b) -> str | None:
    """MODEL_A when score(A) > score(B), otherwise MODEL_B (ties predict B); None when a score is missing or NaN."""
    a, b = number(score_a), number(score_b)
    if a is None or b is None:
        return None
    return MODEL_A if prefers_a(a, b) == 1.0 else MODEL_B


def match_scores(pred, label) -> np.ndarray:
    """Label codes in, scores out: 1 for an exact match, 0.5 when either side is BOTH, else 0; NaN where a side has no label."""
    pred, label = np.asarray(pred, dtype=int), np.asarray(label, dtype=int)
    either_both = (pred == CODE[BOTH]) | (label == CODE[BOTH])
    score = np.where(pred == label, 1.0, np.where(either_both, 0.5, 0.0))
    return np.where((pred == NO_LABEL) | (label == NO_LABEL), np.nan, score)


def match_score(pred, label) -> float | None:
    """`match_scores` for two labels in any spelling; None drops the row."""
    p, lab = label_code(pred), label_code(label)
    if p == NO_LABEL or lab == NO_LABEL:
        return None
    return float(match_scores(p, lab))


def accuracy(pairs: Iterable[tuple]) -> dict:
    """Mean match score over (pred, label) pairs that count; accuracy None when none do."""
    scores = [s for s in (match_score(p, lab) for p, lab in pairs) if s is not None]
    return {"accuracy": (sum(scores) / len(scores)) if scores else None, "n": len(scores)}


def confidence_buckets(values) -> np.ndarray:
    """The buckets <3, =3, >3 of an array of confidences; "" where one is missing (NaN)."""
    values = np.asarray(values, dtype=float)
    return np.where(np.isnan(values), "", np.where(values < 3, "<3", np.where(values == 3, "=3", ">3")))


def confidence_bucket(value) -> str | None:
    """The bucket of one confidence (numbers or numeric strings); None when it is missing or not a number."""
    value = number(value)
    return None if value is None else str(confidence_buckets(value))


def infer_modality(row: dict) -> str | None:
    """`modality` when given; else from non-empty `lyrics` / `ref` when the row carries those keys; else None."""
    modality = row.get("modality")
    if modality in MODALITIES:
        return modality
    if "lyrics" not in row and "ref" not in row:
        return None
    lyrics, ref = bool(str(row.get("lyrics") or "").strip()), bool(str(row.get("ref") or "").strip())
    return {(False, False): "text", (True, False): "text+lyrics", (False, True): "text+ref", (True, True): "text+lyrics+ref"}[(lyrics, ref)]


def pair_majority(pair_ids: Sequence, labels: Sequence[int], confidence: Sequence[float] | None = None) -> dict:
    """The human majority per pair, from one entry per vote.

    labels are label codes (0 MODEL_A, 1 MODEL_B, 2 BOTH); votes with NO_LABEL are left out.
    Returns arrays over the distinct pair ids, sorted: "pair_id", "n" (votes), "counts" (pairs x 3,
    votes per label), "majority" (the code more than half of the votes carry, NO_LABEL for none),
    "confidence" (mean confidence of the majority's votes that have one; NaN without), "share"
    (the largest count over n).
    """
    labels = np.asarray(labels, dtype=int)
    pair_ids = np.asarray(pair_ids)
    conf = np.full(len(labels), np.nan) if confidence is None else np.asarray(confidence, dtype=float)
    keep = labels != NO_LABEL
    labels, pair_ids, conf = labels[keep], pair_ids[keep], conf[keep]
    ids, inverse = np.unique(pair_ids, return_inverse=True)
    width = len(LABELS)
    cell = inverse.reshape(-1) * width + labels
    size = len(ids) * width
    counts = np.bincount(cell, minlength=size).reshape(-1, width)
    known = np.isfinite(conf)
    conf_sum = np.bincount(cell, weights=np.where(known, conf, 0.0), minlength=size).reshape(-1, width)
    conf_n = np.bincount(cell, weights=known.astype(float), minlength=size).reshape(-1, width)
    n = counts.sum(axis=1)
    top = counts.argmax(axis=1)
    majority = np.where(2 * counts.max(axis=1, initial=0) > n, top, NO_LABEL)
    rows = np.arange(len(ids))
    picked = np.where(majority == NO_LABEL, 0, majority)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean_conf = np.where(majority == NO_LABEL, np.nan, conf_sum[rows, picked] / conf_n[rows, picked])
        share = counts.max(axis=1, initial=0) / n
    return {"pair_id": ids, "n": n, "counts": counts, "majority": majority, "confidence": mean_conf, "share": share}


# --- Breakdowns ------------------------------------------------------------------------------------

_MODALITY_CODE = {m: i for i, m in enumerate(MODALITIES)}
_GROUPS = {"no_ref": NO_REF, "ref": REF, "instrumental": INSTRUMENTAL, "vocal": VOCAL}


def mean_or_none(values: list, digits: int | None = None) -> float | None:
    """The plain mean, None when a value is missing; rounded to `digits` when given."""
    if not values or any(v is None for v in values):
        return None
    mean = sum(values) / len(values)
    return mean if digits is None else num(mean, digits)


def mean_of_present(values: list, digits: int | None = None) -> float | None:
    """The mean of the values that exist, None when none does (the evaluator's `_safe_mean`); rounded to `digits` when given."""
    return mean_or_none([v for v in values if v is not None], digits)


def breakdown(scores, modality, confidence, *, rounds: int | None = None, seed: int = 0, digits: int | None = None) -> dict:
    """Accuracy over scored units (votes or pairs) with every CMI-Pref breakdown.

    scores: 1 / 0.5 / 0 per unit; modality: a name per unit (anything outside MODALITIES counts in
    no modality group); confidence: a number per unit (NaN for none). With `rounds`, "all" gets a
    95% percentile bootstrap interval over units, seeded. With `digits`, accuracies are rounded
    first and the w/ and w/o audio means are taken over the rounded values (how the report shows them).
    Returns {"all", "by_modality", "no_ref", "ref", "instrumental", "vocal", "w/o audio", "w/ audio",
    "by_confidence": {"all" | "no_ref" | "ref": {bucket: ...}}}, each figure {"accuracy", "n"}.
    """
    scores = np.asarray(scores, dtype=float)
    # One comparison per modality over the whole column, not a dict lookup per unit (a Python loop at 100,000 pairs).
    names = np.asarray(modality, dtype=object).reshape(-1)
    codes = np.full(len(names), -1, dtype=int)
    for name, code in _MODALITY_CODE.items():
        codes[names == name] = code
    buckets = confidence_buckets(confidence)

    def acc(mask) -> dict:
        n = int(mask.sum())
        value = float(scores[mask].sum() / n) if n else None
        return {"accuracy": value if digits is None or value is None else num(value, digits), "n": n}

    def among(names) -> np.ndarray:
        return np.isin(codes, [_MODALITY_CODE[m] for m in names])

    everything = np.ones(len(scores), dtype=bool)
    out: dict = {"all": acc(everything)}
    if rounds is not None:
        boot = bootstrap_sums(np.column_stack([scores, np.ones(len(scores))]), rounds=rounds, seed=seed)
        with np.errstate(divide="ignore", invalid="ignore"):
            out["all"]["ci"] = percentile_ci(boot[:, 0] / boot[:, 1])
    out["by_modality"] = {m: acc(codes == i) for i, m in enumerate(MODALITIES)}
    for name, names in _GROUPS.items():
        out[name] = acc(among(names))
    # A modality without units is left out of its mean, as CMI-RewardBench's evaluator does.
    out["w/o audio"] = mean_of_present([out["by_modality"][m]["accuracy"] for m in NO_REF], digits)
    out["w/ audio"] = mean_of_present([out["by_modality"][m]["accuracy"] for m in REF], digits)
    out["by_confidence"] = {
        scope: {b: acc((buckets == b) & within) for b in BUCKETS}
        for scope, within in (("all", everything), ("no_ref", among(NO_REF)), ("ref", among(REF)))
    }
    return out


# --- Views over plain rows ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Units:
    """The scored units of one dimension under one view, ready for `breakdown`."""

    scores: np.ndarray
    modality: list
    confidence: np.ndarray
    coverage: dict
    modality_known: bool


def _coverage(answered: int, labelled: int) -> dict:
    return {"answered": answered, "labelled": labelled, "share": (answered / labelled) if labelled else None}


def vote_units(rows: Sequence[dict], dim: str) -> Units:
    """One unit per vote whose human label and judge label both count."""
    pred_key, label_key, conf_key = f"pred_{dim}", f"label_{dim}", f"confidence_{dim}"
    scores, modality, confidence = [], [], []
    labelled = 0
    known = False
    for row in rows:
        m = infer_modality(row)
        known = known or m is not None
        label = label_code(row.get(label_key))
        if label == NO_LABEL:
            continue
        labelled += 1
        pred = label_code(row.get(pred_key))
        if pred == NO_LABEL:
            continue
        scores.append(float(match_scores(pred, label)))
        modality.append(m)
        value = number(row.get(conf_key))
        confidence.append(np.nan if value is None else value)
    # Share of countable human votes the judge gave a label for (discards and failures lower it).
    return Units(np.asarray(scores, dtype=float), modality, np.asarray(confidence, dtype=float), _coverage(len(scores), labelled), known)


def majority_units(rows: Sequence[dict], dim: str) -> Units:
    """One unit per pair with a human majority and a judge label (see pair_majority)."""
    pred_key, label_key, conf_key = f"pred_{dim}", f"label_{dim}", f"confidence_{dim}"
    preds: dict = {}
    modality_of: dict = {}
    ids, labels, confidence = [], [], []
    for row in rows:
        if "pair_id" not in row or row["pair_id"] is None:
            raise ValueError("the majority view groups votes by pair_id: every row needs one")
        pair_id = row["pair_id"]
        pred = label_code(row.get(pred_key))
        if preds.setdefault(pair_id, pred) != pred:
            raise ValueError(f"pair {pair_id!r}: its rows disagree on {pred_key}; the judge gives one label per pair")
        modality_of.setdefault(pair_id, infer_modality(row))
        label = label_code(row.get(label_key))
        if label == NO_LABEL:
            continue
        value = number(row.get(conf_key))
        ids.append(pair_id)
        labels.append(label)
        confidence.append(np.nan if value is None else value)
    table = pair_majority(ids, labels, confidence)
    decided = table["majority"] != NO_LABEL
    pred = np.array([preds[p] for p in table["pair_id"]], dtype=int)
    scored = decided & (pred != NO_LABEL)
    coverage = _coverage(int(scored.sum()), int(decided.sum()))
    coverage["ties"] = int((~decided).sum())
    return Units(
        match_scores(pred[scored], table["majority"][scored]),
        [modality_of[p] for p in table["pair_id"][scored]],
        table["confidence"][scored],
        coverage,
        any(m is not None for m in modality_of.values()),
    )


def evaluate(rows: Iterable[dict], *, view: str, dimensions: tuple[str, ...] = DIMENSIONS, rounds: int = 0, seed: int = 0) -> dict:
    """Judge-versus-human accuracy per dimension under one view (VOTE or MAJORITY); the shape is in the module docstring.

    rounds > 0 adds a seeded 95% bootstrap interval (resampling units: votes or pairs) to each "all".
    """
    if view not in VIEWS:
        raise ValueError(f"view must be one of {', '.join(VIEWS)}, not {view!r}")
    if rounds < 0:
        raise ValueError("rounds must be 0 (no interval) or more")
    rows = list(rows)
    out: dict = {}
    for dim in dimensions:
        units = vote_units(rows, dim) if view == VOTE else majority_units(rows, dim)
        figures = breakdown(units.scores, units.modality, units.confidence, rounds=rounds or None, seed=seed)
        block = {"all": figures["all"], "coverage": units.coverage}
        if units.modality_known:
            for key in ("by_modality", *_GROUPS, "w/o audio", "w/ audio"):
                block[key] = figures[key]
            block["by_confidence"] = figures["by_confidence"]
        else:
            # Without modalities the reference split says nothing; only the overall buckets remain.
            block["by_confidence"] = {"all": figures["by_confidence"]["all"]}
        out[dim] = block
    out["headline"] = mean_or_none([out[d]["all"]["accuracy"] for d in dimensions], None)
    return out


# --- Many judges on the same items (benchmarks) ------------------------------------------------------
#
# A benchmark scores S submissions on the same N items at once: every figure below works on an
# S x N matrix of match scores, so intervals and pairwise tests for all submissions come from one
# set of resamples (the same resampled items for every submission, which is what makes the
# comparisons paired). The resampling and the paired tests themselves are plain statistics and
# live in scoring/stats.py.


def item_scores(pred, truth) -> np.ndarray:
    """Match scores (S x N) of predicted label codes (S x N) against the truth codes (N).

    A missing prediction (NO_LABEL) scores 0: an item a judge did not answer counts as wrong, so a
    judge cannot raise its accuracy by answering only the items it is sure of. Items whose truth is
    NO_LABEL must be dropped by the caller (they have no answer to score against).
    """
    pred = np.atleast_2d(np.asarray(pred, dtype=int))
    truth = np.asarray(truth, dtype=int)
    if (truth == NO_LABEL).any():
        raise ValueError("every item needs a truth label; leave out the items without one")
    scores = match_scores(pred, np.broadcast_to(truth, pred.shape))
    return np.nan_to_num(scores, nan=0.0)


def human_ceiling(item_of_vote, labels) -> dict:
    """Agreement of a held-out annotator with the majority of the other annotators on the same item.

    item_of_vote: an item code per vote; labels: label codes per vote (NO_LABEL left out). Each vote
    on an item with at least two votes is scored (1 / 0.5 / 0) against the majority of the rest;
    a vote whose rest has no majority is not scored. Returns {"accuracy", "n"}.
    """
    labels = np.asarray(labels, dtype=int)
    items = np.asarray(item_of_vote)
    keep = labels != NO_LABEL
    labels, items = labels[keep], items[keep]
    if labels.size == 0:
        return {"accuracy": None, "n": 0}
    codes = np.unique(items, return_inverse=True)[1].reshape(-1)
    width = len(LABELS)
    counts = np.bincount(codes * width + labels, minlength=(codes.max() + 1) * width).reshape(-1, width)
    rest = counts[codes].copy()
    rest[np.arange(labels.size), labels] -= 1
    n_rest = rest.sum(axis=1)
    top = rest.argmax(axis=1)
    decided = (n_rest > 0) & (2 * rest.max(axis=1) > n_rest)
    if not decided.any():
        return {"accuracy": None, "n": 0}
    scores = match_scores(labels[decided], top[decided])
    return {"accuracy": float(scores.mean()), "n": int(decided.sum())}


def chance_accuracy(truth) -> float | None:
    """Expected accuracy of a fair coin between A and B against these truth codes (0.5 per item whatever its label)."""
    truth = np.asarray(truth, dtype=int)
    truth = truth[truth != NO_LABEL]
    if truth.size == 0:
        return None
    expected = (match_scores(np.full(truth.size, CODE[MODEL_A]), truth) + match_scores(np.full(truth.size, CODE[MODEL_B]), truth)) / 2
    return float(expected.mean())


def calibration(prob_a, truth, *, bins: int = 10) -> dict | None:
    """Brier score and reliability bins of stated probabilities that A is preferred.

    Only items whose truth is A or B and that carry a probability count. Returns None when none
    does; otherwise {"brier", "n", "bins": [{"low", "high", "n", "mean_prob", "share_a"}]} with
    the empty bins left out.
    """
    prob = np.asarray(prob_a, dtype=float)
    truth = np.asarray(truth, dtype=int)
    keep = np.isfinite(prob) & ((truth == CODE[MODEL_A]) | (truth == CODE[MODEL_B]))
    if not keep.any():
        return None
    prob, outcome = prob[keep], (truth[keep] == CODE[MODEL_A]).astype(float)
    index = np.minimum((prob * bins).astype(int), bins - 1)
    rows = []
    for b in range(bins):
        mask = index == b
        if mask.any():
            rows.append({"low": b / bins, "high": (b + 1) / bins, "n": int(mask.sum()), "mean_prob": float(prob[mask].mean()), "share_a": float(outcome[mask].mean())})
    return {"brier": float(np.mean((prob - outcome) ** 2)), "n": int(keep.sum()), "bins": rows}


def compare_submissions(pred, truth, *, clusters=None, rounds: int = 0, seed: int = 0, alpha: float = 0.05) -> dict:
    """Accuracy of S submissions (pred: S x N label codes) on the same N items, with everything a leaderboard shows.

    Returns lists over submissions: "accuracy", "answered" (items given a label), "ci" (95%
    percentile interval from `cluster_bootstrap`, None without rounds), "rank" (from
    `significance_groups`; without rounds, 1 + the number with a strictly higher accuracy), and
    "p" (S x S Holm-adjusted paired p-values, None without rounds); plus "n", "chance" and
    "mcnemar" (`mcnemar_tests` as lists: "p", "p_holm", "discordant"; the groups come from the
    bootstrap test, McNemar is shown beside it).
    """
    pred = np.asarray(pred, dtype=int)
    if pred.ndim == 1:
        pred = pred[None, :]
    scores = item_scores(pred, truth)
    n_items = scores.shape[1]
    acc = scores.mean(axis=1) if n_items else np.full(scores.shape[0], np.nan)
    out = {
        "n": n_items,
        "accuracy": [None if not np.isfinite(a) else float(a) for a in acc],
        "answered": [int(x) for x in (pred != NO_LABEL).sum(axis=1)],
        "chance": chance_accuracy(truth),
        "ci": None,
        "p": None,
    }
    mcnemar = mcnemar_tests(scores)
    out["mcnemar"] = {key: value.tolist() for key, value in mcnemar.items()}
    if rounds > 0 and n_items and pred.shape[0]:
        boot = cluster_bootstrap(scores, clusters, rounds=rounds, seed=seed)
        low, high = np.percentile(boot, [2.5, 97.5], axis=0)
        out["ci"] = [[float(a), float(b)] for a, b in zip(low, high)]
        tests = paired_tests(boot, alpha=alpha)
        out["p"] = tests["p"].tolist()
        out["rank"] = [int(r) for r in significance_groups(acc, tests["significant"])]
    else:
        out["rank"] = [int(r) for r in 1 + (acc[None, :] > acc[:, None]).sum(axis=1)]
    return out


# --- Intervals by cluster ----------------------------------------------------------------------------
#
# Votes are not independent: the votes on a pair share the judge's one prediction, and the pairs of
# a condition share its prompt (and, for a learned judge, which side of a split it fell on). An
# interval that resamples votes is too narrow. These resample whole clusters: the condition of each
# unit, or the pair when every condition holds a single pair (then conditions and pairs are the same
# clusters). `unit_scores` works on evaluate's plain rows with any number of predictors side by side
# (keys "<name>_<dim>", "pred" being the judge's own), so a model and its baselines are scored on the
# same units and their paired difference keeps the pairing inside each resampled cluster.

CLUSTER_KEYS = ("condition", "pair")


@dataclass(frozen=True)
class ScoredUnits:
    """Labelled units of one dimension under one view: a score per predictor (NaN where it gave no label)."""

    scores: dict  # predictor name -> (n,) float array of 1 / 0.5 / 0 / NaN
    clusters: np.ndarray  # (n,) the cluster each unit is resampled with
    resamples: str  # "condition" or "pair"
    ties: int  # majority view: pairs without a majority (left out); 0 for votes


def unit_scores(rows: Sequence[dict], dim: str, *, view: str, predictors: Sequence[str] = ("pred",), cluster: str = "condition") -> ScoredUnits:
    """Every unit with a countable human label, scored for each predictor (see this section's comment)."""
    if view not in VIEWS:
        raise ValueError(f"view must be one of {', '.join(VIEWS)}, not {view!r}")
    if cluster not in CLUSTER_KEYS:
        raise ValueError(f"cluster must be one of {', '.join(CLUSTER_KEYS)}, not {cluster!r}")
    rows = list(rows)
    label_key = f"label_{dim}"
    pair_of, cluster_of, labels, preds = [], [], [], {p: [] for p in predictors}
    for row in rows:
        label = label_code(row.get(label_key))
        if label == NO_LABEL:
            continue
        pair = row.get("pair_id")
        pair_of.append(pair)
        cluster_of.append(row.get("condition", pair) if cluster == "condition" else pair)
        labels.append(label)
        for p in predictors:
            preds[p].append(label_code(row.get(f"{p}_{dim}")))
    ties = 0
    if view == MAJORITY:
        if any(p is None for p in pair_of):
            raise ValueError("the majority view groups votes by pair_id: every row needs one")
        table = pair_majority(pair_of, labels)
        first = {}
        for k, pair in enumerate(pair_of):
            first.setdefault(pair, k)
        decided = table["majority"] != NO_LABEL
        ties = int((~decided).sum())
        keep = [first[p] for p in table["pair_id"][decided]]
        labels = table["majority"][decided]
        pair_of = [pair_of[k] for k in keep]
        cluster_of = [cluster_of[k] for k in keep]
        preds = {p: [v[k] for k in keep] for p, v in preds.items()}
    labels = np.asarray(labels, dtype=int)
    scores = {p: match_scores(np.asarray(v, dtype=int).reshape(-1), labels) if len(labels) else np.zeros(0) for p, v in preds.items()}
    resamples = cluster
    if cluster == "condition":
        pairs_per = {}
        for c, p in zip(cluster_of, pair_of):
            pairs_per.setdefault(c, set()).add(p)
        if pairs_per and all(len(v) == 1 for v in pairs_per.values()):
            cluster_of, resamples = pair_of, "pair"
    _, clusters = np.unique(np.asarray([repr(c) for c in cluster_of], dtype=object), return_inverse=True) if cluster_of else (None, np.zeros(0, dtype=int))
    return ScoredUnits(scores, np.asarray(clusters, dtype=int).reshape(-1), resamples, ties)


def interval_method(clusters: int) -> str:
    """"t" below stats.SMALL_SAMPLE_CLUSTERS clusters (the percentile bootstrap is liberal there), else "bootstrap"."""
    return "t" if clusters < SMALL_SAMPLE_CLUSTERS else "bootstrap"


def cluster_ci(scores, clusters, *, rounds: int, seed: int) -> list:
    """95% interval of the mean of scores over whole clusters: the percentile bootstrap resampling
    clusters (cluster_bootstrap), or with few clusters the t-interval on them (interval_method)."""
    if rounds <= 0 or len(scores) == 0:
        return [None, None]
    if interval_method(len(np.unique(clusters))) == "t":
        return cluster_t_interval(scores, clusters)
    return percentile_ci(cluster_bootstrap(scores, clusters, rounds=rounds, seed=seed)[:, 0])


def _interval_about(units: ScoredUnits, clusters: np.ndarray, rounds: int) -> dict:
    count = int(len(np.unique(clusters)))
    method = interval_method(count)
    about = {"resamples": units.resamples, "clusters": count, "rounds": rounds if method == "bootstrap" else 0, "method": method}
    if method == "t":
        about["note"] = f"{count} clusters (fewer than {SMALL_SAMPLE_CLUSTERS}): Student t on clusters instead of the bootstrap; still a rough interval"
    return about


def clustered_accuracy(units: ScoredUnits, predictor: str = "pred", *, rounds: int = 0, seed: int = 0) -> dict:
    """{"accuracy", "n", "ci", "interval", "coverage"} of one predictor; ci resamples clusters (None without rounds)."""
    scores = units.scores[predictor]
    answered = np.isfinite(scores)
    n = int(answered.sum())
    clusters = units.clusters[answered]
    coverage = _coverage(n, len(scores))
    coverage["ties"] = units.ties
    return {
        "accuracy": float(scores[answered].mean()) if n else None,
        "n": n,
        "ci": cluster_ci(scores[answered], clusters, rounds=rounds, seed=seed) if rounds else None,
        "interval": _interval_about(units, clusters, rounds),
        "coverage": coverage,
    }


def paired_difference(units: ScoredUnits, a: str, b: str, *, rounds: int = 0, seed: int = 0) -> dict:
    """Accuracy of `a` minus accuracy of `b` on the units both answered, with a cluster interval."""
    sa, sb = units.scores[a], units.scores[b]
    both = np.isfinite(sa) & np.isfinite(sb)
    n = int(both.sum())
    diff = sa[both] - sb[both]
    clusters = units.clusters[both]
    return {
        "difference": float(diff.mean()) if n else None,
        "n": n,
        "ci": cluster_ci(diff, clusters, rounds=rounds, seed=seed) if rounds and n else None,
        "interval": _interval_about(units, clusters, rounds),
    }


def evaluate_clustered(rows: Iterable[dict], *, view: str, dimensions: tuple[str, ...] = DIMENSIONS, rounds: int = 0, seed: int = 0, cluster: str = "condition") -> dict:
    """`evaluate`, with each "all" interval resampling clusters (conditions, or pairs) instead of units.

    "all" gains "interval" (what was resampled, how many clusters); the coverage block carries
    "ties" in both views (0 for votes).
    """
    rows = list(rows)
    out = evaluate(rows, view=view, dimensions=dimensions, rounds=0, seed=seed)
    for dim in dimensions:
        figure = clustered_accuracy(unit_scores(rows, dim, view=view, cluster=cluster), rounds=rounds, seed=seed)
        out[dim]["all"] = {**out[dim]["all"], "ci": figure["ci"], "interval": figure["interval"]}
        out[dim]["coverage"].setdefault("ties", 0)
    return out
