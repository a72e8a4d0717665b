"""Splits that keep clips apart, intervals by cluster, and the registration rule (plain rows: no database, no audio)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from scoring.evaluation import MAJORITY, VOTE, clustered_accuracy, evaluate, evaluate_clustered, paired_difference, unit_scores
from scoring.reward.baselines import LINEAR
from scoring.reward.data import SPLIT_MODES, split_rows, votes_from_rows
from scoring.reward.measure import measure_split, summarise
from scoring.reward.model import FeatureTable, TrainConfig, TrainingError


def _rows(*, conditions=30, clips=4, systems=6, shared_every=0, seed=0, prompts=None):
    """Votes on every two clips of each condition; clip k of condition c is from system (c + k) % systems.

    With shared_every, every shared_every-th condition reuses the first clip of the condition before it.
    """
    rng = np.random.default_rng(seed)
    rows, t = [], 0.0
    pair_id = 0
    for c in range(conditions):
        names = [f"c{c}-k{k}" for k in range(clips)]
        if shared_every and c % shared_every == 1:
            names[0] = f"c{c - 1}-k0"
        for a, b in itertools.combinations(range(clips), 2):
            pair_id += 1
            for _ in range(3):
                t += 1.0
                rows.append(
                    {
                        "pair_id": pair_id,
                        "condition": f"cond-{c}",
                        "prompt": (prompts[c] if prompts else f"prompt {c}"),
                        "clip_a": names[a],
                        "clip_b": names[b],
                        "system_a": (c + a) % systems,
                        "system_b": (c + b) % systems,
                        "time": t + rng.random(),
                        "label_alignment": "model_a" if rng.random() < 0.5 else "model_b",
                        "label_musicality": "model_a" if rng.random() < 0.5 else "model_b",
                    }
                )
    return rows


def _sides(rows, split, key):
    return [{v for i in side for v in key(rows[i])} for side in (split.train, split.val, split.test)]


@pytest.mark.parametrize("mode", [m for m in SPLIT_MODES if m != "export"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_clip_shared_by_two_conditions_never_lands_on_two_sides(mode, seed):
    rows = _rows(shared_every=2, seed=seed)
    shared = {r["clip_a"] for r in rows if r["condition"] == "cond-1"} & {r["clip_a"] for r in rows if r["condition"] == "cond-0"}
    assert shared  # the fixture does share clips across conditions
    split = split_rows(rows, mode=mode, seed=seed)
    train, val, test = _sides(rows, split, lambda r: (r["clip_a"], r["clip_b"]))
    assert not (train & val or train & test or val & test)
    # The two conditions that share a clip are on one side (or the shared clip's other votes were left out, counted).
    sides = {side for side, idx in (("train", split.train), ("val", split.val), ("test", split.test)) for i in idx if rows[i]["condition"] in ("cond-0", "cond-1")}
    assert len(sides) <= 1 or sum(split.info["left_out"].values()) > 0


def test_a_clip_in_every_condition_is_refused_with_the_reason():
    rows = _rows(conditions=6)
    for r in rows:
        if r["clip_a"].endswith("-k0"):
            r["clip_a"] = "everywhere"
    with pytest.raises(TrainingError, match="clips shared between them join them"):
        split_rows(rows, mode="condition", seed=0)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_a_system_held_out_split_has_no_test_system_in_train(seed):
    rows = _rows(seed=seed)
    split = split_rows(rows, mode="system", seed=seed)
    held = set(split.info["test_systems"])
    assert held
    for side in (split.train, split.val):
        assert not {s for i in side for s in (rows[i]["system_a"], rows[i]["system_b"])} & held
    # Every vote on a held-out system's clip is in the test, and no test clip trains.
    assert all(i in set(split.test) for i, r in enumerate(rows) if r["system_a"] in held or r["system_b"] in held)
    train, val, test = _sides(rows, split, lambda r: (r["clip_a"], r["clip_b"]))
    assert not (train | val) & test


def test_system_splits_enumerate_systems_by_name_so_five_seeds_hold_out_five_systems():
    rows = _rows()
    named = [{**r, "system_a": f"gen-{'fedcba'[r['system_a']]}", "system_b": f"gen-{'fedcba'[r['system_b']]}"} for r in rows]
    held = [split_rows(named, mode="system", seed=s).info["test_systems"] for s in range(5)]
    assert held == [["gen-a"], ["gen-b"], ["gen-c"], ["gen-d"], ["gen-e"]]
    # The database ids behind the names do not enter: the same names in another order of arrival (ids) give the same folds.
    assert [split_rows(list(reversed(named)), mode="system", seed=s).info["test_systems"] for s in range(5)] == held
    # Seed 6 wraps around to fold 0 and says which fold it is.
    again = split_rows(named, mode="system", seed=6).info
    assert (again["test_systems"], again["fold"], again["folds"]) == (["gen-a"], 0, 6)


def test_system_folds_cut_many_systems_into_groups_of_about_the_test_share():
    from scoring.reward.data import system_folds

    folds = system_folds([f"s{k:02d}" for k in range(10)], test_share=0.2)
    assert folds == [["s00", "s01"], ["s02", "s03"], ["s04", "s05"], ["s06", "s07"], ["s08", "s09"]]
    assert system_folds(["b", "a"], test_share=0.2) == [["a"], ["b"]]


def test_a_time_split_trains_only_on_votes_older_than_the_test():
    rows = _rows()
    split = split_rows(rows, mode="time", seed=0)
    first_test = min(rows[i]["time"] for i in split.test)
    assert max(rows[i]["time"] for i in split.train + split.val) < first_test
    # The newest votes are tested.
    assert max(r["time"] for r in rows) in {rows[i]["time"] for i in split.test}


def test_a_prompt_split_keeps_one_prompt_under_different_lyrics_on_one_side():
    prompts = [f"Prompt {c // 3}" if c % 2 else f"prompt  {c // 3}" for c in range(30)]  # three conditions per text, spelled two ways
    rows = _rows(prompts=prompts)
    split = split_rows(rows, mode="prompt", seed=0)
    train, val, test = _sides(rows, split, lambda r: (" ".join(r["prompt"].lower().split()),))
    assert not (train & val or train & test or val & test)
    assert split.info["prompt_units"] == 10


def test_split_seed_changes_the_split():
    rows = _rows()
    assert split_rows(rows, seed=0).test != split_rows(rows, seed=1).test


# --- intervals by cluster ---------------------------------------------------------------------------


def _identical_votes(conditions=24, pairs=5, votes=3, seed=0):
    """Every pair gets `votes` identical votes; the judge is right on a random 70% of pairs."""
    rng = np.random.default_rng(seed)
    rows = []
    for c in range(conditions):
        for p in range(pairs):
            label = "model_a" if rng.random() < 0.5 else "model_b"
            right = rng.random() < 0.7
            pred = label if right else ("model_b" if label == "model_a" else "model_a")
            rows += [{"pair_id": c * 100 + p, "condition": f"c{c}", "label_musicality": label, "pred_musicality": pred}] * votes
    return rows


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cluster_intervals_are_at_least_as_wide_as_vote_level_ones(seed):
    rows = _identical_votes(seed=seed)
    by_vote = evaluate(rows, view=VOTE, dimensions=("musicality",), rounds=2000, seed=seed)["musicality"]["all"]
    by_cluster = evaluate_clustered(rows, view=VOTE, dimensions=("musicality",), rounds=2000, seed=seed)["musicality"]["all"]
    assert by_cluster["accuracy"] == by_vote["accuracy"]
    assert by_cluster["interval"] == {"resamples": "condition", "clusters": 24, "rounds": 2000, "method": "bootstrap"}
    width = lambda ci: ci[1] - ci[0]  # noqa: E731
    # Three identical votes per pair and five pairs per condition: the vote-level interval is far too narrow.
    assert width(by_cluster["ci"]) >= 1.5 * width(by_vote["ci"]), (by_cluster, by_vote)


def test_singleton_conditions_resample_pairs_and_coverage_carries_ties():
    rows = [{"pair_id": p, "condition": f"c{p}", "label_alignment": lab, "pred_alignment": "model_a"} for p in range(10) for lab in ("model_a", "model_a", "model_b")]
    rows += [{"pair_id": 99, "condition": "c99", "label_alignment": lab, "pred_alignment": "model_a"} for lab in ("model_a", "model_b")]
    units = unit_scores(rows, "alignment", view=MAJORITY)
    figure = clustered_accuracy(units, rounds=200)
    assert figure["interval"]["resamples"] == "pair"
    assert figure["coverage"] == {"answered": 10, "labelled": 10, "share": 1.0, "ties": 1}
    assert figure["accuracy"] == 1.0


def test_a_paired_difference_keeps_the_pairing():
    rows = _identical_votes()
    for r in rows:
        r["copy_musicality"] = r["pred_musicality"]
    units = unit_scores(rows, "musicality", view=VOTE, predictors=("pred", "copy"))
    same = paired_difference(units, "pred", "copy", rounds=500)
    assert same["difference"] == 0.0 and same["ci"] == [0.0, 0.0]


# --- registration ----------------------------------------------------------------------------------


def _one_feature_study(seed=0, conditions=40, clips=5):
    """Musicality is clip feature 0 (with 15% flipped votes); alignment depends on the condition."""
    rng = np.random.default_rng(seed)
    feats = rng.standard_normal((conditions * clips, 8))
    cond = rng.standard_normal((conditions, 4))
    rows = []
    for c in range(conditions):
        for i, j in itertools.combinations(range(clips), 2):
            a, b = c * clips + i, c * clips + j
            music = feats[a, 0] > feats[b, 0]
            align = (feats[a, 1] - feats[b, 1]) * np.sign(cond[c, 0]) > 0
            for _ in range(3):
                flip_m, flip_a = rng.random() < 0.15, rng.random() < 0.15
                rows.append(
                    {
                        "pair_id": len(rows) // 3, "condition": c, "clip_a": a, "clip_b": b,
                        "label_musicality": "model_a" if music != flip_m else "model_b",
                        "label_alignment": "model_a" if align != flip_a else "model_b",
                    }
                )  # fmt: skip
    table = FeatureTable(clips=feats, conditions=cond, reference=-np.ones(conditions, dtype=int))
    votes = votes_from_rows(rows, clip_index={k: k for k in range(len(feats))}, condition_index={c: c for c in range(conditions)})
    return table, votes, rows


@pytest.mark.parametrize("seed", [0, 1])
def test_a_study_whose_musicality_is_one_feature_registers_the_linear_model(seed):
    table, votes, rows = _one_feature_study(seed=seed)
    split = split_rows(rows, mode="condition", seed=seed)
    measured = measure_split(table, votes, rows, split, config=TrainConfig(epochs=120, patience=15), seed=0, judge_scores=None, feature_kind="test", rounds=200)
    val = measured.figures["validation"]
    pick = measured.picks["musicality"]
    assert pick in (*LINEAR, "prompt_lowrank") or val["network"]["musicality"] >= max(val[n]["musicality"] for n in LINEAR), val
    # The registered weights are the picked model's: it predicts the test votes as that model does.
    test = measured.figures["test"][VOTE]["musicality"]
    assert test["registered"]["accuracy"] == test[pick if pick != "network" else "network"]["accuracy"]
    assert measured.figures["best_feature"]["musicality"]["feature"] == "test[0]"
    # Every baseline has a paired difference with an interval over test conditions.
    for name, diff in measured.figures["differences"]["musicality"].items():
        if name != "judge_score":
            assert diff["ci"][0] <= diff["ci"][1] and diff["interval"]["resamples"] == "condition", name
    summary = summarise([measured.figures])
    assert summary["single_seed"] and summary["dimensions"]["musicality"]["model"]["sd"] is None
    assert summary["dimensions"]["alignment"]["coverage"]["judge_score"][0]["answered"] == 0


@pytest.mark.parametrize("given, expected", [(None, [0]), ("0,1,2", [0, 1, 2]), ([3, 4], [3, 4]), (" 5 , 6", [5, 6])])
def test_split_seeds_are_parsed_and_kept_apart_from_the_training_seed(given, expected):
    from scoring.reward.services import training_options_clean

    options = {} if given is None else {"split_seeds": given}
    assert training_options_clean(options)["split_seeds"] == expected


@pytest.mark.parametrize("given", ["a,b", "1,1", "-1", ",".join(str(i) for i in range(21)), "", [True]])
def test_bad_split_seeds_are_refused_with_what_is_allowed(given):
    from common.errors import ServiceError
    from scoring.reward.services import training_options_clean

    with pytest.raises(ServiceError, match="split seeds"):
        training_options_clean({"split_seeds": given})
