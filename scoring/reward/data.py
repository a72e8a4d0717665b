"""Votes for the reward model, and train / validation / test splits that cannot leak.

A vote is a plain dict (what services.study_vote_rows builds from the database, or a simulation
builds in memory):

    pair_id, condition (a condition's content key), clip_a, clip_b (clip keys in the pair's
    stored order), split (the pair's export split, "train" or "test"), annotator,
    label_alignment / label_musicality (any label spelling scoring.evaluation accepts),
    confidence_alignment / confidence_musicality (1-5 or None), modality

Every split keeps clips apart: a clip (by content) lies on one side only, so a clip shared by
several conditions cannot be learned in training and scored again in the test. Groups that share
a clip are joined before they are assigned (union-find), and votes that would still put a clip on
two sides are left out and counted, never kept. Modes (what "held out" means):

- "condition": the test conditions were never seen. Conditions (joined through shared clips) are
  shuffled with the split seed and cut into test, validation and training shares.
- "prompt": the test prompt texts were never seen, under any lyrics or reference. Groups are
  prompt texts (case and spacing ignored), joined through shared clips.
- "system": the test systems were never seen. The generating systems, ordered by name, are cut
  into folds of about the test share (system_folds: one system each when the share is below one
  over their number); split seed s holds out fold s mod the number of folds, so seeds 0..N-1 test
  N different folds, the same in every database. Every pair with a clip of one of them is in the
  test, and no clip of theirs is in training or validation. Other votes that share a clip with the test are left out (counted). Prompts may
  have been seen (a held-out system usually answered the same prompts as the others), so the
  model refuses seen clips here, not seen conditions. Validation is a seeded share of the
  remaining conditions.
- "time": the test is the newest votes. Groups (conditions joined through shared clips) are
  ordered by their first vote; the newest test share is the test, the next the validation, the
  rest training. Training and validation votes cast after the test's first vote are left out
  (counted), so the model learns only from what came before.
- "export": the study's export test split (Pair.split); training votes under a test condition
  are left out (counted); validation is a seeded share of the remaining conditions.

The split seed is separate from the training seed: the same network can be trained on several
splits, and the same split can train several networks.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

import numpy as np

from ..evaluation import BOTH, DIMENSIONS, MODEL_A, MODEL_B, normalize_label
from .model import TrainingError, Votes

SPLIT_MODES = ("condition", "prompt", "system", "time", "export")
TARGET = {MODEL_A: 1.0, MODEL_B: 0.0, BOTH: 0.5}
SIDES = ("train", "val", "test")


@dataclass
class Split:
    train: list[int]
    val: list[int]
    test: list[int]
    info: dict = field(default_factory=dict)

    def conditions(self, rows: list[dict], side: str) -> set[str]:
        return {rows[i]["condition"] for i in getattr(self, side)}


class _Groups:
    """Union-find over group names; two groups that share a clip become one."""

    def __init__(self):
        self.parent: dict = {}

    def find(self, x):
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a, b) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            # The smaller name wins, so the result does not depend on the order rows arrive in.
            self.parent[max(ra, rb, key=repr)] = min(ra, rb, key=repr)


def prompt_key(text: str) -> str:
    return re.sub(r"\s+", " ", (text or "").strip().lower())


def _joined(rows: list[dict], unit, indices=None) -> dict[int, object]:
    """Row index -> group: the row's unit joined with every unit that shares a clip with it."""
    indices = range(len(rows)) if indices is None else indices
    groups, owner = _Groups(), {}
    for i in indices:
        u = ("u", unit(rows[i]))
        groups.find(u)
        for clip in (rows[i]["clip_a"], rows[i]["clip_b"]):
            if clip in owner:
                groups.union(u, owner[clip])
            else:
                owner[clip] = u
    return {i: groups.find(("u", unit(rows[i]))) for i in indices}


def _cut(names: list, *, test_share: float, val_share: float, what: str, joined: bool) -> tuple[set, set]:
    """(test, val) names from an already ordered list; the rest trains."""
    if len(names) < 3:
        why = " (clips shared between them join them into fewer groups)" if joined else ""
        raise TrainingError(f"{len(names)} group(s) of {what}{why}: this split needs at least 3 (train, validation, test)")
    n_test = max(1, round(len(names) * test_share))
    n_val = max(1, round(len(names) * val_share))
    if len(names) - n_test - n_val < 1:
        n_val = max(1, len(names) - n_test - 1)
    return set(names[:n_test]), set(names[n_test : n_test + n_val])


def split_rows(rows: list[dict], *, mode: str = "condition", seed: int = 0, val_share: float = 0.15, test_share: float = 0.2) -> Split:
    """Indices of rows per side; see the module docstring. `seed` is the split seed."""
    if mode not in SPLIT_MODES:
        raise TrainingError(f"split must be one of {', '.join(SPLIT_MODES)}, not {mode!r}")
    if not (0 < val_share < 1 and 0 < test_share < 1 and val_share + test_share < 1):
        raise TrainingError("val_share and test_share must be between 0 and 1 and leave room for training")
    rng = random.Random(f"reward-split:{seed}")
    side_of: dict[int, str] = {}
    extra: dict = {}
    if mode in ("condition", "prompt"):
        unit = (lambda r: r["condition"]) if mode == "condition" else (lambda r: prompt_key(r.get("prompt", r["condition"])))
        group = _joined(rows, unit)
        names = sorted(set(group.values()), key=repr)
        units = len({unit(r) for r in rows})
        rng.shuffle(names)
        what = "conditions" if mode == "condition" else "prompt texts"
        test_g, val_g = _cut(names, test_share=test_share, val_share=val_share, what=what, joined=len(names) < units)
        side_of = {i: "test" if g in test_g else "val" if g in val_g else "train" for i, g in group.items()}
        extra = {"groups": len(names), f"{mode}_units": units}
    elif mode == "time":
        group = _joined(rows, lambda r: r["condition"])
        first: dict = {}
        for i, g in group.items():
            first[g] = min(first.get(g, (np.inf, i)), (_time(rows[i]), i))
        names = sorted(first, key=lambda g: first[g], reverse=True)
        test_g, val_g = _cut(names, test_share=test_share, val_share=val_share, what="conditions", joined=len(names) < len({r["condition"] for r in rows}))
        cutoff = min(first[g] for g in test_g)
        for i, g in group.items():
            side = "test" if g in test_g else "val" if g in val_g else "train"
            side_of[i] = side if side == "test" or (_time(rows[i]), i) < cutoff else "late"
        extra = {"groups": len(names), "test_from": cutoff[0] if np.isfinite(cutoff[0]) else None}
    elif mode == "system":
        systems = sorted({s for r in rows for s in (r.get("system_a"), r.get("system_b")) if s is not None}, key=str)
        if len(systems) < 2:
            raise TrainingError(f"{len(systems)} generating system(s) among the voted clips: holding systems out needs at least 2 (set Clip.system on import)")
        folds = system_folds(systems, test_share=test_share)
        held = set(folds[seed % len(folds)])
        test_rows = [i for i, r in enumerate(rows) if r.get("system_a") in held or r.get("system_b") in held]
        test_clips = {rows[i][k] for i in test_rows for k in ("clip_a", "clip_b")}
        rest = [i for i in range(len(rows)) if i not in set(test_rows)]
        shared = {i for i in rest if rows[i]["clip_a"] in test_clips or rows[i]["clip_b"] in test_clips}
        rest = [i for i in rest if i not in shared]
        group = _joined(rows, lambda r: r["condition"], rest)
        names = sorted(set(group.values()), key=repr)
        if len(names) < 2:
            raise TrainingError(f"{len(names)} group(s) of conditions outside the held-out systems: training and validation need at least 2")
        rng.shuffle(names)
        val_g = set(names[: max(1, min(len(names) - 1, round(len(names) * val_share / (1 - test_share))))])
        side_of = {i: "test" for i in test_rows} | {i: "shared" for i in shared} | {i: "val" if g in val_g else "train" for i, g in group.items()}
        extra = {"systems": len(systems), "test_systems": sorted(held, key=str), "fold": seed % len(folds), "folds": len(folds)}
    else:
        test_c = {r["condition"] for r in rows if r.get("split") == "test"}
        if not test_c:
            raise TrainingError("the study has no test split: export it with --balanced-test, or train with split=condition")
        test_rows = [i for i, r in enumerate(rows) if r.get("split") == "test"]
        test_clips = {rows[i][k] for i in test_rows for k in ("clip_a", "clip_b")}
        rest = [i for i, r in enumerate(rows) if r["condition"] not in test_c and r["clip_a"] not in test_clips and r["clip_b"] not in test_clips]
        group = _joined(rows, lambda r: r["condition"], rest)
        names = sorted(set(group.values()), key=repr)
        if len(names) < 2:
            raise TrainingError(f"{len(names)} group(s) of conditions outside the test split: training and validation need at least 2")
        rng.shuffle(names)
        val_g = set(names[: max(1, min(len(names) - 1, round(len(names) * val_share / (1 - test_share))))])
        side_of = {i: "test" for i in test_rows} | {i: "val" if g in val_g else "train" for i, g in group.items()}
        for i in range(len(rows)):
            side_of.setdefault(i, "under_test" if rows[i]["condition"] in test_c else "shared")
    sides: dict[str, list[int]] = {s: [] for s in SIDES}
    left_out: dict[str, int] = {}
    for i in range(len(rows)):
        side = side_of.get(i)
        if side in sides:
            sides[side].append(i)
        else:
            left_out[side] = left_out.get(side, 0) + 1
    split = Split(sides["train"], sides["val"], sides["test"])
    if not split.test or not split.val or not split.train:
        empty = [s for s in SIDES if not sides[s]]
        raise TrainingError(f"the {mode} split leaves no votes for {', '.join(empty)}; more conditions or systems are needed")
    check_disjoint(rows, split, conditions=mode != "system")
    names = {"late": "training or validation votes cast after the test began", "shared": "votes sharing a clip with the test", "under_test": "votes under a test condition outside the test"}
    split.info = {
        "mode": mode,
        "seed": seed,
        "val_share": val_share,
        "test_share": test_share,
        **{f"{side}_votes": len(idx) for side, idx in sides.items()},
        **{f"{side}_pairs": len({rows[i]["pair_id"] for i in idx}) for side, idx in sides.items()},
        **{f"{side}_conditions": len({rows[i]["condition"] for i in idx}) for side, idx in sides.items()},
        **{f"{side}_clips": len({rows[i][k] for i in idx for k in ("clip_a", "clip_b")}) for side, idx in sides.items()},
        "left_out": {names[k]: v for k, v in sorted(left_out.items())},
        "left_out_votes_under_test_conditions": left_out.get("under_test", 0),
        **extra,
    }
    return split


def system_folds(systems, *, test_share: float) -> list[list]:
    """The system split's folds: systems ordered by name and cut into consecutive folds of about test_share each.

    Enumerated, not drawn: split seed s holds out fold s mod (number of folds), so N seeds below the
    number of folds test N different folds, and the same names give the same folds in every database.
    With a share below 1 / N (six systems at 0.2) every fold is one system: leave-one-system-out.
    """
    ordered = sorted(systems, key=str)
    held = max(1, min(len(ordered) - 1, round(len(ordered) * test_share)))
    count = max(2, len(ordered) // held)
    return [list(part) for part in np.array_split(np.asarray(ordered, dtype=object), count)]


def _time(row: dict) -> float:
    value = row.get("time")
    return float(value) if value is not None else np.inf


def check_disjoint(rows: list[dict], split: Split, *, conditions: bool = True) -> None:
    """The invariant the split exists for (clips, pairs and, outside the system mode, conditions); a failure is a bug."""
    def clips(r):
        return (r["clip_a"], r["clip_b"])

    checks = [("clip", clips), ("pair", lambda r: (r["pair_id"],))] + ([("condition", lambda r: (r["condition"],))] if conditions else [])
    for name, key in checks:
        seen = [{k for i in side for k in key(rows[i])} for side in (split.train, split.val, split.test)]
        if seen[0] & seen[1] or seen[0] & seen[2] or seen[1] & seen[2]:
            raise AssertionError(f"split leaks: a {name} is on two sides")


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
    """(annotator, dimension) -> Dawid–Skene reliability fitted on these votes (common.crowd); ties are not fitted on."""
    from common.crowd import aggregate

    out = {}
    for j, dim in enumerate(DIMENSIONS):
        target = targets(rows)[:, j]
        keep = [i for i in range(len(rows)) if target[i] in (0.0, 1.0)]
        if keep:
            fit = aggregate([rows[i]["annotator"] for i in keep], [rows[i]["pair_id"] for i in keep], [int(target[i]) for i in keep], rounds=0, methods=("dawid_skene",))
            out.update({(annotator, dim): float(value) for annotator, value in fit.reliability["dawid_skene"].items()})
    return out


def reliability_weights(rows: list[dict], fit: list[int] | None = None) -> np.ndarray:
    """(n, 2) per-vote weights 2r - 1 (floor 0.01) from Dawid–Skene reliabilities r fitted on rows[fit] only.

    Fitted on the training votes alone when they weight training, so no test vote moves a training
    weight. An annotator with no fitted vote (seen only in validation or test) gets the mean weight of
    the fitted votes on that dimension, neither trusted nor silenced.
    """
    fit = list(range(len(rows))) if fit is None else list(fit)
    reliability = annotator_reliability([rows[i] for i in fit])
    out = np.empty((len(rows), len(DIMENSIONS)))
    for j, dim in enumerate(DIMENSIONS):
        known = [max(0.01, 2.0 * reliability[(rows[i]["annotator"], dim)] - 1.0) for i in fit if (rows[i]["annotator"], dim) in reliability]
        fallback = float(np.mean(known)) if known else 1.0
        for i, row in enumerate(rows):
            r = reliability.get((row["annotator"], dim))
            out[i, j] = fallback if r is None else max(0.01, 2.0 * r - 1.0)
    return out


def with_reliability_weights(votes: Votes, rows: list[dict], fit: list[int]) -> Votes:
    """The same votes with the weight column from reliabilities fitted on rows[fit] (reliability_weights)."""
    return Votes(votes.clip_a, votes.clip_b, votes.condition, votes.target, reliability_weights(rows, fit))


def votes_from_rows(rows: list[dict], *, clip_index: dict, condition_index: dict, weight_by: str = "confidence") -> Votes:
    """Vote arrays for the network: clips and conditions as rows of the feature table.

    weight_by="reliability": the per-vote weight column (read when the training config's
    confidence_weight is on) carries the annotator's Dawid–Skene reliability r as 2r - 1 (how far above
    a coin), floored at 0.01, instead of the stated confidence: a coin or a flipper weighs next to nothing.
    Fitted here on every row; a training run refits it per split on the training votes alone
    (with_reliability_weights).
    """
    if weight_by not in ("confidence", "reliability"):
        raise TrainingError(f"weight_by must be confidence or reliability, not {weight_by!r}")
    if weight_by == "reliability":
        weights = reliability_weights(rows)
    else:
        weights = [[_confidence(r.get(f"confidence_{dim}")) for dim in DIMENSIONS] for r in rows]
    return Votes(
        clip_a=[clip_index[r["clip_a"]] for r in rows],
        clip_b=[clip_index[r["clip_b"]] for r in rows],
        condition=[condition_index[r["condition"]] for r in rows],
        target=targets(rows),
        confidence=weights,
    )
