"""Does the crowd get worse as a study goes on? Agreement, gold accuracy and listening time by day and by batch.

Fatigue, a bad batch of recruits or a change in the pairs shows as a slide over the study's days
or between recruitment links. Each group (a UTC day of voting, or a recruitment link; annotators
invited by hand form the batch "invited") gets:

- agreement: the share of its votes that match the majority of the *other* annotators' votes on
  the same pair (any group; a tied or missing majority leaves the vote out), both dimensions;
- gold accuracy: the share of its answers on gold and catch pairs that give the expected clip;
- listening: the median seconds heard per vote (both clips together).

Intervals: 95 %, resampling the group's annotators (a person's votes are not independent), so a
group of two people has a wide interval, as it should. A group is flagged when its interval lies
wholly below the rest of the study's figure (the other groups pooled).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from django.db.models import FloatField
from django.db.models.fields.json import KT
from django.db.models.functions import Cast, TruncDate

from annotation.models import Judgment
from annotation.selectors import judgments_without_seeded

from .stats import cluster_bootstrap, num, percentile_ci

ROUNDS = 400
COLUMNS = [
    "annotator_id",
    "pair_id",
    "day",
    "link_id",
    "link_label",
    "kind",
    "expected_alignment",
    "expected_musicality",
    "alignment",
    "musicality",
    "heard_a",
    "heard_b",
]


def drift_frame(*, study, include_seeded: bool = False) -> pd.DataFrame:
    """One row per included vote, with its day and its annotator's recruitment link."""
    judgments = Judgment.objects.filter(pair__study=study)
    if not include_seeded:
        judgments = judgments_without_seeded(judgments)
    rows = (
        judgments.exclude(annotator__annotator_profile__withdrawn_at__isnull=False)
        .exclude(annotator__annotator_profile__excluded_at__isnull=False)
        .annotate(
            day=TruncDate("created_at"),
            heard_a=Cast(KT("listening_log__A__seconds"), FloatField()),
            heard_b=Cast(KT("listening_log__B__seconds"), FloatField()),
        )
        .order_by("id")
        .values_list(
            "annotator_id",
            "pair_id",
            "day",
            "annotator__external_participant__link_id",
            "annotator__external_participant__link__label",
            "pair__kind",
            "pair__expected_alignment_id",
            "pair__expected_musicality_id",
            "alignment_choice_id",
            "musicality_choice_id",
            "heard_a",
            "heard_b",
        )
    )
    return pd.DataFrame.from_records(list(rows), columns=COLUMNS)


def _agreement_scores(frame: pd.DataFrame) -> pd.Series:
    """Per vote: 1/0 agreement with the other annotators' majority on its pair, averaged over the dimensions it can be scored on.

    Each other annotator counts once per clip they chose on the pair (a repeat is not a second
    opinion), and the voter's own votes are left out. A pair has two clips, so the others for
    this vote's clip against the others for the rest decide it; a tie or no one decides nothing.
    """
    scores = pd.DataFrame(index=frame.index)
    for dim in ("alignment", "musicality"):
        votes = frame[["annotator_id", "pair_id", dim]].dropna()
        distinct = votes.drop_duplicates()
        for_choice = distinct.groupby(["pair_id", dim]).size().rename("for_choice")
        on_pair = distinct.groupby("pair_id").size().rename("on_pair")
        own_choices = distinct.groupby(["annotator_id", "pair_id"]).size().rename("own_choices")
        joined = votes.join(for_choice, on=["pair_id", dim]).join(on_pair, on="pair_id").join(own_choices, on=["annotator_id", "pair_id"])
        same = joined["for_choice"] - 1
        other = (joined["on_pair"] - joined["own_choices"]) - same
        agree = pd.Series(np.where(same > other, 1.0, np.where(same < other, 0.0, np.nan)), index=votes.index)
        scores[dim] = agree.reindex(frame.index)
    return scores.mean(axis=1, skipna=True)


def _gold_scores(frame: pd.DataFrame) -> pd.Series:
    checked = frame["kind"].isin(["gold", "catch"])
    hits = []
    for dim in ("alignment", "musicality"):
        expected = frame[f"expected_{dim}"]
        usable = checked & expected.notna() & frame[dim].notna()
        hits.append((frame[dim] == expected).where(usable).astype(float).where(usable))
    return pd.concat(hits, axis=1).mean(axis=1, skipna=True)


def _share(scores: pd.Series, annotators: pd.Series, *, rounds: int, seed: int) -> dict | None:
    usable = scores.notna()
    if not usable.any():
        return None
    values, people = scores[usable].to_numpy(float), annotators[usable].to_numpy()
    boot = cluster_bootstrap(values[None, :], people, rounds=rounds, seed=seed)[:, 0]
    return {"value": num(values.mean()), "ci": percentile_ci(boot), "n": int(usable.sum()), "annotators": int(len(set(people)))}


def _median(values: pd.Series, annotators: pd.Series, *, rounds: int, seed: int) -> dict | None:
    usable = values.notna()
    if not usable.any():
        return None
    values, people = values[usable].to_numpy(float), annotators[usable].to_numpy()
    groups = [values[people == p] for p in np.unique(people)]
    rng = np.random.default_rng(seed)
    boot = np.array([np.median(np.concatenate([groups[i] for i in rng.integers(0, len(groups), len(groups))])) for _ in range(rounds)])
    return {"value": num(float(np.median(values))), "ci": percentile_ci(boot), "n": int(len(values)), "annotators": len(groups)}


def _below(group: dict | None, rest: dict | None) -> bool:
    return bool(group and rest and group["ci"][1] is not None and rest["value"] is not None and group["ci"][1] < rest["value"])


def drift_report(frame: pd.DataFrame, *, rounds: int = ROUNDS, seed: int = 0) -> dict:
    """The section's figures (JSON-safe): {"by_day": [...], "by_batch": [...], "flags": [...]}."""
    out: dict = {"rounds": rounds, "by_day": [], "by_batch": [], "flags": []}
    if frame.empty:
        return out
    frame = frame.reset_index(drop=True)
    frame["agreement"] = _agreement_scores(frame)
    frame["gold"] = _gold_scores(frame)
    frame["heard"] = frame["heard_a"].astype(float) + frame["heard_b"].astype(float)
    frame["batch"] = np.where(frame["link_id"].notna(), frame["link_label"].fillna("").astype(str), "invited")
    blank = (frame["batch"] == "") & frame["link_id"].notna()
    frame.loc[blank, "batch"] = "link " + frame.loc[blank, "link_id"].astype(int).astype(str)
    frame["day"] = frame["day"].astype(str)

    for key, column in (("by_day", "day"), ("by_batch", "batch")):
        groups = sorted(frame[column].unique())
        for i, name in enumerate(groups):
            part, rest = frame[frame[column] == name], frame[frame[column] != name]
            row = {
                "group": name,
                "votes": int(len(part)),
                "annotators": int(part["annotator_id"].nunique()),
                "agreement": _share(part["agreement"], part["annotator_id"], rounds=rounds, seed=seed + i),
                "gold": _share(part["gold"], part["annotator_id"], rounds=rounds, seed=seed + i),
                "listening_seconds": _median(part["heard"], part["annotator_id"], rounds=rounds, seed=seed + i),
            }
            out[key].append(row)
            if len(groups) < 2:
                continue
            for figure in ("agreement", "gold"):
                others = _share(rest[figure], rest["annotator_id"], rounds=0, seed=seed)
                if _below(row[figure], others):
                    out["flags"].append(
                        {
                            "grouping": column,
                            "group": name,
                            "figure": figure,
                            "detail": f"{figure} {row[figure]['value']:.2f} [{row[figure]['ci'][0]:.2f}, {row[figure]['ci'][1]:.2f}] "
                            f"is below the rest of the study ({others['value']:.2f})",
                        }
                    )
    return out


def drift_section(*, study, rounds: int = ROUNDS, seed: int = 0, include_seeded: bool = False) -> dict:
    return drift_report(drift_frame(study=study, include_seeded=include_seeded), rounds=min(rounds, ROUNDS), seed=seed)
