"""How far a vote's second answer echoes its first: instruction following against musicality, within one vote.

A listener who prefers a clip on instruction following and then, for the same pair, on musicality may hear both, or
may carry the first answer over (a halo). Asked on one screen the two answers sit side by side; a study can ask them
on separate screens (annotation/services/passes.py). Per group of votes (separate screens, one screen):

- same side: the share of votes whose two dimensions chose the same clip;
- kappa: Cohen's kappa between the two dimensions, each coded as "chose the pair's lower-id clip" (the phi
  coefficient where both dimensions lean the same way), 0 when the dimensions are independent, 1 when copied;
- across people: the same-side share of one annotator's alignment against *another* annotator's musicality on the
  same pair: how often the dimensions agree through the clips alone, with no one's first answer to echo. The
  excess of "same side" over it is the part a person adds; it also holds their own consistent taste, so it bounds
  the carry-over from above, and the separate-against-one-screen difference is the cleaner figure.

Intervals: 95 %, from resampling annotators (a person's habit is the unit that carries over), and beside it from
resampling conditions. Ties and gold / catch pairs are left out. Where a study's pairs were also asked the other
way, in this study or in another one holding the same pairs (same condition and clips), both are shown on the
pairs they share, with the difference and its interval (the two groups resampled apart).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from annotation.models import DimensionPasses, Judgment, Pair, Study
from annotation.selectors import judgments_without_seeded

from .stats import cluster_draws, num, percentile_ci

ROUNDS = 400
MODES = (DimensionPasses.SEPARATE.value, DimensionPasses.TOGETHER.value)
COLUMNS = ["study_id", "annotator_id", "pair_id", "condition_id", "clip_key", "alignment", "musicality", "passes"]


def passes_frame(*, studies, include_seeded: bool = False) -> pd.DataFrame:
    """One row per vote on a regular pair with a clip chosen on both dimensions: `alignment` / `musicality` are 1 where
    the vote chose the pair's lower-id clip; `mode` is how the vote was asked (its own record, not the study's setting now)."""
    judgments = Judgment.objects.filter(pair__study__in=studies, pair__kind=Pair.Kind.REGULAR, alignment_choice__isnull=False, musicality_choice__isnull=False)
    if not include_seeded:
        judgments = judgments_without_seeded(judgments)
    rows = (
        judgments.exclude(annotator__annotator_profile__withdrawn_at__isnull=False)
        .exclude(annotator__annotator_profile__excluded_at__isnull=False)
        .order_by("id")
        .values_list("pair__study_id", "annotator_id", "pair_id", "pair__condition_id", "pair__clip_key", "alignment_choice_id", "musicality_choice_id", "passes")
    )
    frame = pd.DataFrame.from_records(list(rows), columns=COLUMNS)
    low = frame["clip_key"].str.split("-").str[0].astype(float) if len(frame) else pd.Series(dtype=float)
    frame["alignment"] = (frame["alignment"] == low).astype(int)
    frame["musicality"] = (frame["musicality"] == low).astype(int)
    frame["mode"] = [DimensionPasses.SEPARATE.value if (p or {}).get("order") else DimensionPasses.TOGETHER.value for p in frame["passes"]]
    return frame.drop(columns=["passes"])


def _kappa_from_sums(n, x, y, same):
    """Cohen's kappa from totals (arrays alike): n votes, x and y votes coded 1 per dimension, `same` votes alike."""
    with np.errstate(invalid="ignore", divide="ignore"):
        po = same / n
        px, py = x / n, y / n
        pe = px * py + (1 - px) * (1 - py)
        return np.where(pe < 1, (po - pe) / (1 - pe), np.nan)


def _boot(frame: pd.DataFrame, cluster: str, *, rounds: int, seed: int) -> np.ndarray:
    """Resampled (same-side share, kappa) per round, drawing `cluster` units with replacement: rounds x 2."""
    codes = np.unique(frame[cluster].to_numpy(), return_inverse=True)[1].reshape(-1)
    k = int(codes.max()) + 1
    same = (frame["alignment"] == frame["musicality"]).to_numpy(float)
    sums = np.stack([np.bincount(codes, minlength=k).astype(float)] + [np.bincount(codes, weights=v, minlength=k) for v in (frame["alignment"].to_numpy(float), frame["musicality"].to_numpy(float), same)])
    out = np.empty((rounds, 2))
    for start, counts in cluster_draws(k, rounds=rounds, seed=seed):
        n, x, y, s = (counts.astype(float) @ sums.T).T
        out[start : start + len(n), 0] = s / n
        out[start : start + len(n), 1] = _kappa_from_sums(n, x, y, s)
    return out


def _across(frame: pd.DataFrame) -> dict | None:
    """Same-side share of one annotator's alignment against another's musicality on the same pair (ordered pairs of people)."""
    if frame.empty:
        return None
    by_pair = frame.groupby("pair_key")
    n = by_pair.size()
    a1, m1 = by_pair["alignment"].sum(), by_pair["musicality"].sum()
    both = (frame["alignment"] * frame["musicality"]).groupby(frame["pair_key"]).sum()
    neither = ((1 - frame["alignment"]) * (1 - frame["musicality"])).groupby(frame["pair_key"]).sum()
    # Pairs of different votes on the pair: every alignment with every musicality, less each vote with itself.
    agree = a1 * m1 + (n - a1) * (n - m1) - both - neither
    comparisons = n * (n - 1)
    usable = comparisons > 0
    if not usable.any():
        return None
    return {"value": num(agree[usable].sum() / comparisons[usable].sum()), "pairs": int(usable.sum())}


def echo_measure(frame: pd.DataFrame, *, rounds: int = ROUNDS, seed: int = 0) -> dict | None:
    """The figures for one group of votes (columns annotator_id, condition_id, pair_key, alignment, musicality coded 0/1)."""
    if frame.empty:
        return None
    same = float((frame["alignment"] == frame["musicality"]).mean())
    kappa = float(_kappa_from_sums(len(frame), frame["alignment"].sum(), frame["musicality"].sum(), (frame["alignment"] == frame["musicality"]).sum()))
    by_people = _boot(frame, "annotator_id", rounds=rounds, seed=seed)
    by_conditions = _boot(frame, "condition_id", rounds=rounds, seed=seed + 1)
    across = _across(frame)
    return {
        "votes": int(len(frame)),
        "annotators": int(frame["annotator_id"].nunique()),
        "conditions": int(frame["condition_id"].nunique()),
        "same_side": {"value": num(same), "ci": percentile_ci(by_people[:, 0]), "ci_conditions": percentile_ci(by_conditions[:, 0])},
        "kappa": {"value": num(kappa), "ci": percentile_ci(by_people[:, 1]), "ci_conditions": percentile_ci(by_conditions[:, 1])},
        "across_people": across,
        "excess": num(same - across["value"]) if across and across["value"] is not None else None,
        "_boot": by_people,
    }


def _public(figures: dict | None) -> dict | None:
    return None if figures is None else {k: v for k, v in figures.items() if k != "_boot"}


def _difference(separate: dict | None, together: dict | None) -> dict | None:
    """Separate minus one screen, with the interval of the difference of the two groups' independent resamples."""
    if not separate or not together:
        return None
    diff = separate["_boot"] - together["_boot"]
    return {
        "same_side": {"value": num(separate["same_side"]["value"] - together["same_side"]["value"]), "ci": percentile_ci(diff[:, 0])},
        "kappa": {"value": num(separate["kappa"]["value"] - together["kappa"]["value"]), "ci": percentile_ci(diff[:, 1])},
    }


def passes_report(frame: pd.DataFrame, *, study_id: int, companion: tuple[int, str] | None = None, rounds: int = ROUNDS, seed: int = 0) -> dict:
    """The section (JSON-safe): this study's votes by how they were asked, then (where another study holds the same
    pairs asked the other way) both studies on the pairs they share, each with separate minus one screen."""
    out: dict = {"rounds": rounds, "rows": [], "differences": []}
    if frame.empty:
        return out
    frame = frame.assign(pair_key=frame["condition_id"].astype(str) + ":" + frame["clip_key"].astype(str))
    own = frame[frame["study_id"] == study_id]

    def block(votes: pd.DataFrame, scope: str, label_of) -> None:
        figures = {}
        for i, mode in enumerate(MODES):
            part = votes[votes["mode"] == mode]
            figures[mode] = echo_measure(part, rounds=rounds, seed=seed + 10 * i + len(out["rows"]))
            if figures[mode] is not None:
                out["rows"].append({"scope": scope, "group": label_of(part, mode), "mode": mode, **_public(figures[mode])})
        difference = _difference(figures[MODES[0]], figures[MODES[1]])
        if difference:
            out["differences"].append({"scope": scope, **difference})

    block(own, "this study, all its pairs", lambda part, mode: "separate screens" if mode == MODES[0] else "one screen")
    if companion is not None:
        other_id, other_name = companion
        other = frame[frame["study_id"] == other_id]
        shared = set(own["pair_key"]) & set(other["pair_key"])
        if shared:
            both = frame[frame["pair_key"].isin(shared) & frame["study_id"].isin([study_id, other_id])]
            names = {study_id: "this study", other_id: other_name}
            block(both, f"{len(shared)} pairs shared with {other_name}",
                  lambda part, mode: ", ".join(sorted({names[s] for s in part["study_id"]})) + (" (separate screens)" if mode == MODES[0] else " (one screen)"))  # fmt: skip
            out["companion"] = other_name
    return out


def companion_for(study: Study) -> Study | None:
    """The other study asked the other way that holds the most of this study's pairs (same condition and clips)."""
    contents = Pair.objects.filter(study=study, kind=Pair.Kind.REGULAR).values_list("condition_id", "clip_key")
    if not contents:
        return None
    conditions = {c for c, _ in contents}
    keys = set(contents)
    counts: dict[int, int] = {}
    for study_id, condition_id, clip_key in (
        Pair.objects.filter(condition_id__in=conditions, kind=Pair.Kind.REGULAR).exclude(study=study).exclude(study__dimension_passes=study.dimension_passes)
        .values_list("study_id", "condition_id", "clip_key")
    ):  # fmt: skip
        if (condition_id, clip_key) in keys:
            counts[study_id] = counts.get(study_id, 0) + 1
    if not counts:
        return None
    best = max(counts, key=lambda s: (counts[s], -s))
    return Study.objects.get(pk=best)


def passes_section(*, study: Study, rounds: int = ROUNDS, seed: int = 0, include_seeded: bool = False) -> dict:
    companion = companion_for(study)
    studies = [study] + ([companion] if companion else [])
    frame = passes_frame(studies=studies, include_seeded=include_seeded)
    return passes_report(frame, study_id=study.pk, companion=(companion.pk, companion.name) if companion else None, rounds=min(rounds, ROUNDS), seed=seed)
