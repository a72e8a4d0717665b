"""Imported per-row judge results (TuneJury-shaped) against the human labels published with them.

Rows come from a CMI-RewardBench results file, one per benchmark item, with the judge's scores for
both clips and the published human answer. The evaluation rules (labels, ties predict B, breakdowns)
are scoring.evaluation's; this module only knows the subsets and the file's shape:

- subset_of(source) -> "CMI-Pref" | "Music Arena" | "PAM" | "MusicEval" | None
- external_row_parse(index, raw) -> the stored form of one file row (ServiceError when it is malformed)
- mos_correlations(predicted, truth) -> {"lcc", "srcc", "ktau", "n"}; the summary adds "intervals"
  (95 % percentile intervals of each from resampling rows, scoring.ratings)
- external_summary(rows) -> figures per subset

MOS correlations come from pandas Series.corr after dropping missing values, with no value when
fewer than two rows remain (docs/formats.md).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from common.errors import ServiceError

from .evaluation import DIMENSIONS, VOTE, accuracy, evaluate, number, prefer
from .ratings import correlations_with_intervals

INTERVAL_ROUNDS = 500
# Score keys of imported rows: MI predicts musicality, TA text alignment.
SCORE_KEYS = {"musicality": "MI", "alignment": "TA"}


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


def external_row_parse(index: int, raw) -> dict:
    """One row of a results file in the stored form ({"row_index", "subset", "audio_a", ..., "human"})."""
    if not isinstance(raw, dict):
        raise ServiceError(f"row {index}: expected an object.", code="bad_row")
    subset = subset_of(raw.get("source"))
    if subset is None:
        raise ServiceError(f"row {index}: source {raw.get('source')!r} is not a CMI-RewardBench subset (PAM, MusicEval, Music Arena, cmi-arena-annotation).", code="bad_row")
    if not isinstance(raw.get("audio_a"), str) or not isinstance(raw.get("scores_a"), dict):
        raise ServiceError(f"row {index}: audio_a (text) and scores_a (object) are required.", code="bad_row")
    if subset in ("CMI-Pref", "Music Arena") and (not isinstance(raw.get("audio_b"), str) or not isinstance(raw.get("scores_b"), dict)):
        raise ServiceError(f"row {index}: a {subset} row needs audio_b and scores_b.", code="bad_row")
    if subset == "CMI-Pref":
        pref = raw.get("preference")
        if not isinstance(pref, dict):
            raise ServiceError(f"row {index}: a CMI-Pref row needs a preference object.", code="bad_row")
        human = {
            "alignment": dict(pref.get("instruction_following") or {}),
            "musicality": dict(pref.get("music_quality") or {}),
        }
        for key, target in (("prompt", "prompt"), ("lyrics", "lyrics"), ("ref-audio-path", "ref"), ("modality", "modality")):
            if key in raw:
                human[target] = raw[key]
    elif subset == "Music Arena":
        human = {"preference": raw.get("preference")}
    else:
        human = {"musicality_mos": raw.get("musicality_mos"), "alignment_mos": raw.get("alignment_mos")}
    return {
        "row_index": index,
        "subset": subset,
        "audio_a": raw["audio_a"][:500],
        "audio_b": (raw.get("audio_b") or "")[:500],
        "scores_a": raw["scores_a"],
        "scores_b": raw.get("scores_b") or {},
        "human": human,
    }


def mos_correlations(predicted: Iterable, truth: Iterable) -> dict:
    """Pearson (LCC), Spearman (SRCC) and Kendall tau-b through pandas, after dropping missing values."""
    import pandas as pd  # only imports of result files need pandas here; web code imports this module

    frame = pd.DataFrame({"pred": [number(v) for v in predicted], "true": [number(v) for v in truth]}, dtype=float).dropna()
    n = len(frame)
    if n < 2:
        return {"lcc": None, "srcc": None, "ktau": None, "n": n}

    def corr(method: str) -> float | None:
        value = frame["pred"].corr(frame["true"], method=method)
        return None if value is None or math.isnan(value) else float(value)

    return {"lcc": corr("pearson"), "srcc": corr("spearman"), "ktau": corr("kendall"), "n": n}


def external_summary(rows: list[dict], score_keys: dict | None = None) -> dict:
    """Figures per subset for imported rows ({"subset", "scores_a", "scores_b", "human"}).

    human: CMI-Pref {"alignment": {"preference", "confidence"}, "musicality": {...}, optional
    "modality"/"lyrics"/"ref"}, scored one row per vote (evaluation's VOTE view); Music Arena
    {"preference": "A"|"B"} (musicality only); PAM and MusicEval {"musicality_mos", "alignment_mos"}.
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
                item[f"pred_{dim}"] = prefer(a.get(keys[dim]), b.get(keys[dim]))
                item[f"label_{dim}"] = (human.get(dim) or {}).get("preference")
                item[f"confidence_{dim}"] = (human.get(dim) or {}).get("confidence")
            pref_rows.append(item)
        out["CMI-Pref"] = {"rows": len(cmi), **evaluate(pref_rows, view=VOTE)}
    arena = by_subset.get("Music Arena", [])
    if arena:
        pairs = [
            (prefer((r.get("scores_a") or {}).get(keys["musicality"]), (r.get("scores_b") or {}).get(keys["musicality"])), r["human"].get("preference"))
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
                figures = mos_correlations(pred, truth)
                # 95 % intervals resampling rows (clips), as the ratings report gives them.
                figures["intervals"] = correlations_with_intervals([number(v) for v in pred], [number(v) for v in truth], rounds=INTERVAL_ROUNDS)["intervals"]
                block[f"{keys[dim]}_vs_{source_dim}_mos"] = figures
        out[name] = block
    return out
