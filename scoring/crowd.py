"""The report's annotator-aware aggregation: Dawid–Skene and MACE labels beside the majority vote,
per-annotator reliability with bootstrap intervals, and each annotator's confidence calibration.

Works on the report's votes frame (included, two-valued votes); the models live in
common.crowd. Labels are in clip terms like everything in the report: 1 = the pair's
stored clip_a won.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from common.crowd import CONFIDENCE_LEVELS, aggregate, calibration

from .evaluation import DIMENSIONS
from .stats import num

# Resamples of the items for the bootstrap reliability intervals (common.crowd.aggregate, interval="bootstrap").
ROUNDS = 200


def _label(value) -> str | None:
    if value is None or not np.isfinite(value):
        return None
    return "clip_a" if value >= 0.5 else "clip_b"


def _labels_out(value: np.ndarray) -> list:
    return np.where(np.isfinite(value), np.where(value >= 0.5, "clip_a", "clip_b"), None).tolist()


def _rounded(value: np.ndarray, digits: int) -> list:
    # num() for a whole column: NaN and infinities become None, Python's round as num's.
    return [round(v, digits) if math.isfinite(v) else None for v in value.tolist()]


def crowd_report(votes: pd.DataFrame, *, seed: int = 0, rounds: int | None = None, interval: str = "analytic", accelerate: bool = True) -> dict:
    """Everything the report's aggregation section and its CSV tables need, JSON-safe.

    interval: "analytic" (the full fit's sandwich covariance, common.crowd_intervals) or "bootstrap"
    (`rounds` resamples of the pairs, each refitted: the report's intervals before, seconds per thousand votes).
    accelerate: MACE's EM with SQUAREM steps (common.crowd.mace_fit), the same fixed point in a tenth of the steps."""
    votes = votes[~votes["excluded"]]
    rounds = ROUNDS if rounds is None else rounds
    out: dict = {"rounds": rounds if interval == "bootstrap" else 0, "interval": interval, "dimensions": {}, "annotators": [], "labels": []}
    if votes.empty:
        return out
    names = votes.groupby("annotator_id")["pseudonym"].first()
    people: dict[int, dict] = {int(a): {"pseudonym": names[a], "votes": 0, "dimensions": {}} for a in names.index}
    for dim in DIMENSIONS:
        result = aggregate(votes["annotator_id"].to_numpy(), votes["pair_id"].to_numpy(), votes[f"pref_{dim}"].to_numpy(), rounds=rounds, seed=seed, interval=interval, accelerate=accelerate)
        labels = result.labels
        overlap = labels["votes"] >= 2
        summary = {"pairs": int(len(labels)), "overlap_pairs": int(overlap.sum()), "majority_ties": int(labels["majority"].isna().sum())}
        for method in ("dawid_skene", "mace"):
            decided = overlap & labels["majority"].notna()
            summary[f"{method}_differs"] = int((labels.loc[decided, method] != labels.loc[decided, "majority"]).sum())
            summary[f"{method}_breaks_ties"] = int((overlap & labels["majority"].isna() & labels[method].notna()).sum())
        out["dimensions"][dim] = summary
        # Column by column: a Python loop over rows took seconds at 100,000 votes.
        columns = zip(
            labels.index.astype(int).tolist(),
            labels["votes"].astype(int).tolist(),
            _labels_out(labels["majority"].to_numpy(float)),
            _labels_out(labels["dawid_skene"].to_numpy(float)),
            _rounded(labels["p_dawid_skene"].to_numpy(float), 4),
            _labels_out(labels["mace"].to_numpy(float)),
            _rounded(labels["p_mace"].to_numpy(float), 4),
            strict=True,
        )
        out["labels"].extend(
            {"pair_id": p, "dimension": dim, "votes": n, "majority": m, "dawid_skene": ds, "p_clip_a_dawid_skene": p_ds, "mace": mace, "p_clip_a_mace": p_mace}
            for p, n, m, ds, p_ds, mace, p_mace in columns
        )
        calib = calibration(votes["annotator_id"], votes["pair_id"], votes[f"pref_{dim}"], votes[f"{dim}_confidence"], labels["dawid_skene"])
        for annotator, rel in result.reliability.iterrows():
            person = people[int(annotator)]
            person["votes"] = max(person["votes"], int(rel["votes"]))
            person["dimensions"][dim] = {
                method: {"estimate": num(rel[method]), "ci": [num(rel.get(f"{method}_low")), num(rel.get(f"{method}_high"))]}
                for method in ("dawid_skene", "mace")
            }
        for dim_row in calib.itertuples(index=False):
            person = people[int(dim_row.worker)]
            levels = person.setdefault("calibration", {}).setdefault(dim, {})
            levels[int(dim_row.level)] = {"n": int(dim_row.n), "agree": int(dim_row.agree)}
    for person in people.values():
        calib = person.pop("calibration", {})
        person["calibration"] = {}
        for dim in DIMENSIONS:
            cells = []
            for level in CONFIDENCE_LEVELS:
                cell = calib.get(dim, {}).get(level, {"n": 0, "agree": 0})
                cells.append({"level": level, **cell, "rate": num(cell["agree"] / cell["n"]) if cell["n"] else None})
            person["calibration"][dim] = cells
        out["annotators"].append(person)
    out["annotators"].sort(key=lambda p: (p["dimensions"].get(DIMENSIONS[0], {}).get("dawid_skene", {}).get("estimate") or 0.0, p["pseudonym"]))
    return out


def pair_labels(votes: pd.DataFrame) -> dict[int, dict]:
    """For the export's columns: {"pairs": pair id -> {dimension: (dawid_skene, mace)} with 1.0 = clip_a,
    0.0 = clip_b, NaN = no label; "reliability": annotator id -> Dawid–Skene reliability, mean of the two dimensions}."""
    votes = votes[~votes["excluded"] & ~votes["tie_any"]]
    per_pair: dict[int, dict] = {}
    reliability: dict[int, list[float]] = {}
    for dim in DIMENSIONS:
        if votes.empty:
            break
        result = aggregate(votes["annotator_id"].to_numpy(), votes["pair_id"].to_numpy(), votes[f"pref_{dim}"].to_numpy(), rounds=0)
        for pair_id, row in result.labels.iterrows():
            per_pair.setdefault(int(pair_id), {})[dim] = (float(row["dawid_skene"]), float(row["mace"]))
        for annotator, value in result.reliability["dawid_skene"].items():
            reliability.setdefault(int(annotator), []).append(float(value))
    return {"pairs": per_pair, "reliability": {a: float(np.mean(v)) for a, v in reliability.items()}}
