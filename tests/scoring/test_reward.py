"""Reward models trained on a study's votes: accuracy, splits, determinism, exclusions, registry, pages.

One synthetic study (tests/scoring/reward_study.py) is built and one model trained per class;
features are measured once (the signal judge's clip cache), so further trainings take seconds.
"""

from __future__ import annotations

import hashlib
import io
import json
import tempfile
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
from django.core.management import call_command
from django.test import TestCase, TransactionTestCase, override_settings
from django.urls import reverse

from annotation.models import Judgment, Pair, Study
from common.errors import ServiceError
from scoring import broadcast, services
from scoring.evaluation import VOTE, evaluate
from scoring.judges.reward import CARD_FILE
from scoring.models import Judge, ScoringRun, TrainingRun, Verdict
from scoring.report import report_build
from scoring.reward import services as reward
from scoring.reward.data import split_rows
from scoring.reward.features import Featurizer
from scoring.reward.model import WEIGHTS_FILE
from tests.factories import UserFactory
from tests.listening import listen
from tests.scoring.reward_study import AGREEMENT, add_contrarian, build_study

MODEL_DIR = Path(tempfile.mkdtemp(prefix="auditorium-test-reward-"))

# The bound, and why: each simulated vote follows the hidden truth with probability 0.8, so a
# model that learned the truth perfectly scores about 0.8 against single held-out votes (126
# votes: standard deviation 0.036), and a model that learned nothing scores about 0.5 (standard
# deviation 0.045). 0.65 is more than three standard deviations above chance and four below
# a perfect model; the training is seeded, so the figure is the same on every run.
ABOVE_CHANCE = 0.65


def _train(study, judge, *, seed=0, **options):
    with TestCase.captureOnCommitCallbacks(execute=True):
        run = reward.training_create(study=study, feature_judge=judge, seed=seed, options=options, queue=False)
        return reward.training_execute(training_id=run.pk)


@override_settings(AUDITORIUM_MODEL_DIR=MODEL_DIR)
class RewardModelTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.study, cls.truth = build_study()
        cls.signal = Judge.objects.create(key="signal-technical", kind=Judge.Kind.SIGNAL)
        with override_settings(AUDITORIUM_MODEL_DIR=MODEL_DIR):
            out = io.StringIO()
            with cls.captureOnCommitCallbacks(execute=True):
                call_command("train_reward", "--study", cls.study.name, "--features", "signal-technical", "--seed", "0", "--json", stdout=out)
        cls.result = json.loads(out.getvalue())
        cls.model = Judge.objects.get(key=cls.result["key"])

    def card(self, key=None) -> dict:
        return json.loads((MODEL_DIR / "reward" / (key or self.model.key) / CARD_FILE).read_text())

    # --- what it learns ----------------------------------------------------------------------
    def test_signal_features_learn_the_property_behind_the_votes(self):
        self.assertEqual(AGREEMENT, 0.8)
        for dim in ("alignment", "musicality"):
            cell = self.result["heldout"][dim]
            self.assertEqual(cell["n"], self.result["split"]["test_votes"])
            self.assertGreaterEqual(cell["accuracy"], ABOVE_CHANCE, (dim, cell))
            # The interval excludes chance too.
            self.assertGreater(cell["ci"][0], 0.5, (dim, cell))

    def test_held_out_accuracy_against_the_hidden_truth(self):
        # The same model scored on the held-out pairs: its labels against the truth itself, not the noisy votes.
        run = ScoringRun.objects.get(judge=self.model, label=reward.HELDOUT_LABEL)
        right = total = 0
        for verdict in Verdict.objects.filter(run=run, status=Verdict.Status.OK):
            for dim in ("alignment", "musicality"):
                right += getattr(verdict, f"{dim}_choice_id") == self.truth[verdict.pair_id][dim]
                total += 1
        self.assertEqual(total, 2 * self.result["split"]["test_pairs"])
        self.assertGreaterEqual(right / total, 0.8)

    # --- the registry ------------------------------------------------------------------------------
    def test_the_model_is_a_judge_with_weights_and_a_card(self):
        self.assertEqual(self.model.kind, Judge.Kind.REWARD)
        self.assertTrue(self.model.key.startswith("reward-reward-synth-signal-technical-"))
        folder = MODEL_DIR / "reward" / self.model.key
        card = self.card()
        self.assertEqual(card["weights_sha256"], hashlib.sha256((folder / WEIGHTS_FILE).read_bytes()).hexdigest())
        self.assertTrue(self.model.key.endswith(card["weights_sha256"][:12]))
        self.assertEqual(card["study"], self.study.name)
        self.assertEqual(card["seed"], 0)
        self.assertEqual(card["data"]["votes"], 648)
        self.assertEqual(card["features"]["kind"], "signal")
        self.assertEqual(card["features"]["text"], "hashed")
        self.assertIn("no text model", card["features"]["text_note"])
        self.assertEqual(card["hyperparameters"]["hidden"], 16)
        self.assertEqual(card["metrics"]["vote"]["alignment"]["all"]["accuracy"], self.result["heldout"]["alignment"]["accuracy"])
        self.assertIn("majority", card["metrics"])
        self.assertEqual(set(card["code_version"]), {"reward", "source_sha256", "torch"})
        self.assertTrue(services.judge_adapter(self.model).availability().available)

    def test_held_out_run_agrees_with_the_card_and_shows_in_the_report(self):
        run = ScoringRun.objects.get(judge=self.model, label=reward.HELDOUT_LABEL)
        self.assertEqual(run.state, ScoringRun.State.DONE)
        self.assertEqual((run.done, run.failed), (self.result["split"]["test_pairs"], 0))
        # The run's comparison with the humans (the same rules) gives the card's figure.
        self.assertAlmostEqual(run.summary["preference"]["musicality"]["all"]["accuracy"], self.result["heldout"]["musicality"]["accuracy"])
        report = report_build(study=self.study, use_cache=False)
        entry = next(j for j in report["judges"] if j["judge"] == self.model.key)
        self.assertEqual(entry["judge_kind"], "reward")
        self.assertAlmostEqual(entry["dimensions"]["alignment"]["accuracy"], self.result["heldout_majority"]["alignment"]["accuracy"], places=4)

    def test_scoring_reads_clip_features_from_the_feature_judges_cache(self):
        from scoring.judges.signal import SignalJudge

        card = self.card()
        pairs = list(Pair.objects.filter(study=self.study, condition__content_key__in=card["split"]["test_conditions"]).values_list("pk", flat=True)[:3])
        before = SignalJudge.encode_calls
        with self.captureOnCommitCallbacks(execute=True):
            run = services.run_create(judge=self.model, pair_ids=pairs)
        run.refresh_from_db()
        self.assertEqual((run.done, run.failed), (3, 0))
        # Every clip was measured for training: scoring decodes none again.
        self.assertEqual(SignalJudge.encode_calls, before)

    def test_conditions_seen_in_training_are_refused_when_scored(self):
        card = self.card()
        seen = set(card["split"]["seen_conditions"])
        pair = Pair.objects.filter(study=self.study, condition__content_key__in=seen).first()
        with self.captureOnCommitCallbacks(execute=True):
            run = services.run_create(judge=self.model, pair_ids=[pair.pk])
        verdict = Verdict.objects.get(run=run)
        self.assertEqual(verdict.status, Verdict.Status.FAILED)
        self.assertIn("training or validation split", verdict.details["error"])

    # --- splits ----------------------------------------------------------------------------------------
    def test_splits_share_no_pair_and_no_condition(self):
        rows, _ = reward.study_vote_rows(study=self.study)
        for seed in (0, 1, 2):
            split = split_rows(rows, mode="condition", seed=seed)
            sides = [split.train, split.val, split.test]
            self.assertEqual(sum(map(len, sides)), len(rows))
            for key in ("pair_id", "condition"):
                values = [{rows[i][key] for i in side} for side in sides]
                self.assertFalse(values[0] & values[1] or values[0] & values[2] or values[1] & values[2], (seed, key))
        # The seed moves conditions between sides.
        self.assertNotEqual(split_rows(rows, mode="condition", seed=0).test, split_rows(rows, mode="condition", seed=1).test)
        card = self.card()
        self.assertFalse(set(card["split"]["seen_conditions"]) & set(card["split"]["test_conditions"]))

    def test_export_split_holds_out_whole_conditions(self):
        # Mark one pair per condition in 8 conditions as test: their other pairs must leave training.
        test_pairs = []
        for condition_id in Pair.objects.filter(study=self.study).values_list("condition_id", flat=True).distinct().order_by("condition_id")[:8]:
            test_pairs.append(Pair.objects.filter(study=self.study, condition_id=condition_id).order_by("pk").first().pk)
        Pair.objects.filter(pk__in=test_pairs).update(split=Pair.Split.TEST)
        rows, _ = reward.study_vote_rows(study=self.study)
        split = split_rows(rows, mode="export", seed=0)
        self.assertEqual({rows[i]["pair_id"] for i in split.test}, set(test_pairs))
        test_conditions = split.conditions(rows, "test")
        self.assertFalse(test_conditions & (split.conditions(rows, "train") | split.conditions(rows, "val")))
        # 8 conditions x 5 other pairs x 3 votes were under a test condition but not in the test split.
        self.assertEqual(split.info["left_out_votes_under_test_conditions"], 8 * 5 * 3)

    # --- determinism ---------------------------------------------------------------------------------
    def test_same_votes_and_seed_give_the_same_model_bit_for_bit(self):
        weights = MODEL_DIR / "reward" / self.model.key / WEIGHTS_FILE
        first = weights.read_bytes()
        again = _train(self.study, self.signal, seed=0)
        self.assertEqual(again.state, TrainingRun.State.DONE, again.error)
        self.assertEqual(again.judge_id, self.model.pk)
        self.assertEqual(weights.read_bytes(), first)
        self.assertEqual(Judge.objects.filter(kind=Judge.Kind.REWARD).count(), 1)
        other = _train(self.study, self.signal, seed=1)
        self.assertNotEqual(other.judge.key, self.model.key)

    # --- exclusions ------------------------------------------------------------------------------------
    def test_excluded_annotators_votes_are_left_out(self):
        researcher = UserFactory(username="res-reward", roles=["researcher"])
        Study.objects.filter(pk=self.study.pk).update(owner=researcher)  # exclusions are study writes
        profile = add_contrarian(self.study)
        rows, left_out = reward.study_vote_rows(study=self.study)
        self.assertIn(profile.user_id, {r["annotator"] for r in rows})
        services.annotator_exclude(profile=profile, by=researcher, reason="votes against every gold pair")
        rows, left_out = reward.study_vote_rows(study=self.study)
        self.assertNotIn(profile.user_id, {r["annotator"] for r in rows})
        self.assertEqual(left_out, {"annotator excluded": Pair.objects.filter(study=self.study).count()})
        # Trained after the exclusion, the model is exactly the one trained before the contrarian voted.
        run = _train(self.study, self.signal, seed=0)
        self.assertEqual(run.judge_id, self.model.pk)
        self.assertEqual(json.loads((MODEL_DIR / "reward" / self.model.key / CARD_FILE).read_text())["data"]["left_out_votes"], left_out)

    def test_seeded_demo_votes_are_left_out_and_the_page_says_how_many(self):
        profile = add_contrarian(self.study, username="seeded-voter")
        seeded = Judgment.objects.filter(annotator_id=profile.user_id).update(source=Judgment.Source.SEEDED)
        rows, left_out = reward.study_vote_rows(study=self.study)
        self.assertNotIn(profile.user_id, {r["annotator"] for r in rows})
        self.assertEqual(left_out, {"seeded demo votes": seeded})
        # The model is the one trained without them, and its page says what was left out.
        run = _train(self.study, self.signal, seed=0)
        self.assertEqual(run.judge_id, self.model.pk)
        researcher = UserFactory(username="res-seeded", roles=["researcher"])
        self.study.collaborators.add(researcher)
        self.client.force_login(researcher)
        page = self.client.get(reverse("scoring:training-detail", kwargs={"training_id": run.pk})).content.decode()
        self.assertIn(f"left out: seeded demo votes ({seeded})", page)

    def test_both_votes_are_half_targets(self):
        from decimal import Decimal

        from annotation.models import Judgment
        from scoring.reward.data import targets
        from tests.factories import AnnotatorFactory

        pair = Pair.objects.filter(study=self.study).order_by("pk").first()
        person = AnnotatorFactory(username="tie-voter")
        Judgment.objects.create(annotator=person, pair=pair, a_clip=pair.clip_a, alignment_choice=None, alignment_tie="both", musicality_choice=pair.clip_b,
                                alignment_confidence=Decimal("3.0"), musicality_confidence=Decimal("3.0"), source=Judgment.Source.IMPORT)  # fmt: skip
        rows, _ = reward.study_vote_rows(study=self.study)
        index = next(i for i, r in enumerate(rows) if r["annotator"] == person.pk)
        assert (rows[index]["label_alignment"], rows[index]["label_musicality"]) == ("both", "model_b")
        assert targets(rows)[index].tolist() == [0.5, 0.0]

    # --- progress --------------------------------------------------------------------------------------
    def test_progress_is_pushed_through_every_stage(self):
        pushed = []
        original = broadcast.training_progress_broadcast
        broadcast.training_progress_broadcast = pushed.append
        try:
            run = _train(self.study, self.signal, seed=2, epochs=40)
        finally:
            broadcast.training_progress_broadcast = original
        stages = [p["stage"] for p in pushed]
        self.assertEqual([s for i, s in enumerate(stages) if i == 0 or stages[i - 1] != s], ["features", "training", "evaluating", "done"])
        self.assertEqual(pushed[-1]["state"], "done")
        self.assertEqual(pushed[-1]["judge"], run.judge.key)
        self.assertLessEqual(run.metrics["epochs_run"]["alignment"], 40)

    # --- refusals --------------------------------------------------------------------------------------
    def test_bad_requests_are_refused_and_change_nothing(self):
        before = TrainingRun.objects.count()
        empty = Study.objects.create(name="no-votes")
        clap = Judge.objects.create(key="clap-missing", kind=Judge.Kind.CLAP, weights="/nowhere/clap")
        aqa = Judge.objects.create(key="aqa", kind=Judge.Kind.AQA)
        cases = [
            (dict(study=empty, feature_judge=self.signal), "too_few_votes"),
            (dict(study=self.study, feature_judge=aqa), "bad_features"),
            (dict(study=self.study, feature_judge=clap), "judge_unavailable"),
            (dict(study=self.study, feature_judge=self.signal, seed=-1), "bad_seed"),
            (dict(study=self.study, feature_judge=self.signal, options={"split": "random"}), "bad_option"),
            (dict(study=self.study, feature_judge=self.signal, options={"epochs": 0}), "bad_option"),
            (dict(study=self.study, feature_judge=self.signal, options={"layers": 3}), "bad_option"),
        ]
        for kwargs, code in cases:
            with self.assertRaises(ServiceError) as caught:
                reward.training_create(queue=False, **kwargs)
            self.assertEqual(caught.exception.code, code, kwargs)
        self.assertEqual(TrainingRun.objects.count(), before)

    def test_a_study_without_an_export_test_split_fails_with_the_reason(self):
        run = _train(self.study, self.signal, split="export")
        self.assertEqual(run.state, TrainingRun.State.FAILED)
        self.assertIn("no test split", run.error)
        self.assertIsNone(run.judge_id)

    # --- active selection --------------------------------------------------------------------------------
    def test_uncertainty_ranks_open_pairs_and_the_engine_serves_them_first(self):
        from annotation import services as annotation_services
        from annotation.models import Judgment, PairPriority
        from tests.factories import StudyAnnotatorFactory

        Pair.objects.filter(study=self.study).update(overlap=4)
        Study.objects.filter(pk=self.study.pk).update(selection="uncertainty", active_share=1.0)
        summary = reward.selection_refresh(study=self.study)
        self.assertEqual(summary["pairs"], Pair.objects.filter(study=self.study).count())
        self.assertEqual(summary["model"], self.model.key)
        values = dict(PairPriority.objects.filter(mode="uncertainty").values_list("pair_id", "value"))
        self.assertTrue(all(0.0 <= v <= 1.0 for v in values.values()))
        self.assertGreater(max(values.values()) - min(values.values()), 0.1)
        annotator = StudyAnnotatorFactory(study=self.study).annotator
        self.study.refresh_from_db()
        assignment = annotation_services.assignment_next(study=self.study, annotator=annotator)
        self.assertEqual(assignment.pair_id, max(values, key=lambda pid: (values[pid], -Pair.objects.get(pk=pid).order_key)))
        self.assertEqual(assignment.selection, "uncertainty")
        listen(assignment, seconds=3.0)
        log = {"A": {"plays": 1, "seconds": 3.0}, "B": {"plays": 1, "seconds": 3.0}, "switches": 1}
        answer, _ = annotation_services.judgment_submit(
            assignment_id=assignment.pk, annotator=annotator, alignment="A", alignment_confidence=3, musicality="B", musicality_confidence=3,
            listening_log=log, idempotency_key="uncertain-1", now=assignment.served_at + timedelta(seconds=10),
        )  # fmt: skip
        self.assertEqual(Judgment.objects.get(pk=answer["judgment"]).selection, "uncertainty")

    # --- pages ---------------------------------------------------------------------------------------------
    def test_pages_train_from_the_judges_page_and_show_the_result(self):
        researcher = UserFactory(username="res-pages", roles=["researcher"])
        self.study.collaborators.add(researcher)  # training is a change to the study: owner, named collaborators, admins
        self.client.force_login(researcher)
        page = self.client.get(reverse("scoring:judge-list")).content.decode()
        self.assertIn('id="train-reward"', page)
        self.assertIn(self.model.key, page)
        with self.captureOnCommitCallbacks(execute=True):
            response = self.client.post(reverse("scoring:reward-train"), {"study": self.study.name, "features": "signal-technical", "seed": "0", "split": "condition"})
        self.assertEqual(response.status_code, 302)
        run = TrainingRun.objects.latest("pk")
        self.assertEqual(run.state, TrainingRun.State.DONE, run.error)
        page = self.client.get(response["Location"]).content.decode()
        self.assertIn("Held-out accuracy", page)
        self.assertIn(self.model.key, page)
        # Baselines beside the network, labelled as a single split seed.
        self.assertIn('id="baselines-musicality"', page)
        self.assertIn("best single feature (chosen on train+val)", page)
        self.assertIn("Single split seed (0): no spread", page)
        bad = self.client.post(reverse("scoring:reward-train"), {"study": self.study.name, "features": "signal-technical", "seed": "many"})
        self.assertEqual(bad.status_code, 400)
        annotator = UserFactory(username="ann-pages", roles=["annotator"])
        self.client.force_login(annotator)
        self.assertEqual(self.client.get(reverse("scoring:training-detail", kwargs={"training_id": run.pk})).status_code, 403)


class DisagreementTests(TestCase):
    def test_pairs_where_judges_split_rank_first(self):
        from annotation.models import PairPriority
        from tests.factories import PairFactory, StudyFactory

        study = StudyFactory(name="disagree", selection="disagreement")
        pairs = [PairFactory(study=study) for _ in range(3)]
        for key, labels in (("j1", ["model_a", "model_a", "model_b"]), ("j2", ["model_a", "model_b", "model_b"])):
            judge = Judge.objects.create(key=key, kind=Judge.Kind.SIGNAL)
            run = ScoringRun.objects.create(judge=judge, study=study, state=ScoringRun.State.DONE, total=3)
            for pair, label in zip(pairs, labels):
                Verdict.objects.create(run=run, pair=pair, details={"labels": {"musicality": label}})
        summary = reward.selection_refresh(study=study)
        self.assertEqual(summary, {"mode": "disagreement", "pairs": 3, "judges": 2})
        values = dict(PairPriority.objects.filter(mode="disagreement").values_list("pair_id", "value"))
        self.assertEqual(values, {pairs[0].pk: 0.0, pairs[1].pk: 1.0, pairs[2].pk: 0.0})

    def test_one_judge_is_not_enough(self):
        from tests.factories import PairFactory, StudyFactory

        study = StudyFactory(name="one-judge", selection="disagreement")
        pair = PairFactory(study=study)
        run = ScoringRun.objects.create(judge=Judge.objects.create(key="only", kind=Judge.Kind.SIGNAL), study=study, state=ScoringRun.State.DONE, total=1)
        Verdict.objects.create(run=run, pair=pair, details={"labels": {"musicality": "model_a"}})
        self.assertEqual(reward.selection_refresh(study=study)["pairs"], 0)


def test_featurizer_refuses_judges_without_clip_features():
    from scoring.judges import JudgeConfig, adapter_for
    from scoring.reward.features import FeatureUnavailable

    with pytest.raises(FeatureUnavailable, match="gives no per-clip features"):
        Featurizer(adapter_for(JudgeConfig(key="aqa", kind="aqa")))
    with pytest.raises(FeatureUnavailable, match="no text encoder"):
        Featurizer(adapter_for(JudgeConfig(key="sig", kind="signal")), text="judge")


def test_held_out_labels_follow_the_tie_rule():
    # A model that scores every clip the same predicts B on every pair, as every judge does (scoring.evaluation.prefer).
    from scoring.reward.model import FeatureTable, RewardModel, TrainConfig, Votes

    table = FeatureTable(clips=np.eye(2), conditions=np.zeros((1, 3)), reference=[-1])
    size, context = 4, 3 + 2 + 1
    zeros = {"linear.weight": np.zeros((1, size + context)), "clip.weight": np.zeros((2, size)), "context.weight": np.zeros((2, context)),
             "hidden.weight": np.zeros((3, size + context)), "hidden.bias": np.zeros(3), "out.weight": np.zeros((1, 3)), "out.bias": np.zeros(1)}  # fmt: skip
    model = RewardModel(weights={f"{d}.{k}": v for d in ("alignment", "musicality") for k, v in zeros.items()}, mean=np.zeros(2), std=np.ones(2), config=TrainConfig(), seed=0)
    votes = Votes(clip_a=[0], clip_b=[1], condition=[0], target=[[1.0, 0.0]])
    rows = reward.heldout_rows(model, table, votes, [{"pair_id": 1, "label_alignment": "model_a", "label_musicality": "model_b"}])
    assert (rows[0]["pred_alignment"], rows[0]["pred_musicality"]) == ("model_b", "model_b")
    assert evaluate(rows, view=VOTE)["headline"] == 0.5


class TrainingSocketTests(TransactionTestCase):
    @pytest.mark.engine
    def test_page_gets_the_state_on_connect_then_each_push(self):
        from asgiref.sync import async_to_sync
        from channels.db import database_sync_to_async
        from channels.testing import WebsocketCommunicator

        from auditorium.asgi import application
        from scoring.selectors import training_progress
        from tests.factories import StudyFactory

        researcher = UserFactory(username="res-ws", roles=["researcher"])
        judge = Judge.objects.create(key="signal-ws", kind=Judge.Kind.SIGNAL)
        run = TrainingRun.objects.create(study=StudyFactory(name="ws-train", owner=researcher), feature_judge=judge, stage="features", step=3, steps=10)

        async def scenario():
            from django.conf import settings
            from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
            from django.contrib.sessions.backends.db import SessionStore

            @database_sync_to_async
            def session_cookie():
                session = SessionStore()
                session[SESSION_KEY] = str(researcher.pk)
                session[BACKEND_SESSION_KEY] = settings.AUTHENTICATION_BACKENDS[0]
                session[HASH_SESSION_KEY] = researcher.get_session_auth_hash()
                session.save()
                return session.session_key

            key = await session_cookie()
            headers = [(b"cookie", f"sessionid={key}".encode()), (b"origin", b"http://localhost"), (b"host", b"localhost")]
            communicator = WebsocketCommunicator(application, f"/ws/scoring/training/{run.pk}/", headers=headers)
            connected, _ = await communicator.connect()
            assert connected
            first = await communicator.receive_json_from(timeout=5)
            assert (first["progress"]["stage"], first["progress"]["step"], first["progress"]["steps"]) == ("features", 3, 10)

            @database_sync_to_async
            def push():
                TrainingRun.objects.filter(pk=run.pk).update(stage="training", step=7, steps=600, state="running")
                broadcast.training_progress_broadcast(training_progress(TrainingRun.objects.get(pk=run.pk)))

            await push()
            pushed = await communicator.receive_json_from(timeout=5)
            assert (pushed["progress"]["state"], pushed["progress"]["stage"], pushed["progress"]["step"]) == ("running", "training", 7)
            await communicator.disconnect()
            anonymous = WebsocketCommunicator(application, f"/ws/scoring/training/{run.pk}/", headers=[(b"origin", b"http://localhost"), (b"host", b"localhost")])
            connected, code = await anonymous.connect()
            assert not connected and code == 4403
            # Let the refused consumer end inside this loop (its channel-layer receive included)
            # rather than leave it to be cancelled when the loop shuts down.
            await anonymous.disconnect()

        async_to_sync(scenario)()


@override_settings(AUDITORIUM_MODEL_DIR=MODEL_DIR)
class SeveralSplitSeedsTests(TestCase):
    """`train_reward --seeds 0,1,2,3,4 --split system --json` on a study whose clips come from six systems."""

    @classmethod
    def setUpTestData(cls):
        cls.study, cls.truth = build_study(name="reward-systems", systems=6)
        Judge.objects.create(key="signal-technical", kind=Judge.Kind.SIGNAL)
        with override_settings(AUDITORIUM_MODEL_DIR=MODEL_DIR):
            out = io.StringIO()
            with cls.captureOnCommitCallbacks(execute=True):
                call_command("train_reward", "--study", cls.study.name, "--features", "signal-technical", "--seeds", "0,1,2,3,4", "--split", "system", "--json", stdout=out)
        cls.result = json.loads(out.getvalue())
        cls.training = TrainingRun.objects.get(pk=cls.result["training"])

    def test_json_gives_per_dimension_spread_baselines_differences_pick_and_coverage(self):
        self.assertEqual(self.result["split_seeds"], [0, 1, 2, 3, 4])
        self.assertFalse(self.result["single_seed"])
        for dim in ("alignment", "musicality"):
            block = self.result["dimensions"][dim]
            self.assertEqual(len(block["model"]["values"]), 5)
            self.assertIsNotNone(block["model"]["sd"])
            self.assertEqual(set(block["baselines"]), {"majority", "judge_score", "best_feature", "logistic", "logistic_interactions", "prompt_lowrank"})
            for name, diff in block["difference_to"].items():
                self.assertEqual(len(diff["ci"]), 5, name)
                if name != "judge_score" or dim == "musicality":
                    self.assertTrue(all(lo <= hi for lo, hi in diff["ci"]), (dim, name))
            self.assertIn(block["registered"]["model"], ("network", "logistic", "logistic_interactions", "prompt_lowrank"))
            self.assertEqual(block["coverage"]["network"][0]["share"], 1.0)
        # The signal judge scores musicality only: its alignment baseline answers nothing, and says so.
        self.assertEqual(self.result["dimensions"]["alignment"]["coverage"]["judge_score"][0]["answered"], 0)
        self.assertEqual(self.result["dimensions"]["musicality"]["coverage"]["judge_score"][0]["share"], 1.0)

    def test_five_split_seeds_hold_out_five_different_systems_in_name_order(self):
        held = [h["test_systems"] for h in self.result["held_out"]]
        self.assertEqual(held, [[f"reward-systems-system-{k}"] for k in range(5)])
        self.assertEqual([h["fold"] for h in self.result["held_out"]], [0, 1, 2, 3, 4])

    def test_the_card_records_both_seeds_the_split_and_the_baselines(self):
        card = json.loads((MODEL_DIR / "reward" / self.result["key"] / CARD_FILE).read_text())
        self.assertEqual(card["seeds"], {"training": 0, "split": 0, "split_seeds": [0, 1, 2, 3, 4]})
        self.assertEqual(card["split"]["mode"], "system")
        self.assertEqual(card["split"]["refuses"], "clips")
        self.assertEqual(len(card["baselines"]["per_seed"]), 5)
        self.assertIn("intervals", card["metrics"])
        # Which prompt representation the low-rank model read, and per dimension the rank and C validation chose.
        learned = card["training"]["prompt_inputs"]["learned"]
        self.assertIn("hashed words and bigrams", learned["representation"])
        for dim in ("alignment", "musicality"):
            chosen = learned["chosen"][dim]
            self.assertIn(chosen["rank"], (0, 1, 2, 3))
            self.assertAlmostEqual(chosen["val_loss"], min(t["val_loss"] for t in learned["tried"][dim]), places=6)
        # No clip of a held-out system was seen in training or validation.
        from annotation.models import Clip

        held = card["split"]["test_systems"]
        seen = set(Clip.objects.filter(sha256__in=card["split"]["seen_clips"]).values_list("system__name", flat=True))
        self.assertTrue(held)
        self.assertFalse(seen & set(held))

    def test_the_held_out_run_scores_every_test_pair(self):
        run = ScoringRun.objects.get(judge__key=self.result["key"], label=reward.HELDOUT_LABEL)
        self.assertEqual((run.done, run.failed), (self.result["split"]["test_pairs"], 0))

    def test_the_training_page_shows_the_spread(self):
        researcher = UserFactory(username="res-seeds", roles=["researcher"])
        Study.objects.filter(pk=self.training.study_id).update(owner=researcher)
        self.client.force_login(researcher)
        page = self.client.get(reverse("scoring:training-detail", kwargs={"training_id": self.training.pk})).content.decode()
        self.assertIn("Mean ± standard deviation over split seeds 0, 1, 2, 3, 4", page)
        self.assertIn("\u00a0±\u00a0", page)
