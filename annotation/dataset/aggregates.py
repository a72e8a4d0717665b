"""The export's aggregated-label columns: per vote row, the pair's Dawid–Skene and MACE labels and the voter's reliability.

Fitted per study on the votes the export writes (withdrawn and excluded annotators are
already left out), so a reader gets the same labels the exported votes support. Labels are
in the row's own terms, like its preference columns: model_a is the clip at audio-path.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from common.crowd import aggregate

DIMENSIONS = ("alignment", "musicality")
METHODS = ("dawid_skene", "mace")
AGGREGATE_KEYS = (
    *(f"aggregate_{method}_preference-{dim}" for method in METHODS for dim in DIMENSIONS),
    "annotator_reliability",
)
AGGREGATE_HELP = (
    "`aggregate_dawid_skene_preference-<dimension>` and `aggregate_mace_preference-<dimension>`: the pair's label "
    "aggregated over every exported vote of its study by a model of each annotator (Dawid–Skene; MACE), in this row's "
    "terms (model_a = the clip at audio-path); null where the model gives no label. `annotator_reliability`: the voter's "
    "Dawid–Skene reliability in the study (chance of reporting the true winner, mean of the two dimensions; 0.5 = a coin)."
)


def aggregate_columns(judgments) -> dict[int, dict]:
    """Judgment id -> the AGGREGATE_KEYS values for its row (ties and imported both / neither votes are not fitted on)."""
    by_study = defaultdict(list)
    for j in judgments:
        by_study[j.pair.study_id].append(j)
    out: dict[int, dict] = {}
    for votes in by_study.values():
        # Content terms throughout (pseudonym, condition and clip hashes, sorted): the models' fits
        # depend on the order of their input, and a re-imported export must give the same columns.
        key = {j.pk: (j.pair.condition.content_key, *sorted((j.pair.clip_a.sha256, j.pair.clip_b.sha256))) for j in votes}
        votes = sorted(votes, key=lambda j: (key[j.pk], j.annotator.annotator_profile.pseudonym))
        labels: dict[str, dict] = {}
        reliability: dict[int, list[float]] = defaultdict(list)
        for dim in DIMENSIONS:
            fitted = [j for j in votes if getattr(j, f"{dim}_choice_id") is not None]
            if not fitted:
                continue
            # Label 1: the clip with the lower hash won.
            result = aggregate(
                [j.annotator.annotator_profile.pseudonym for j in fitted],
                ["/".join(key[j.pk]) for j in fitted],
                [int(getattr(j, f"{dim}_choice_id") == _low_clip(j).pk) for j in fitted],
                rounds=0,
            )
            labels[dim] = result.labels
            for annotator, value in result.reliability["dawid_skene"].items():
                reliability[annotator].append(float(value))
        for j in votes:
            row = dict.fromkeys(AGGREGATE_KEYS)
            shown_a_is_low = j.a_clip_id == _low_clip(j).pk
            task = "/".join(key[j.pk])
            for dim, table in labels.items():
                if task not in table.index:
                    continue
                for method in METHODS:
                    value = table.at[task, method]
                    if np.isfinite(value):
                        row[f"aggregate_{method}_preference-{dim}"] = "model_a" if (value == 1.0) == shown_a_is_low else "model_b"
            pseudonym = j.annotator.annotator_profile.pseudonym
            if reliability.get(pseudonym):
                row["annotator_reliability"] = round(float(np.mean(reliability[pseudonym])), 4)
            out[j.pk] = row
    return out


def _low_clip(judgment):
    pair = judgment.pair
    return pair.clip_a if pair.clip_a.sha256 < pair.clip_b.sha256 else pair.clip_b
