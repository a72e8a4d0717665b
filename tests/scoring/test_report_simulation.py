"""Simulated annotators of known accuracy on pairs of known truth.

An annotator who picks the better clip with probability p agrees with another
such annotator on a vote pair with probability p^2 + (1-p)^2. When the better
clip is the stored clip_a in half the pairs, chance agreement is 1/2, so
Krippendorff's alpha is about 2(p^2 + (1-p)^2) - 1 = (2p - 1)^2.
"""

from __future__ import annotations

from decimal import Decimal
from itertools import combinations

import numpy as np
import pandas as pd
import pytest
from django.test import TestCase

from annotation.demo import DEMO_SYSTEMS
from annotation.models import AnnotatorProfile, Judgment, Pair, Study, System
from scoring import agreement, report, services
from tests.factories import AnnotatorFactory, ClipFactory, ConditionFactory, PairFactory, StudyFactory, UserFactory

# The demo systems' known ranking: the simulated panel votes on the truth the demo is built to.
RANKS = {s.name: (s.alignment_rank, s.musicality_rank) for s in DEMO_SYSTEMS}


def expected_agreement(p: float) -> float:
    return p * p + (1 - p) * (1 - p)


class SimulatedPanelTests(TestCase):
    """Four annotators at 85% accuracy, one clicking at random, one always answering "A" with confidence 3."""

    P = 0.85
    CONDITIONS = 16

    @classmethod
    def setUpTestData(cls):
        rng = np.random.default_rng(20240611)
        cls.study = StudyFactory(name="simulated", overlap_target=6)
        systems = {name: System.objects.create(name=name) for name in RANKS}
        pairs, truth = [], {}
        for _ in range(cls.CONDITIONS):
            condition = ConditionFactory()
            clips = {name: ClipFactory(system=system) for name, system in systems.items()}
            for first, second in combinations(RANKS, 2):
                # Random stored order: the better clip is clip_a in about half of the pairs.
                if rng.random() < 0.5:
                    first, second = second, first
                pair = PairFactory(study=cls.study, condition=condition, clip_a=clips[first], clip_b=clips[second])
                better = {
                    dim: clips[min((first, second), key=lambda s, d=d: RANKS[s][d])].pk
                    for d, dim in enumerate(("alignment", "musicality"))
                }
                if len(pairs) % 12 == 0:
                    pair.kind = Pair.Kind.GOLD
                    pair.expected_alignment_id, pair.expected_musicality_id = better["alignment"], better["musicality"]
                    pair.save()
                pairs.append(pair)
                truth[pair.pk] = better
        cls.pairs, cls.truth = pairs, truth
        cls.good = [AnnotatorFactory(username=f"good{i}") for i in range(4)]
        cls.random_clicker = AnnotatorFactory(username="clicker")
        cls.straight = AnnotatorFactory(username="straight")
        cls.researcher = UserFactory(username="sim-res", roles=["researcher"])
        Study.objects.filter(pk=cls.study.pk).update(owner=cls.researcher)  # exclusions are study writes
        rows = []
        for pair in pairs:
            clip_ids = (pair.clip_a_id, pair.clip_b_id)
            for annotator in [*cls.good, cls.random_clicker, cls.straight]:
                shown_a = clip_ids[int(rng.integers(2))]
                choice, confidence = {}, {}
                for dim in ("alignment", "musicality"):
                    better = truth[pair.pk][dim]
                    worse = clip_ids[0] if better == clip_ids[1] else clip_ids[1]
                    if annotator in cls.good:
                        choice[dim] = better if rng.random() < cls.P else worse
                        confidence[dim] = Decimal(str(rng.choice([2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0])))
                    elif annotator == cls.random_clicker:
                        choice[dim] = clip_ids[int(rng.integers(2))]
                        confidence[dim] = Decimal(str(rng.choice([1.0, 2.0, 3.0, 4.0, 5.0])))
                    else:
                        choice[dim], confidence[dim] = shown_a, Decimal("3.0")
                rows.append(
                    Judgment(
                        annotator=annotator,
                        pair=pair,
                        a_clip_id=shown_a,
                        alignment_choice_id=choice["alignment"],
                        alignment_confidence=confidence["alignment"],
                        musicality_choice_id=choice["musicality"],
                        musicality_confidence=confidence["musicality"],
                        time_on_page_ms=int(rng.integers(20000, 60000)),
                        listening_log={"A": {"plays": 1, "seconds": 8.0}, "B": {"plays": 1, "seconds": 8.0}, "switches": 2},
                        source=Judgment.Source.IMPORT,
                    )
                )
        Judgment.objects.bulk_create(rows)

    def rows(self):
        frame = agreement.votes_frame(study=self.study)
        return {r["pseudonym"]: r for r in agreement.annotator_table(frame, thresholds=agreement.Thresholds())}

    def test_random_clicker_and_straight_liner_are_flagged_and_careful_annotators_are_not(self):
        rows = self.rows()
        clicker = {f["code"] for f in rows["p-clicker"]["flags"]}
        self.assertIn("chance_agreement", clicker)
        self.assertIn("low_gold", clicker)
        self.assertLess(abs(rows["p-clicker"]["majority_agreement"] - 0.5), 0.1)
        straight = {f["code"] for f in rows["p-straight"]["flags"]}
        self.assertTrue({"same_side", "same_confidence"} <= straight, straight)
        self.assertEqual(rows["p-straight"]["a_share_alignment"], 1.0)
        for i in range(4):
            row = rows[f"p-good{i}"]
            self.assertEqual(row["flags"], [], row["flags"])
            self.assertGreater(row["majority_agreement"], 0.7)
            self.assertGreater(row["gold_accuracy"], 0.7)

    def test_agreement_and_alpha_land_where_the_simulation_says(self):
        for annotator in (self.random_clicker, self.straight):
            services.annotator_exclude(profile=AnnotatorProfile.objects.get(user=annotator), by=self.researcher, reason="simulated noise")
        result = agreement.agreement_report(agreement.votes_frame(study=self.study), rounds=400, seed=0)
        expected_rate = expected_agreement(self.P)  # 0.745
        expected_alpha = 2 * expected_rate - 1  # 0.49
        for dim in ("alignment", "musicality"):
            block = result[dim]
            self.assertEqual((block["pairs"], block["votes"], block["vote_pairs"]), (240, 960, 1440))
            self.assertAlmostEqual(block["agreement_rate"], expected_rate, delta=0.04)
            self.assertAlmostEqual(block["alpha"], expected_alpha, delta=0.08)
            # The interval brackets the estimate and is as wide as 240 pairs allow (about +-0.03), not 0 or 1 wide.
            low, high = block["agreement_ci"]
            self.assertTrue(low < block["agreement_rate"] < high)
            self.assertTrue(0.02 < high - low < 0.12, (low, high))
            self.assertTrue(block["alpha_ci"][0] < block["alpha"] < block["alpha_ci"][1])

    def test_with_the_noise_left_in_agreement_drops(self):
        result = agreement.agreement_report(agreement.votes_frame(study=self.study), rounds=0)
        # Six raters, two of them uninformative: clearly below the careful panel's 0.745.
        self.assertLess(result["alignment"]["agreement_rate"], 0.68)
        data = report.report_build(study=self.study, options=report.ReportOptions(rounds=0), use_cache=False)
        flagged = {a["pseudonym"] for a in data["annotators"] if a["flags"]}
        self.assertEqual(flagged, {"p-clicker", "p-straight"})
        # The straight-liner drags the panel's position bias upwards.
        self.assertGreater(data["position_bias"]["alignment"]["share"], 0.55)
        self.assertLess(data["position_bias"]["alignment"]["p_value"], 0.001)


def synthetic_votes(*, p: float, pairs: int, raters: int, seed: int) -> pd.DataFrame:
    """A votes frame without the database: pair i has clips (2i, 2i+1); truth is clip_a with probability 1/2."""
    rng = np.random.default_rng(seed)
    pair_id = np.repeat(np.arange(pairs), raters)
    annotator = np.tile(np.arange(raters), pairs)
    clip_a, clip_b = 2 * pair_id, 2 * pair_id + 1
    truth_a = np.repeat(rng.random(pairs) < 0.5, raters)
    columns = {}
    for dim in ("alignment", "musicality"):
        right = rng.random(len(pair_id)) < p
        picks_a = np.where(right, truth_a, ~truth_a)
        columns[f"{dim}_choice"] = np.where(picks_a, clip_a, clip_b)
        columns[f"{dim}_confidence"] = rng.choice([1.0, 2.0, 3.0, 4.0, 5.0], size=len(pair_id))
    shown_a = np.where(rng.random(len(pair_id)) < 0.5, clip_a, clip_b)
    frame = pd.DataFrame(
        {
            "judgment_id": np.arange(len(pair_id)),
            "pair_id": pair_id,
            "annotator_id": annotator,
            "pseudonym": [f"s{a}" for a in annotator],
            "excluded": False,
            "clip_a": clip_a,
            "clip_b": clip_b,
            "a_clip": shown_a,
            **columns,
        }
    )
    return agreement.votes_frame_prepare(frame)


@pytest.mark.parametrize("p", [0.6, 0.75, 0.9])
def test_agreement_tracks_annotator_accuracy(p):
    votes = synthetic_votes(p=p, pairs=1500, raters=3, seed=int(p * 100))
    result = agreement.agreement_report(votes, rounds=200, seed=1)
    for dim in ("alignment", "musicality"):
        assert result[dim]["agreement_rate"] == pytest.approx(expected_agreement(p), abs=0.03)
        assert result[dim]["alpha"] == pytest.approx(2 * expected_agreement(p) - 1, abs=0.05)
