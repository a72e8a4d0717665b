"""Judge-versus-human comparison with the CMI-RewardBench evaluation rules, over plain rows.

Public, stable functions (report code calls them; keep signatures):

- normalize_label(value) -> "model_a" | "model_b" | "both" | None
- pair_prediction(score_a, score_b) -> "model_a" | "model_b" | None
- match_score(pred, label) -> 1.0 | 0.5 | 0.0 | None
- accuracy(pairs) -> {"accuracy", "n"}
- confidence_bucket(value) -> "<3" | "=3" | ">3" | None
- infer_modality(row) -> modality string or None
- preference_summary(rows, dimensions=...) -> nested dict of accuracies and breakdowns
- mos_correlations(predicted, truth) -> {"lcc", "srcc", "ktau", "n"}
- subset_of(source) -> "CMI-Pref" | "Music Arena" | "PAM" | "MusicEval" | None
- external_summary(rows) -> figures per subset for imported per-row results

A preference row is a dict with, per dimension d in ("alignment", "musicality"):
`pred_<d>` (the judge's label, or None when it gave none), `label_<d>` (the human label, any
spelling normalize_label accepts), optional `confidence_<d>` (1-5, numbers or strings such as
"2.0"), and optional `modality` or `lyrics` / `ref` to infer it. One row per human vote.

Rules (docs/formats.md): per-clip scores predict A only when score(A) > score(B), so ties predict
B; exact match scores 1, "both" on either side (when they differ) 0.5, otherwise 0; labels other
than a/b/both/neither drop the row; MOS correlations come from pandas Series.corr after dropping
missing values, with no value when fewer than two rows remain.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

MODEL_A, MODEL_B, BOTH = "model_a", "model_b", "both"
DIMENSIONS = ("alignment", "musicality")
MODALITIES = ("text", "text+lyrics", "text+ref", "text+lyrics+ref")
NO_REF = ("text", "text+lyrics")
REF = ("text+ref", "text+lyrics+ref")
INSTRUMENTAL = ("text", "text+ref")
VOCAL = ("text+lyrics", "text+lyrics+ref")
BUCKETS = ("<3", "=3", ">3")

_LABELS = {"a": MODEL_A, "model_a": MODEL_A, "b": MODEL_B, "model_b": MODEL_B, "both": BOTH, "neither": BOTH}


def normalize_label(value) -> str | None:
    """The evaluator's label mapping: a/model_a, b/model_b, both/neither -> both; anything else -> None."""
    if not isinstance(value, str):
        return None
    return _LABELS.get(value.strip().lower())


def _number(value) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number


def pair_prediction(score_a, score_b) -> str | None:
    """A when score(A) > score(B), otherwise B (ties predict B); no prediction when a score is missing."""
    a, b = _number(score_a), _number(score_b)
    if a is None or b is None:
        return None
    return MODEL_A if a > b else MODEL_B


def match_score(pred, label) -> float | None:
    """1 for an exact match, 0.5 when either side is "both", 0 otherwise; None drops the row."""
    pred, label = normalize_label(pred), normalize_label(label)
    if pred is None or label is None:
        return None
    if pred == label:
        return 1.0
    if pred == BOTH or label == BOTH:
        return 0.5
    return 0.0


def accuracy(pairs: Iterable[tuple]) -> dict:
    """Mean match score over (pred, label) pairs that count; accuracy None when none do."""
    scores = [s for s in (match_score(p, lab) for p, lab in pairs) if s is not None]
    return {"accuracy": (sum(scores) / len(scores)) if scores else None, "n": len(scores)}


def confidence_bucket(value) -> str | None:
    number = _number(value)
    if number is None:
        return None
    if number < 3:
        return "<3"
    return "=3" if number == 3 else ">3"


def infer_modality(row: dict) -> str | None:
    """`modality` when given; else from non-empty `lyrics` / `ref` when the row carries those keys; else None."""
    modality = row.get("modality")
    if modality in MODALITIES:
        return modality
    if "lyrics" not in row and "ref" not in row:
        return None
    lyrics, ref = bool(str(row.get("lyrics") or "").strip()), bool(str(row.get("ref") or "").strip())
    return {(False, False): "text", (True, False): "text+lyrics", (False, True): "text+ref", (True, True): "text+lyrics+ref"}[(lyrics, ref)]


def _mean(values: list) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if len(present) == len(values) and present else None


def preference_summary(rows: list[dict], dimensions: tuple[str, ...] = DIMENSIONS) -> dict:
    """Accuracy per dimension with the CMI-Pref breakdowns.

    Returns {dim: {"all", "by_modality", "no_ref", "ref", "instrumental", "vocal", "w/o audio",
    "w/ audio", "by_confidence": {"all"|"ref"|"no_ref": {bucket: ...}}, "coverage"}, "headline"}.
    Breakdowns by modality are left out when no row has a known modality.
    """
    out: dict = {}
    for dim in dimensions:
        pred_key, label_key, conf_key = f"pred_{dim}", f"label_{dim}", f"confidence_{dim}"
        labelled = [r for r in rows if normalize_label(r.get(label_key)) is not None]
        answered = [r for r in labelled if normalize_label(r.get(pred_key)) is not None]
        block: dict = {
            "all": accuracy((r.get(pred_key), r.get(label_key)) for r in rows),
            # Share of countable human votes the judge gave a label for (discards and failures lower it).
            "coverage": {"answered": len(answered), "labelled": len(labelled), "share": (len(answered) / len(labelled)) if labelled else None},
        }
        modal = [(infer_modality(r), r) for r in rows]
        if any(m is not None for m, _ in modal):

            def acc(modalities, subset=modal, pred_key=pred_key, label_key=label_key):
                return accuracy((r.get(pred_key), r.get(label_key)) for m, r in subset if m in modalities)

            block["by_modality"] = {m: acc((m,)) for m in MODALITIES}
            block["no_ref"], block["ref"] = acc(NO_REF), acc(REF)
            block["instrumental"], block["vocal"] = acc(INSTRUMENTAL), acc(VOCAL)
            block["w/o audio"] = _mean([block["by_modality"][m]["accuracy"] for m in NO_REF])
            block["w/ audio"] = _mean([block["by_modality"][m]["accuracy"] for m in REF])
        by_conf: dict = {}
        for scope, allowed in (("all", None), ("no_ref", NO_REF), ("ref", REF)):
            if allowed is not None and "by_modality" not in block:
                continue
            by_conf[scope] = {
                bucket: accuracy(
                    (r.get(pred_key), r.get(label_key))
                    for m, r in modal
                    if confidence_bucket(r.get(conf_key)) == bucket and (allowed is None or m in allowed)
                )
                for bucket in BUCKETS
            }
        block["by_confidence"] = by_conf
        out[dim] = block
    out["headline"] = _mean([out[d]["all"]["accuracy"] for d in dimensions])
    return out


def mos_correlations(predicted: Iterable, truth: Iterable) -> dict:
    """Pearson (LCC), Spearman (SRCC) and Kendall tau-b through pandas, after dropping missing values."""
    import pandas as pd

    frame = pd.DataFrame({"pred": [_number(v) for v in predicted], "true": [_number(v) for v in truth]}, dtype=float).dropna()
    n = len(frame)
    if n < 2:
        return {"lcc": None, "srcc": None, "ktau": None, "n": n}

    def corr(method: str) -> float | None:
        value = frame["pred"].corr(frame["true"], method=method)
        return None if value is None or math.isnan(value) else float(value)

    return {"lcc": corr("pearson"), "srcc": corr("spearman"), "ktau": corr("kendall"), "n": n}


def subset_of(source) -> str | None:
    """The CMI-RewardBench subset a row's `source` names."""
    if not isinstance(source, str):
        return None
    if source == "cmi-arena-annotation":
        return "CMI-Pref"
    if "Music Arena" in source:
        return "Music Arena"
    if "PAM" in source:
        return "PAM"
    if "MusicEval" in source or "SongEval" in source:
        return "MusicEval"
    return None


# Score keys of imported rows: MI predicts musicality, TA text alignment.
SCORE_KEYS = {"musicality": "MI", "alignment": "TA"}


def external_summary(rows: list[dict], score_keys: dict | None = None) -> dict:
    """Figures per subset for imported rows ({"subset", "scores_a", "scores_b", "human"}).

    human: CMI-Pref {"alignment": {"preference", "confidence"}, "musicality": {...}, optional
    "modality"/"lyrics"/"ref"}; Music Arena {"preference": "A"|"B"} (musicality only); PAM and
    MusicEval {"musicality_mos", "alignment_mos"}.
    """
    keys = score_keys or SCORE_KEYS
    by_subset: dict[str, list[dict]] = {}
    for row in rows:
        by_subset.setdefault(row["subset"], []).append(row)
    out: dict = {}
    cmi = by_subset.get("CMI-Pref", [])
    if cmi:
        pref_rows = []
        for r in cmi:
            human, a, b = r["human"], r.get("scores_a") or {}, r.get("scores_b") or {}
            item = {k: human[k] for k in ("modality", "lyrics", "ref") if k in human}
            for dim in DIMENSIONS:
                item[f"pred_{dim}"] = pair_prediction(a.get(keys[dim]), b.get(keys[dim]))
                item[f"label_{dim}"] = (human.get(dim) or {}).get("preference")
                item[f"confidence_{dim}"] = (human.get(dim) or {}).get("confidence")
            pref_rows.append(item)
        out["CMI-Pref"] = {"rows": len(cmi), **preference_summary(pref_rows)}
    arena = by_subset.get("Music Arena", [])
    if arena:
        pairs = [
            (pair_prediction((r.get("scores_a") or {}).get(keys["musicality"]), (r.get("scores_b") or {}).get(keys["musicality"])), r["human"].get("preference"))
            for r in arena
        ]
        out["Music Arena"] = {"rows": len(arena), "musicality": accuracy(pairs)}
    for name in ("PAM", "MusicEval"):
        subset = by_subset.get(name, [])
        if not subset:
            continue
        block = {"rows": len(subset)}
        for dim in DIMENSIONS:
            for source_dim in DIMENSIONS:
                truth = [r["human"].get(f"{source_dim}_mos") for r in subset]
                if all(t is None for t in truth):
                    continue
                pred = [(r.get("scores_a") or {}).get(keys[dim]) for r in subset]
                block[f"{keys[dim]}_vs_{source_dim}_mos"] = mos_correlations(pred, truth)
        out[name] = block
    return out
