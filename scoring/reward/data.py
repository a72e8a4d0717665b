"""Votes for the reward model, and train / validation / test splits that cannot leak.

A vote is a plain dict (what services.study_vote_rows builds from the database, or a simulation
builds in memory):

    pair_id, condition (a condition's content key), clip_a, clip_b (clip keys in the pair's
    stored order), split (the pair's export split, "train" or "test"), annotator,
    label_alignment / label_musicality (any label spelling scoring.evaluation accepts),
    confidence_alignment / confidence_musicality (1-5 or None), modality

Splits group by condition: every vote of a condition lands on one side, so no pair (a pair
belongs to one condition) and no condition is ever on two sides.

- "condition": the conditions, sorted and shuffled with the seed, are cut into test,
  validation and training shares.
- "export": the test side is the study's export test split (Pair.split); conditions of those
  pairs are held out entirely, so training votes under a test condition are left out (counted);
  validation is a seeded share of the remaining conditions.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import numpy as np

from ..evaluation import BOTH, DIMENSIONS, MODEL_A, MODEL_B, normalize_label
from .model import TrainingError, Votes

SPLIT_MODES = ("condition", "export")
TARGET = {MODEL_A: 1.0, MODEL_B: 0.0, BOTH: 0.5}


@dataclass
class Split:
    train: list[int]
    val: list[int]
    test: list[int]
    info: dict = field(default_factory=dict)

    def conditions(self, rows: list[dict], side: str) -> set[str]:
        return {rows[i]["condition"] for i in getattr(self, side)}


def split_rows(rows: list[dict], *, mode: str = "condition", seed: int = 0, val_share: float = 0.15, test_share: float = 0.2) -> Split:
    """Indices of rows per side, grouped by condition; see the module docstring."""
    if mode not in SPLIT_MODES:
        raise TrainingError(f"split must be one of {', '.join(SPLIT_MODES)}, not {mode!r}")
    if not (0 < val_share < 1 and 0 < test_share < 1 and val_share + test_share < 1):
        raise TrainingError("val_share and test_share must be between 0 and 1 and leave room for training")
    conditions = sorted({r["condition"] for r in rows})
    rng = random.Random(f"reward-split:{seed}")
    left_out: list[int] = []
    if mode == "condition":
        if len(conditions) < 3:
            raise TrainingError(f"{len(conditions)} condition(s) with votes: a split by condition needs at least 3 (train, validation, test)")
        rng.shuffle(conditions)
        n_test = max(1, round(len(conditions) * test_share))
        n_val = max(1, round(len(conditions) * val_share))
        if len(conditions) - n_test - n_val < 1:
            n_val = max(1, len(conditions) - n_test - 1)
        test_c, val_c = set(conditions[:n_test]), set(conditions[n_test : n_test + n_val])
    else:
        test_c = {r["condition"] for r in rows if r.get("split") == "test"}
        if not test_c:
            raise TrainingError("the study has no test split: export it with --balanced-test, or train with split=condition")
        rest = sorted(set(conditions) - test_c)
        if len(rest) < 2:
            raise TrainingError(f"{len(rest)} condition(s) outside the test split: training and validation need at least 2")
        rng.shuffle(rest)
        val_c = set(rest[: max(1, round(len(rest) * val_share / (1 - test_share)))])
        if len(val_c) == len(rest):
            val_c = set(rest[:1])
        left_out = [i for i, r in enumerate(rows) if r["condition"] in test_c and r.get("split") != "test"]
    dropped = set(left_out)
    sides: dict[str, list[int]] = {"train": [], "val": [], "test": []}
    for i, row in enumerate(rows):
        if i in dropped:
            continue
        c = row["condition"]
        sides["test" if c in test_c else "val" if c in val_c else "train"].append(i)
    split = Split(sides["train"], sides["val"], sides["test"])
    _check_disjoint(rows, split)
    split.info = {
        "mode": mode,
        "seed": seed,
        "val_share": val_share,
        "test_share": test_share,
        **{f"{side}_votes": len(idx) for side, idx in sides.items()},
        **{f"{side}_pairs": len({rows[i]["pair_id"] for i in idx}) for side, idx in sides.items()},
        **{f"{side}_conditions": len({rows[i]["condition"] for i in idx}) for side, idx in sides.items()},
        "left_out_votes_under_test_conditions": len(left_out),
    }
    return split


def _check_disjoint(rows: list[dict], split: Split) -> None:
    """The invariant the split exists for; a failure here is a bug, not bad data."""
    for key in ("condition", "pair_id"):
        seen = [{rows[i][key] for i in side} for side in (split.train, split.val, split.test)]
        if seen[0] & seen[1] or seen[0] & seen[2] or seen[1] & seen[2]:
            raise AssertionError(f"split leaks: a {key} is on two sides")


def targets(rows: list[dict]) -> np.ndarray:
    """(n, 2) Bradley–Terry targets per dimension: A 1, B 0, both 0.5, anything else NaN (not trained on)."""
    out = np.full((len(rows), len(DIMENSIONS)), np.nan)
    for i, row in enumerate(rows):
        for j, dim in enumerate(DIMENSIONS):
            label = normalize_label(row.get(f"label_{dim}"))
            if label is not None:
                out[i, j] = TARGET[label]
    return out


def _confidence(value) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return np.nan
    return number if np.isfinite(number) else np.nan


def annotator_reliability(rows: list[dict]) -> dict[tuple, float]:
    """(annotator, dimension) -> Dawid–Skene reliability fitted on these votes (auditorium.crowd); ties are not fitted on."""
    from auditorium.crowd import aggregate

    out = {}
    for j, dim in enumerate(DIMENSIONS):
        target = targets(rows)[:, j]
        keep = [i for i in range(len(rows)) if target[i] in (0.0, 1.0)]
        if keep:
            fit = aggregate([rows[i]["annotator"] for i in keep], [rows[i]["pair_id"] for i in keep], [int(target[i]) for i in keep], rounds=0, methods=("dawid_skene",))
            out.update({(annotator, dim): float(value) for annotator, value in fit.reliability["dawid_skene"].items()})
    return out


def votes_from_rows(rows: list[dict], *, clip_index: dict, condition_index: dict, weight_by: str = "confidence") -> Votes:
    """Vote arrays for the network: clips and conditions as rows of the feature table.

    weight_by="reliability": the per-vote weight column (read when the training config's
    confidence_weight is on) carries the annotator's Dawid–Skene reliability r as 2r - 1 (how far above
    a coin), floored at 0.01, instead of the stated confidence: a coin or a flipper weighs next to nothing.
    """
    if weight_by not in ("confidence", "reliability"):
        raise TrainingError(f"weight_by must be confidence or reliability, not {weight_by!r}")
    if weight_by == "reliability":
        reliability = annotator_reliability(rows)
        weights = [[max(0.01, 2.0 * reliability.get((r["annotator"], dim), 0.5) - 1.0) for dim in DIMENSIONS] for r in rows]
    else:
        weights = [[_confidence(r.get(f"confidence_{dim}")) for dim in DIMENSIONS] for r in rows]
    return Votes(
        clip_a=[clip_index[r["clip_a"]] for r in rows],
        clip_b=[clip_index[r["clip_b"]] for r in rows],
        condition=[condition_index[r["condition"]] for r in rows],
        target=targets(rows),
        confidence=weights,
    )
