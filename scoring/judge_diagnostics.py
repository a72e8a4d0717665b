"""Judge diagnostics for the study report: position bias, judge-by-judge agreement, AUC and calibration.

The checks the judge papers run on their own judges, on this study's verdicts:

- **Bias** (AIR-Bench, CMI-RewardBench): per judge and dimension, the shares of its labels that name the stored
  clip A, clip B, or neither (both / neither), and, for judges asked in both orders, the share of pairs whose label
  survived the swap (position consistency). Per-clip judges follow the tie rule (equal scores count as B).
- **Agreement between judges** (AudioBench): per dimension, Spearman's rho between two judges' per-pair margins
  (score A - score B) on the pairs both scored, with a percentile bootstrap interval resampling those pairs.
- **AUC and reliability** (AQAScore), for judges whose clip scores are probabilities (`aqa`, `rubric`, `pam`):
  the area under the ROC curve of the margin for "the human majority prefers A" (ties and split majorities left
  out), and a reliability table of p(A) = s_A / (s_A + s_B) (the Bradley-Terry reading of two clip probabilities)
  against the share of human votes for A, in five bins, with the expected calibration error.

`judge_diagnostics` is arithmetic on the report's frames (the report passes its human majorities in, so this module
imports nothing from it); `judge_diagnostics_section` adds the verdicts' stored labels and consistency flags from
the database.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import rankdata

from .evaluation import DIMENSIONS, MODEL_A, MODEL_B, prefers_a
from .stats import num

PROBABILITY_KINDS = ("aqa", "rubric", "pam")
MIN_PAIRS = 3
BINS = 5
MAX_ROUNDS = 1000
# Re-ranking every resample costs rounds x pairs: past this many values a cell takes fewer resamples (never under
# MIN_ROUNDS), so a study of 5,000 shared pairs costs about a second per pair of judges, not several.
RESAMPLED_VALUES = 2_000_000
MIN_ROUNDS = 200


def _fmt(value, digits: int = 3) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def _share(part: int, total: int) -> float | None:
    return num(part / total) if total else None


def _labels_for(rows: pd.DataFrame, pairs: pd.DataFrame, details: pd.DataFrame, dim: str) -> np.ndarray:
    """Per verdict row: "a", "b", "tie" or "" (no label), from the stored labels when there are any, else the frame."""
    out = np.full(len(rows), "", dtype=object)
    ok = rows["status"].to_numpy() == "ok"
    stored = None
    if len(details):
        keys = pd.MultiIndex.from_arrays([rows["run_id"].to_numpy(), rows["pair_id"].to_numpy()])
        stored = details["labels"].reindex(keys).to_numpy()
    # As the report's judge_prefs: a stored choice, else the scores with the tie rule.
    clip_a = pairs["clip_a"].reindex(rows["pair_id"]).to_numpy()
    choice = pd.to_numeric(rows[f"{dim}_choice"], errors="coerce").to_numpy(float)
    score_a = pd.to_numeric(rows[f"{dim}_score_a"], errors="coerce").to_numpy(float)
    score_b = pd.to_numeric(rows[f"{dim}_score_b"], errors="coerce").to_numpy(float)
    pref = np.where(np.isnan(choice), prefers_a(score_a, score_b), (choice == clip_a).astype(float))
    for i in range(len(rows)):
        if not ok[i]:
            continue
        labels = stored[i] if stored is not None else None
        if isinstance(labels, dict) and labels:
            label = labels.get(dim)
            out[i] = "" if label is None else "a" if label == MODEL_A else "b" if label == MODEL_B else "tie"
        elif not np.isnan(pref[i]):
            out[i] = "a" if pref[i] == 1 else "b" if pref[i] == 0 else "tie"
    return out


def _margins(rows: pd.DataFrame, dim: str) -> pd.Series:
    ok = rows[rows["status"] == "ok"]
    a = pd.to_numeric(ok[f"{dim}_score_a"], errors="coerce")
    b = pd.to_numeric(ok[f"{dim}_score_b"], errors="coerce")
    margin = pd.Series((a - b).to_numpy(), index=ok["pair_id"].to_numpy()).dropna()
    return margin.groupby(level=0).first()


def spearman_interval(x: np.ndarray, y: np.ndarray, *, rounds: int, seed: int) -> dict:
    """rho with a 95 % percentile bootstrap interval over resampled pairs (rounds = 0: no interval)."""
    n = len(x)

    def rho(rx, ry):
        rx = rx - rx.mean(axis=-1, keepdims=True)
        ry = ry - ry.mean(axis=-1, keepdims=True)
        den = np.sqrt((rx**2).sum(axis=-1) * (ry**2).sum(axis=-1))
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(den > 0, (rx * ry).sum(axis=-1) / den, np.nan)

    point = float(rho(rankdata(x), rankdata(y)))
    lo = hi = None
    used = 0
    if rounds and n >= MIN_PAIRS:
        used = int(min(rounds, MAX_ROUNDS, max(MIN_ROUNDS, RESAMPLED_VALUES // n)))
        rng = np.random.default_rng(seed)
        idx = rng.integers(0, n, size=(used, n))
        values = rho(rankdata(x[idx], axis=1), rankdata(y[idx], axis=1))
        values = values[np.isfinite(values)]
        if len(values):
            lo, hi = (float(v) for v in np.percentile(values, [2.5, 97.5]))
    return {"rho": num(point) if np.isfinite(point) else None, "ci": [num(lo) if lo is not None else None, num(hi) if hi is not None else None], "n": n, "rounds": used}


def auc(scores: np.ndarray, positive: np.ndarray) -> float | None:
    """ROC AUC from ranks (ties count a half): P(score of a positive > score of a negative)."""
    n_pos, n_neg = int(positive.sum()), int((~positive).sum())
    if n_pos == 0 or n_neg == 0:
        return None
    ranks = rankdata(scores)
    return num((ranks[positive].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def reliability(p_a: np.ndarray, k: np.ndarray, n: np.ndarray) -> dict:
    """Five equal-width bins of p(A): pairs, mean p(A), the share of human votes for A; ECE weighted by pairs."""
    edges = np.linspace(0, 1, BINS + 1)
    which = np.clip(np.digitize(p_a, edges[1:-1]), 0, BINS - 1)
    rows, ece = [], 0.0
    for b in range(BINS):
        mask = which == b
        votes = int(n[mask].sum())
        mean_p = float(p_a[mask].mean()) if mask.any() else None
        observed = float(k[mask].sum() / votes) if votes else None
        if mean_p is not None and observed is not None:
            ece += mask.sum() / len(p_a) * abs(mean_p - observed)
        rows.append({"range": f"{edges[b]:.1f}–{edges[b + 1]:.1f}", "pairs": int(mask.sum()), "votes": votes, "mean_p": num(mean_p) if mean_p is not None else None, "human_a": num(observed) if observed is not None else None})
    return {"bins": rows, "ece": num(ece) if len(p_a) else None}


def judge_diagnostics(*, majorities: dict, verdicts: pd.DataFrame, pairs: pd.DataFrame, sources: list[dict], details: pd.DataFrame, rounds: int, seed: int) -> dict:
    """The section's figures. `majorities`: per dimension the report's human_majority frame (n, k, majority per
    pair); `details`: stored labels and consistency per (run_id, pair_id), columns labels, consistent."""
    by_source = dict(tuple(verdicts.groupby("run_id"))) if len(verdicts) else {}
    used = [s for s in sources if s["id"] in by_source]
    bias, margins, calibration = [], {dim: {} for dim in DIMENSIONS}, []
    for source in used:
        rows = by_source[source["id"]]
        for dim in DIMENSIONS:
            labels = _labels_for(rows, pairs, details, dim)
            labelled = int((labels != "").sum())
            if not labelled:
                continue
            counts = {k: int((labels == k).sum()) for k in ("a", "b", "tie")}
            consistency = asked = None
            if len(details):
                keys = pd.MultiIndex.from_arrays([rows["run_id"].to_numpy(), rows["pair_id"].to_numpy()])
                flags = [c.get(dim) for c in details["consistent"].reindex(keys).to_numpy() if isinstance(c, dict) and dim in c]
                if flags:
                    asked, consistency = len(flags), _share(sum(bool(f) for f in flags), len(flags))
            entry = {
                "label": source["label"],
                "judge": source["judge"],
                "dimension": dim,
                "n": labelled,
                "a_share": _share(counts["a"], labelled),
                "b_share": _share(counts["b"], labelled),
                "tie_share": _share(counts["tie"], labelled),
                "consistency": consistency,
                "asked_both_orders": asked,
            }
            entry["fmt"] = {k: _fmt(entry[k]) for k in ("a_share", "b_share", "tie_share", "consistency")}
            bias.append(entry)
            margin = _margins(rows, dim)
            if len(margin) >= MIN_PAIRS:
                margins[dim][source["label"]] = margin
            if source.get("judge_kind") in PROBABILITY_KINDS and dim in majorities and len(margin):
                calibration.extend(_calibration(source, rows, dim, majorities[dim]))
    correlation = {}
    for dim in DIMENSIONS:
        names = list(margins[dim])
        if len(names) < 2:
            continue
        cells = []
        for i, first in enumerate(names):
            row = []
            for j, second in enumerate(names):
                if i == j:
                    row.append({"rho": 1.0, "ci": [None, None], "n": int(len(margins[dim][first])), "text": "1"})
                    continue
                common = margins[dim][first].index.intersection(margins[dim][second].index)
                if len(common) < MIN_PAIRS:
                    row.append({"rho": None, "ci": [None, None], "n": int(len(common)), "text": f"n={len(common)}"})
                    continue
                # One interval per unordered pair of judges: the same seed gives the same resamples both ways.
                cell = spearman_interval(margins[dim][first].loc[common].to_numpy(float), margins[dim][second].loc[common].to_numpy(float), rounds=rounds, seed=seed + min(i, j) * 1009 + max(i, j))
                lo, hi = cell["ci"]
                cell["text"] = _fmt(cell["rho"], 2) + (f" [{_fmt(lo, 2)}, {_fmt(hi, 2)}]" if lo is not None else "") + f" n={cell['n']}"
                row.append(cell)
            cells.append({"judge": first, "cells": row})
        correlation[dim] = {"judges": names, "rows": cells}
    return {"bias": bias, "correlation": correlation, "calibration": calibration, "rounds": min(rounds, MAX_ROUNDS), "resampled_values": RESAMPLED_VALUES}


def _calibration(source: dict, rows: pd.DataFrame, dim: str, majority: pd.DataFrame) -> list[dict]:
    ok = rows[rows["status"] == "ok"].drop_duplicates("pair_id").set_index("pair_id")
    a = pd.to_numeric(ok[f"{dim}_score_a"], errors="coerce")
    b = pd.to_numeric(ok[f"{dim}_score_b"], errors="coerce")
    frame = pd.DataFrame({"a": a, "b": b}).dropna().join(majority, how="inner")
    if not len(frame) or frame["a"].min() < 0 or frame["b"].min() < 0 or frame["a"].max() > 1 or frame["b"].max() > 1:
        return []  # not probabilities after all
    decided = frame[frame["majority"].isin([0.0, 1.0])]
    area = auc((decided["a"] - decided["b"]).to_numpy(float), decided["majority"].to_numpy() == 1.0) if len(decided) else None
    total = (frame["a"] + frame["b"]).to_numpy(float)
    usable = total > 0
    p_a = frame["a"].to_numpy(float)[usable] / total[usable]
    table = reliability(p_a, frame["k"].to_numpy(float)[usable], frame["n"].to_numpy(float)[usable])
    return [{"label": source["label"], "judge": source["judge"], "dimension": dim, "pairs": int(len(frame)), "decided": int(len(decided)), "auc": area, "auc_fmt": _fmt(area), "ece_fmt": _fmt(table["ece"]), **table}]


def judge_diagnostics_section(*, study, majorities: dict, verdicts: pd.DataFrame, pairs: pd.DataFrame, sources: list[dict], rounds: int, seed: int) -> dict | None:
    """The report's `judge_diagnostics` section (None when no judge scored the study)."""
    from .models import Verdict

    if not len(verdicts):
        return None
    rows = list(Verdict.objects.filter(pair__study=study).values_list("run_id", "pair_id", "details__labels", "details__consistent"))
    details = pd.DataFrame.from_records(rows, columns=["run_id", "pair_id", "labels", "consistent"])
    details = details.set_index(["run_id", "pair_id"]) if len(details) else details
    section = judge_diagnostics(majorities=majorities, verdicts=verdicts, pairs=pairs, sources=sources, details=details, rounds=rounds, seed=seed)
    return section if section["bias"] else None

