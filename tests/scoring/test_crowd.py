"""Annotator-aware aggregation: the models recover a known truth, flag a flipper, give intervals, and reach the report."""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pandas as pd
import pytest
from django.test import TestCase, override_settings
from django.urls import reverse

from common.crowd import _codes, aggregate, calibration, ds_crowdkit, mace_crowdkit, mace_crowdkit_start, mace_fit, majority_labels
from scoring import report, report_tables
from scoring.crowd import crowd_report, pair_labels
from tests.factories import AnnotatorFactory, JudgmentFactory, PairFactory, StudyFactory, UserFactory


def simulated(*, seed=0, items=150, spam=4, flip=2, honest=6, per_item=4):
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 2, items)
    accuracy = np.r_[rng.uniform(0.8, 0.95, honest), np.full(spam, 0.5), np.full(flip, 0.1)]
    workers, tasks, labels = [], [], []
    for t in range(items):
        for w in rng.choice(len(accuracy), per_item, replace=False):
            workers.append(int(w))
            tasks.append(t)
            labels.append(int(truth[t]) if rng.random() < accuracy[w] else 1 - int(truth[t]))
    return np.array(workers), np.array(tasks), np.array(labels), truth, accuracy


def test_models_beat_majority_and_spot_the_flippers():
    workers, tasks, labels, truth, accuracy = simulated()
    result = aggregate(workers, tasks, labels, rounds=200, seed=1)
    labelled = result.labels.reindex(range(len(truth)))
    majority = np.where(labelled["majority"].isna(), 0.5, labelled["majority"] == truth).mean()
    ds = (labelled["dawid_skene"] == truth).mean()
    assert ds > majority + 0.05
    rel = result.reliability
    flippers = [w for w in range(len(accuracy)) if accuracy[w] < 0.5]
    honest = [w for w in range(len(accuracy)) if accuracy[w] > 0.7]
    assert (rel.loc[flippers, "dawid_skene"] < 0.3).all()
    assert (rel.loc[honest, "dawid_skene"] > 0.7).all()
    # MACE: a flipper does not "know" the answer either.
    assert rel.loc[flippers, "mace"].max() < rel.loc[honest, "mace"].min()
    # Bootstrap intervals: ordered, not degenerate, and the flippers' lie below the honest annotators'.
    assert (rel["dawid_skene_low"] <= rel["dawid_skene_high"]).all() and (rel["dawid_skene_high"] - rel["dawid_skene_low"]).max() > 0
    assert rel.loc[flippers, "dawid_skene_high"].max() < rel.loc[honest, "dawid_skene_low"].min()


def test_majority_tie_has_no_label_and_bad_labels_are_refused():
    frame = pd.DataFrame({"worker": [1, 2, 1, 2, 3], "task": [10, 10, 11, 11, 11], "label": [1, 0, 1, 1, 0]})
    labels = majority_labels(frame)
    assert np.isnan(labels[10]) and labels[11] == 1.0
    with pytest.raises(ValueError):
        aggregate([1], [1], [2], rounds=0)


def test_calibration_counts_agreement_per_level():
    target = pd.Series({1: 1.0, 2: 0.0, 3: 1.0, 4: np.nan})
    table = calibration([7, 7, 7, 7], [1, 2, 3, 4], [1, 1, 1, 1], [5.0, 5.0, 1.5, 2.0], target)
    cells = {int(r.level): (r.n, r.agree) for r in table.itertuples()}
    # Pair 4 has no aggregate label; 1.5 counts as level 1.
    assert cells == {5: (2, 1), 1: (1, 1)}


@pytest.mark.filterwarnings("ignore::Warning")  # crowd-kit's own pandas deprecations, called directly here
def test_reliability_point_estimates_are_crowd_kits_and_intervals_are_reproducible():
    from crowdkit.aggregation import DawidSkene

    workers, tasks, labels, truth, accuracy = simulated(items=80)
    frame = pd.DataFrame({"worker": workers, "task": tasks, "label": labels})
    errors = DawidSkene(n_iter=100, tol=1e-6).fit(frame).errors_
    first = aggregate(workers, tasks, labels, rounds=50, seed=4)
    for w in range(len(accuracy)):
        block = errors.loc[w]
        assert first.reliability.loc[w, "dawid_skene"] == pytest.approx((block.loc[0, 0] + block.loc[1, 1]) / 2)
    again = aggregate(workers, tasks, labels, rounds=50, seed=4)
    pd.testing.assert_frame_equal(first.reliability, again.reliability)


def _votes_frame(workers, tasks, labels, conf=3.0):
    return pd.DataFrame(
        {
            "annotator_id": workers,
            "pair_id": tasks,
            "pseudonym": [f"p{w}" for w in workers],
            "excluded": False,
            "tie_any": False,
            "pref_alignment": labels,
            "pref_musicality": labels,
            "alignment_confidence": conf,
            "musicality_confidence": conf,
        }
    )


def test_crowd_report_shape_and_pair_labels():
    workers, tasks, labels, truth, accuracy = simulated(items=60)
    body = crowd_report(_votes_frame(workers, tasks, labels), seed=0, rounds=2)
    assert set(body["dimensions"]) == {"alignment", "musicality"}
    assert len(body["labels"]) == 2 * 60 and body["labels"][0]["dawid_skene"] in ("clip_a", "clip_b")
    person = body["annotators"][0]
    # Sorted by reliability: the first is a flipper.
    assert accuracy[int(person["pseudonym"][1:])] < 0.5
    assert [c["level"] for c in person["calibration"]["alignment"]] == [1, 2, 3, 4, 5]
    assert person["calibration"]["alignment"][2]["n"] == person["votes"]
    exported = pair_labels(_votes_frame(workers, tasks, labels))
    assert set(exported["pairs"]) == set(range(60)) and exported["reliability"][int(person["pseudonym"][1:])] < 0.3


@override_settings(CACHES={"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "crowd-report"}})
class CrowdReportPageTests(TestCase):
    def test_report_page_and_tables_show_the_aggregation(self):
        study = StudyFactory(name="crowded")
        people = [AnnotatorFactory(username=f"c{i}") for i in range(3)]
        for k in range(4):
            pair = PairFactory(study=study)
            for j, person in enumerate(people):
                # The third annotator always disagrees with the other two.
                clip = pair.clip_a if (j < 2) == (k % 2 == 0) else pair.clip_b
                JudgmentFactory(pair=pair, annotator=person, a_clip=pair.clip_a, alignment_choice=clip, musicality_choice=clip,
                                alignment_confidence=Decimal("4.0"), musicality_confidence=Decimal("2.0"))
        built = report.report_build(study=study, use_cache=False)
        tables = report_tables.report_tables(built)
        assert len(tables["aggregate_labels"]) == 8
        assert {r["dimension"] for r in tables["annotator_reliability"]} == {"alignment", "musicality"}
        assert any(r["confidence_level"] == 4 and r["votes"] == 4 for r in tables["confidence_calibration"])
        researcher = UserFactory(username="res", is_staff=True)
        study.collaborators.add(researcher)  # the study rule: owner, collaborators, admins
        self.client.force_login(researcher)
        page = self.client.get(reverse("scoring:study-report", kwargs={"name": study.name}))
        assert page.status_code == 200
        assert b"Labels aggregated with a model of each annotator" in page.content
        assert b"Dawid" in page.content


def test_reward_votes_can_be_weighted_by_annotator_reliability():
    from scoring.reward.data import votes_from_rows
    from scoring.reward.model import TrainConfig, TrainingError, vote_weights

    workers, tasks, labels, truth, accuracy = simulated(items=80)
    rows = [
        {"pair_id": int(t), "annotator": int(w), "condition": f"c{t}", "clip_a": f"a{t}", "clip_b": f"b{t}",
         "label_alignment": "model_a" if lab else "model_b", "label_musicality": "model_a" if lab else "model_b",
         "confidence_alignment": 3.0, "confidence_musicality": 3.0}
        for w, t, lab in zip(workers, tasks, labels)
    ]
    clips = {k: i for i, k in enumerate(sorted({r["clip_a"] for r in rows} | {r["clip_b"] for r in rows}))}
    conditions = {k: i for i, k in enumerate(sorted({r["condition"] for r in rows}))}
    plain = vote_weights(votes_from_rows(rows, clip_index=clips, condition_index=conditions), TrainConfig(confidence_weight=True))
    assert np.allclose(plain, 1.0)  # every stated confidence is 3
    weighted = vote_weights(votes_from_rows(rows, clip_index=clips, condition_index=conditions, weight_by="reliability"), TrainConfig(confidence_weight=True))[:, 0]
    flipper_votes = weighted[np.isin(workers, np.where(accuracy < 0.5)[0])]
    honest_votes = weighted[np.isin(workers, np.where(accuracy > 0.7)[0])]
    assert flipper_votes.max() < 0.2 < 1.0 < honest_votes.min()
    with pytest.raises(TrainingError):
        votes_from_rows(rows, clip_index=clips, condition_index=conditions, weight_by="votes")


def test_an_annotator_who_always_gives_one_label_is_rated_a_coin_not_perfect():
    rng = np.random.default_rng(0)
    truth = rng.integers(0, 2, 72)
    workers, items, labels = [], [], []
    for w in range(3):
        for i, t in enumerate(truth):
            workers.append(f"honest{w}"), items.append(i), labels.append(int(t if rng.random() < 0.8 else 1 - t))
    for i in range(len(truth)):
        workers.append("always-b"), items.append(i), labels.append(0)
    reliability = aggregate(workers, items, labels, rounds=50, methods=("dawid_skene",)).reliability
    assert reliability.loc["always-b", "dawid_skene"] == pytest.approx(0.5)
    assert reliability.loc["always-b", "dawid_skene_high"] <= 0.5 + 1e-9
    assert (reliability.loc[["honest0", "honest1", "honest2"], "dawid_skene"] > 0.65).all()


def test_mace_gives_an_annotator_who_always_gives_one_label_no_credit():
    rng = np.random.default_rng(3)
    truth = rng.integers(0, 2, 60)
    workers, items, labels = [], [], []
    for w in range(3):
        for i, t in enumerate(truth):
            workers.append(f"honest{w}"), items.append(i), labels.append(int(t if rng.random() < 0.85 else 1 - t))
    for i in range(len(truth)):
        workers.append("always-a"), items.append(i), labels.append(1)
    reliability = aggregate(workers, items, labels, rounds=50, seed=1).reliability
    assert reliability.loc["always-a", "mace"] == 0.0
    assert reliability.loc["always-a", ["mace_low", "mace_high"]].tolist() == [0.0, 0.0]
    honest = reliability.loc[["honest0", "honest1", "honest2"]]
    assert (honest["mace"] > 0.4).all() and (honest["mace_low"] <= honest["mace_high"]).all()


def _crowd_kit_order(workers, tasks, labels) -> pd.DataFrame:
    """The votes as a frame crowd-kit's MACE reads right: a 0 vote first and workers named by first appearance.

    crowd-kit sums its guessing counts by sorted worker and label but reads them back by order of
    appearance; on this order the two agree, so it fits the model it describes.
    """
    frame = pd.DataFrame({"worker": workers, "task": tasks, "label": labels})
    first = int(np.flatnonzero(frame["label"].to_numpy() == 0)[0])
    frame = frame.iloc[np.r_[first, np.delete(np.arange(len(frame)), first)]].reset_index(drop=True)
    frame["named"] = frame["worker"]
    frame["worker"] = pd.factorize(frame["worker"])[0]
    return frame


@pytest.mark.filterwarnings("ignore::Warning")  # crowd-kit's own pandas deprecations
def test_mace_fit_is_crowd_kits_variational_mace():
    workers, tasks, labels, truth, accuracy = simulated(items=80)
    frame = _crowd_kit_order(workers, tasks, labels)
    codes = _codes(frame)
    q1, knowing, _ = mace_fit(codes, iterations=50, tol=0.0, start=mace_crowdkit_start(codes["workers"], 0))
    p_first, competence = mace_crowdkit(frame, 0, iterations=50)
    assert np.abs(pd.Series(q1, index=codes["item_names"]).sort_index() - p_first).max() < 1e-9
    assert np.abs(pd.Series(knowing, index=codes["worker_names"]) - competence.reindex(codes["worker_names"])).max() < 1e-9


@pytest.mark.filterwarnings("ignore::Warning")
def test_mace_point_fit_agrees_with_crowd_kit_run_to_convergence():
    workers, tasks, labels, truth, accuracy = simulated(items=60)
    frame = _crowd_kit_order(workers, tasks, labels)
    p_first, competence = mace_crowdkit(frame, 0, iterations=200)
    result = aggregate(frame["worker"], frame["task"], frame["label"], rounds=0, methods=("mace",))
    # The majority start and crowd-kit's random one reach the same fit: P(first) and competence to 1e-4, the same labels.
    assert np.abs(result.labels["p_mace"] - p_first).max() < 1e-4
    assert np.abs(result.reliability["mace"] - competence.reindex(result.reliability.index)).max() < 1e-4
    crowd_kit_labels = np.where(p_first > 0.5, 1.0, 0.0)
    assert (result.labels["mace"].to_numpy() == crowd_kit_labels).all()
    # Known truth: MACE labels beat the majority vote (whose ties count as wrong), spammers and flippers know little.
    right = (result.labels["mace"].to_numpy() == truth[result.labels.index]).mean()
    assert right > (result.labels["majority"].to_numpy() == truth[result.labels.index]).mean() + 0.2 and right > 0.8
    named = frame.groupby("worker")["named"].first()
    spammers = [w for w in result.reliability.index if accuracy[named[w]] <= 0.5]
    honest = [w for w in result.reliability.index if accuracy[named[w]] > 0.7]
    assert result.reliability.loc[spammers, "mace"].mean() < result.reliability.loc[honest, "mace"].mean() - 0.3


def test_mace_point_fit_does_not_depend_on_the_order_of_the_votes():
    workers, tasks, labels, truth, accuracy = simulated(items=80)
    order = np.random.default_rng(5).permutation(len(workers))
    first = aggregate(workers, tasks, labels, rounds=0, methods=("mace",))
    shuffled = aggregate(workers[order], tasks[order], labels[order], rounds=0, methods=("mace",))
    assert np.abs(first.labels["p_mace"] - shuffled.labels["p_mace"].reindex(first.labels.index)).max() < 1e-12
    assert np.abs(first.reliability["mace"] - shuffled.reliability["mace"].reindex(first.reliability.index)).max() < 1e-12


@pytest.mark.filterwarnings("ignore::Warning")
@pytest.mark.parametrize("case", ["simulated", "one-label-annotator", "one-label-votes", "tiny"])
def test_dawid_skene_fit_is_crowd_kits(case):
    if case == "simulated":
        workers, tasks, labels, truth, accuracy = simulated(items=80, seed=2)
    elif case == "one-label-annotator":
        workers, tasks, labels, truth, accuracy = simulated(items=60, seed=3)
        workers, tasks, labels = np.r_[workers, np.full(60, 99)], np.r_[tasks, np.arange(60)], np.r_[labels, np.zeros(60, dtype=int)]
    elif case == "one-label-votes":
        workers, tasks, labels = np.array([1, 2, 1]), np.array([1, 1, 2]), np.array([1, 1, 1])
    else:
        workers, tasks, labels = np.array([1, 2, 1, 3]), np.array([1, 1, 2, 3]), np.array([1, 0, 1, 1])
    frame = pd.DataFrame({"worker": workers, "task": tasks, "label": labels})
    p_first, reliability = ds_crowdkit(frame)
    result = aggregate(workers, tasks, labels, rounds=0, methods=("dawid_skene",))
    assert np.abs(result.labels["p_dawid_skene"] - p_first).max() < 1e-9
    assert np.abs(result.reliability["dawid_skene"] - reliability.reindex(result.reliability.index)).max() < 1e-9
