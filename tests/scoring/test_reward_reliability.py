"""The judges page's "weight labels by annotator reliability" option reaches the votes the network trains on, and the run's card says so."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
import pytest
from django.test import TestCase
from django.urls import reverse

from common.errors import ServiceError
from scoring.judges.reward import CARD_FILE
from scoring.models import Judge, TrainingRun
from scoring.reward import services as reward
from scoring.reward.data import reliability_weights, split_rows, votes_from_rows
from scoring.reward.model import TrainConfig, vote_weights
from tests.factories import UserFactory
from tests.scoring.reward_study import build_study


def _add_flipper(study, truth) -> None:
    """An annotator who answers against the hidden truth on every pair, always at confidence 5."""
    from decimal import Decimal

    from django.utils import timezone

    from annotation.models import Judgment, Pair
    from tests.factories import AnnotatorFactory

    person = AnnotatorFactory(username="contrarian")
    rows = []
    for pair in Pair.objects.filter(study=study).select_related("clip_a", "clip_b"):
        wrong = {dim: pair.clip_b if truth[pair.pk][dim] == pair.clip_a_id else pair.clip_a for dim in ("alignment", "musicality")}
        rows.append(Judgment(annotator=person, pair=pair, a_clip=pair.clip_a, alignment_choice=wrong["alignment"], musicality_choice=wrong["musicality"],
                             alignment_confidence=Decimal("5.0"), musicality_confidence=Decimal("5.0"), source=Judgment.Source.IMPORT))  # fmt: skip
    Judgment.objects.bulk_create(rows)
    profile = person.annotator_profile
    profile.consented_at = timezone.now()
    profile.save()


class ReliabilityWeightTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.study, truth = build_study(name="reliability-synth", conditions=12)
        _add_flipper(cls.study, truth)
        cls.signal = Judge.objects.create(key="signal-technical", kind=Judge.Kind.SIGNAL)
        cls.researcher = UserFactory(username="res-reliability", roles=["researcher"])
        cls.study.collaborators.add(cls.researcher)

    def _post(self, **extra):
        body = {"study": self.study.name, "features": "signal-technical", "seed": "0", "split": "condition", **extra}
        with self.captureOnCommitCallbacks(execute=True):
            return self.client.post(reverse("scoring:reward-train"), body)

    def test_the_option_weights_each_vote_by_its_annotators_reliability_and_is_on_the_card(self):
        self.client.force_login(self.researcher)
        assert 'name="weight_by_reliability"' in self.client.get(reverse("scoring:judge-list")).content.decode()
        calls = []

        def spy(rows, **kwargs):
            votes = votes_from_rows(rows, **kwargs)
            calls.append((rows, kwargs, votes))
            return votes

        measured = []
        real_measure = reward.measure_split

        def measure_spy(table, votes, rows, split, **kwargs):
            measured.append((votes, rows, split))
            return real_measure(table, votes, rows, split, **kwargs)

        with pytest.MonkeyPatch.context() as patch, self.settings(AUDITORIUM_MODEL_DIR=str(self._tmp())):
            patch.setattr(reward, "votes_from_rows", spy)
            patch.setattr(reward, "measure_split", measure_spy)
            response = self._post(weight_by_reliability="on")
            assert response.status_code == 302
            run = TrainingRun.objects.latest("pk")
            assert run.state == TrainingRun.State.DONE, run.error
            assert run.options["weight_by"] == "reliability" and run.options["train"]["confidence_weight"] is True
            rows, kwargs, votes = calls[-1]
            assert kwargs["weight_by"] == "reliability"
            # What the network weighs each vote by: the contrarian's votes count next to nothing with the
            # option, and more than anyone's by stated confidence (they always answer 5) without it.
            config = TrainConfig(confidence_weight=True)
            contrarian_id = self._contrarian_key(rows)
            contrarian = np.array([r["annotator"] == contrarian_id for r in rows])
            assert contrarian.any()
            by_reliability = vote_weights(votes, config)[:, 0]
            by_confidence = vote_weights(votes_from_rows(rows, clip_index=kwargs["clip_index"], condition_index=kwargs["condition_index"]), config)[:, 0]
            assert by_reliability[contrarian].max() < 0.05 * by_reliability[~contrarian].mean()
            assert by_confidence[contrarian].min() > by_confidence[~contrarian].mean()
            # The network of each split is weighted by reliabilities fitted on that split's training votes only.
            split_votes, split_rows_, split = measured[-1]
            np.testing.assert_array_equal(split_votes.confidence, reliability_weights(split_rows_, split.train))
            card = json.loads((self._tmp() / "reward" / run.judge.key / CARD_FILE).read_text())
            assert card["data"]["vote_weights"].startswith("annotator reliability")
            assert card["data"]["vote_weights"].endswith("fitted on the training votes only")
            page = self.client.get(reverse("scoring:training-detail", kwargs={"training_id": run.pk})).content.decode()
            assert "labels weighted by annotator reliability" in page

            # Without the option the votes keep their confidence weights (here off: every vote weighs 1).
            calls.clear()
            self._post()
            plain = TrainingRun.objects.latest("pk")
            assert plain.state == TrainingRun.State.DONE, plain.error
            assert plain.options["weight_by"] == "confidence" and calls[-1][1]["weight_by"] == "confidence"
            assert "annotator reliability" not in self.client.get(reverse("scoring:training-detail", kwargs={"training_id": plain.pk})).content.decode()

    def test_both_weightings_at_once_are_refused_and_start_nothing(self):
        self.client.force_login(self.researcher)
        before = TrainingRun.objects.count()
        response = self._post(weight_by_reliability="on", confidence_weight="on")
        assert response.status_code == 400
        assert "either by stated confidence or by annotator reliability, not both" in response.content.decode()
        assert TrainingRun.objects.count() == before
        with pytest.raises(ServiceError, match="weight_by must be one of"):
            reward.training_options_clean({"weight_by": "seniority"})

    def _contrarian_key(self, rows) -> int:
        from django.contrib.auth import get_user_model

        return get_user_model().objects.get(username="contrarian").pk

    def _tmp(self) -> Path:
        if not hasattr(self, "_model_dir"):
            self._model_dir = Path(tempfile.mkdtemp(prefix="auditorium-test-reliability-"))
        return self._model_dir


def _votes(conditions=10, seed=0):
    """Three annotators who agree with a hidden truth 90 %, 75 % and 60 % of the time, on every pair."""
    rng = np.random.default_rng(seed)
    rows, pair = [], 0
    for c in range(conditions):
        for k in range(4):
            pair += 1
            truth = rng.random() < 0.5
            for person, agree in (("p1", 0.9), ("p2", 0.75), ("p3", 0.6)):
                right = {dim: rng.random() < agree for dim in ("alignment", "musicality")}
                label = {dim: "model_a" if (truth == right[dim]) else "model_b" for dim in right}
                rows.append({"pair_id": pair, "condition": f"c{c}", "clip_a": f"c{c}-{k}a", "clip_b": f"c{c}-{k}b", "annotator": person,
                             "label_alignment": label["alignment"], "label_musicality": label["musicality"]})  # fmt: skip
    return rows


def test_reliability_that_weights_training_does_not_move_when_the_test_votes_change():
    rows = _votes()
    split = split_rows(rows, mode="condition", seed=0)
    flip = {"model_a": "model_b", "model_b": "model_a"}
    # The best annotator answers against the truth on every test pair.
    changed = [dict(r) for r in rows]
    for i in split.test:
        if changed[i]["annotator"] == "p1":
            changed[i]["label_alignment"], changed[i]["label_musicality"] = flip[changed[i]["label_alignment"]], flip[changed[i]["label_musicality"]]
    train = np.asarray(split.train)
    np.testing.assert_array_equal(reliability_weights(rows, split.train)[train], reliability_weights(changed, split.train)[train])
    # Fitted on every vote (what the option did before), the same change moves the training weights.
    assert np.abs(reliability_weights(rows)[train] - reliability_weights(changed)[train]).max() > 0.05
    # An annotator seen only outside training gets the mean fitted weight, not a coin's.
    extra = rows + [{**rows[split.test[0]], "annotator": "newcomer"}]
    weights = reliability_weights(extra, split.train)
    fitted = weights[train]
    np.testing.assert_allclose(weights[-1], fitted.mean(axis=0))
