"""Human agreement and annotator statistics against figures worked out by hand in the tests."""

from __future__ import annotations

from decimal import Decimal

import krippendorff
import numpy as np
import pandas as pd
import pytest
from django.test import TestCase
from django.utils import timezone
from scipy.stats import binomtest

from annotation.models import AnnotatorProfile, Pair
from common.errors import ServiceError
from scoring import agreement, services, stats
from tests.factories import AnnotatorFactory, JudgmentFactory, PairFactory, StudyFactory, UserFactory

NAN = np.nan


def vote(pair, annotator, *, shown_a, alignment, musicality=None, ac="3.0", mc="3.0", rationale="", time_ms=20000, heard=(6.0, 7.0)):
    return JudgmentFactory(
        pair=pair,
        annotator=annotator,
        a_clip=shown_a,
        alignment_choice=alignment,
        musicality_choice=musicality or alignment,
        alignment_confidence=Decimal(ac),
        musicality_confidence=Decimal(mc),
        rationale=rationale,
        time_on_page_ms=time_ms,
        listening_log={"A": {"plays": 1, "seconds": heard[0], "seeks": 0, "loops": 0}, "B": {"plays": 1, "seconds": heard[1], "seeks": 0, "loops": 0}, "switches": 1},
    )


class SideCorrectedAgreementTests(TestCase):
    """Three pairs judged by overlapping annotators who saw the clips on different sides.

    Clip terms (1 = the pair's stored clip_a won), alignment:
        P1: u1 1, u2 1, u3 1        (u2 saw the clips swapped)
        P2: u1 0, u2 0              (u2 saw them swapped)
        P3: u1 1, u3 0              (u3 saw them swapped)
        P4: u2 1                    (one vote: not part of agreement)
    Screen sides (1 = answered "A"): P1 1,0,1  P2 0,1  P3 1,1.
    """

    @classmethod
    def setUpTestData(cls):
        cls.study = StudyFactory(name="side-study")
        cls.u1, cls.u2, cls.u3 = AnnotatorFactory(username="u1"), AnnotatorFactory(username="u2"), AnnotatorFactory(username="u3")
        cls.p1, cls.p2, cls.p3, cls.p4 = [PairFactory(study=cls.study) for _ in range(4)]
        p1, p2, p3, p4 = cls.p1, cls.p2, cls.p3, cls.p4
        # P1: everyone prefers clip_a; u2 saw clip_b as A, so answered "B".
        vote(p1, cls.u1, shown_a=p1.clip_a, alignment=p1.clip_a, musicality=p1.clip_a, ac="4.0", mc="4.0", rationale="A keeps the tempo the prompt asks for")
        vote(p1, cls.u2, shown_a=p1.clip_b, alignment=p1.clip_a, musicality=p1.clip_b, ac="4.5", mc="2.0")
        vote(p1, cls.u3, shown_a=p1.clip_a, alignment=p1.clip_a, musicality=p1.clip_a, ac="3.5", mc="3.0", rationale="cleaner")
        # P2: both prefer clip_b; u2 saw clip_b as A and answered "A".
        vote(p2, cls.u1, shown_a=p2.clip_a, alignment=p2.clip_b, musicality=p2.clip_b, ac="3.0", mc="3.0")
        vote(p2, cls.u2, shown_a=p2.clip_b, alignment=p2.clip_b, musicality=p2.clip_b, ac="3.0", mc="3.0")
        # P3: they disagree, although both answered "A".
        vote(p3, cls.u1, shown_a=p3.clip_a, alignment=p3.clip_a, musicality=p3.clip_a, ac="2.0", mc="2.5")
        vote(p3, cls.u3, shown_a=p3.clip_b, alignment=p3.clip_b, musicality=p3.clip_b, ac="1.0", mc="1.5")
        vote(p4, cls.u2, shown_a=p4.clip_a, alignment=p4.clip_a, musicality=p4.clip_b, ac="5.0", mc="5.0")

    def frame(self):
        return agreement.votes_frame(study=self.study)

    def test_agreement_rate_counts_vote_pairs_in_clip_terms(self):
        result = agreement.agreement_report(self.frame(), rounds=200, seed=1)["alignment"]
        # P1: 3 vote pairs, all agree; P2: 1, agrees; P3: 1, disagrees.
        self.assertEqual(result["pairs"], 3)
        self.assertEqual(result["votes"], 7)
        self.assertEqual(result["vote_pairs"], 5)
        self.assertEqual(result["agreements"], 4)
        self.assertEqual(result["disagreements"], 1)
        self.assertAlmostEqual(result["agreement_rate"], 4 / 5, places=4)
        # Screen sides would say 2 of 5 (P1 one agreeing pair of three, P2 none, P3 one).
        self.assertNotAlmostEqual(result["agreement_rate"], 2 / 5)

    def test_alpha_matches_krippendorff_on_a_hand_built_matrix(self):
        result = agreement.agreement_report(self.frame(), rounds=200, seed=1)["alignment"]
        # Raters u1..u3 by units P1..P4, values in clip terms.
        clip_terms = np.array([[1, 0, 1, NAN], [1, 0, NAN, 1], [1, NAN, 0, NAN]])
        expected = krippendorff.alpha(reliability_data=clip_terms, level_of_measurement="nominal")
        self.assertAlmostEqual(expected, 0.5)  # by hand: 1 - (7-1) * o01 / (n0 n1) = 1 - 6 * 1 / (3 * 4, places=4)
        self.assertAlmostEqual(result["alpha"], expected, places=4)
        screen = np.array([[1, 0, 1, NAN], [0, 1, NAN, 1], [1, NAN, 1, NAN]])
        screen_alpha = krippendorff.alpha(reliability_data=screen, level_of_measurement="nominal")
        self.assertAlmostEqual(screen_alpha, -0.2, places=4)
        self.assertNotAlmostEqual(result["alpha"], screen_alpha, places=2)

    def test_musicality_is_measured_separately(self):
        result = agreement.agreement_report(self.frame(), rounds=0)["musicality"]
        # P1: clip_a, clip_b, clip_a -> 1 agreeing pair of 3; P2 agree; P3 disagree.
        self.assertEqual((result["vote_pairs"], result["agreements"]), (5, 2))
        matrix = np.array([[1, 0, 1, NAN], [0, 0, NAN, 0], [1, NAN, 0, NAN]])
        self.assertAlmostEqual(result["alpha"], krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal"), places=4)

    def test_by_confidence_compares_answers_given_with_the_same_confidence(self):
        result = agreement.agreement_report(self.frame(), rounds=0)
        by = {row["bucket"]: row for row in result["alignment"]["by_confidence"]}
        # Alignment: P1 answers 4, 4.5, 3.5 are all >3 (3 vote pairs, all agree); P2 3, 3 (=3, agree); P3 2, 1 (<3, disagree).
        self.assertEqual((by[">3"]["pairs"], by[">3"]["agreements"], by[">3"]["vote_pairs"]), (1, 3, 3))
        self.assertEqual((by["=3"]["pairs"], by["=3"]["agreement_rate"]), (1, 1.0))
        self.assertEqual((by["<3"]["pairs"], by["<3"]["agreement_rate"]), (1, 0.0))
        by = {row["bucket"]: row for row in result["musicality"]["by_confidence"]}
        # Musicality: P1 answers 4, 2, 3 fall in three different buckets, so P1 forms no vote pair in any;
        # P2 3, 3 agree; P3 2.5, 1.5 disagree. (Bucketing P1 by its mean, 3, would put two pairs in "=3".)
        self.assertEqual((by["=3"]["pairs"], by["=3"]["vote_pairs"], by["=3"]["agreements"]), (1, 1, 1))
        self.assertEqual((by["<3"]["pairs"], by["<3"]["vote_pairs"], by["<3"]["agreements"]), (1, 1, 0))
        self.assertEqual((by[">3"]["pairs"], by[">3"]["agreement_rate"], by[">3"]["alpha"]), (0, None, None))

    def test_bootstrap_interval_is_seeded_and_brackets_the_estimate(self):
        frame = self.frame()
        first = agreement.agreement_report(frame, rounds=300, seed=7)["alignment"]
        again = agreement.agreement_report(frame, rounds=300, seed=7)["alignment"]
        self.assertEqual(first["agreement_ci"], again["agreement_ci"])
        low, high = first["agreement_ci"]
        self.assertLessEqual(low, first["agreement_rate"])
        self.assertGreaterEqual(high, first["agreement_rate"])
        # Resampling three pairs: all-P3 resamples give 0, P1/P2-only ones give 1.
        self.assertLess(low, 0.8)
        self.assertEqual(high, 1.0)

    def test_confidence_histogram_cross_dimension_and_position_bias(self):
        frame = self.frame()
        conf = agreement.confidence_report(frame)
        counts = dict(zip(conf["histogram"]["alignment"]["values"], conf["histogram"]["alignment"]["counts"], strict=True))
        self.assertEqual(counts, {1.0: 1, 1.5: 0, 2.0: 1, 2.5: 0, 3.0: 2, 3.5: 1, 4.0: 1, 4.5: 1, 5.0: 1})
        self.assertAlmostEqual(conf["histogram"]["alignment"]["mean"], (4 + 4.5 + 3.5 + 3 + 3 + 2 + 1 + 5) / 8, places=4)
        cross = conf["cross_dimension"]
        # Alignment and musicality differ on u2's P1 and P4 votes only.
        self.assertEqual((cross["votes"], cross["same"], cross["different"]), (8, 6, 2))
        self.assertAlmostEqual(cross["mean_confidence_different"]["alignment"], (4.5 + 5.0) / 2, places=4)
        self.assertAlmostEqual(cross["mean_confidence_same"]["musicality"], (4 + 3 + 3 + 3 + 2.5 + 1.5) / 6, places=4)
        bias = agreement.position_bias(frame)["alignment"]
        # Answers on screen: u1 A,B,A (P1-P3); u2 B,A,A (P1, P2, P4); u3 A,A (P1, P3) -> 6 of 8 chose A.
        self.assertEqual((bias["votes"], bias["a_side"]), (8, 6))
        self.assertAlmostEqual(bias["p_value"], binomtest(6, 8, 0.5).pvalue, places=5)

    def test_confidence_alpha_is_ordinal_krippendorff(self):
        value = agreement.confidence_alpha(self.frame(), "alignment")
        matrix = np.array([[4.0, 3.0, 2.0, NAN], [4.5, 3.0, NAN, 5.0], [3.5, NAN, 1.0, NAN]])
        expected = krippendorff.alpha(reliability_data=matrix, value_domain=agreement.CONFIDENCE_DOMAIN, level_of_measurement="ordinal")
        self.assertAlmostEqual(value, expected, places=4)

    def test_annotator_rows_use_leave_one_out_majority(self):
        rows = {r["pseudonym"]: r for r in agreement.annotator_table(self.frame(), thresholds=agreement.Thresholds())}
        u1 = rows["p-u1"]
        # u1: P1 others (u2, u3) both clip_a -> agree; P2 other u2 clip_b -> agree; P3 other u3 clip_b -> disagree.
        self.assertEqual(u1["overlap_alignment"], 3)
        self.assertAlmostEqual(u1["majority_agreement_alignment"], 2 / 3, places=4)
        # u2 on musicality: P1 others clip_a vs u2 clip_b -> disagree; P2 agree; P4 has no others.
        self.assertEqual(rows["p-u2"]["overlap_musicality"], 2)
        self.assertAlmostEqual(rows["p-u2"]["majority_agreement_musicality"], 0.5, places=4)
        self.assertEqual(u1["votes"], 3)
        self.assertAlmostEqual(u1["median_time_s"], 20.0, places=4)
        self.assertAlmostEqual(u1["median_heard_s"], 13.0, places=4)
        self.assertAlmostEqual(u1["rationale_rate"], 1 / 3, places=4)
        self.assertAlmostEqual(u1["rationale_mean_length"], len("A keeps the tempo the prompt asks for"), places=1)
        self.assertAlmostEqual(u1["a_share_alignment"], 2 / 3, places=4)
        self.assertEqual(u1["flags"], [])  # too few answers for any flag

    def test_withdrawn_annotator_is_always_left_out(self):
        AnnotatorProfile.objects.filter(user=self.u3).update(withdrawn_at=timezone.now())
        frame = self.frame()
        self.assertNotIn("p-u3", set(frame["pseudonym"]))
        result = agreement.agreement_report(frame, rounds=0)["alignment"]
        # Left: P1 (u1, u2) agree, P2 (u1, u2) agree; P3 has one vote.
        self.assertEqual((result["vote_pairs"], result["agreements"]), (2, 2))

    def test_gold_accuracy(self):
        gold = PairFactory(study=self.study, kind=Pair.Kind.GOLD)
        gold.expected_alignment, gold.expected_musicality = gold.clip_a, gold.clip_b
        gold.save()
        vote(gold, self.u1, shown_a=gold.clip_a, alignment=gold.clip_a, musicality=gold.clip_a)
        rows = {r["pseudonym"]: r for r in agreement.annotator_table(self.frame(), thresholds=agreement.Thresholds())}
        self.assertEqual(rows["p-u1"]["gold_answers"], 2)
        self.assertAlmostEqual(rows["p-u1"]["gold_accuracy"], 0.5, places=4)
        self.assertIsNone(rows["p-u2"]["gold_accuracy"])


class ExclusionTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.researcher = UserFactory(username="res", roles=["researcher"])
        cls.study = StudyFactory(name="exclusion-study", owner=cls.researcher)
        cls.annotators = [AnnotatorFactory(username=f"x{i}") for i in range(3)]
        cls.pairs = [PairFactory(study=cls.study) for _ in range(2)]
        for pair in cls.pairs:
            vote(pair, cls.annotators[0], shown_a=pair.clip_a, alignment=pair.clip_a)
            vote(pair, cls.annotators[1], shown_a=pair.clip_a, alignment=pair.clip_a)
            vote(pair, cls.annotators[2], shown_a=pair.clip_a, alignment=pair.clip_b)

    def profile(self, index):
        return AnnotatorProfile.objects.get(user=self.annotators[index])

    def test_exclusion_changes_the_numbers_and_is_recorded_and_reversible(self):
        before = agreement.agreement_report(agreement.votes_frame(study=self.study), rounds=0)["alignment"]
        self.assertAlmostEqual(before["agreement_rate"], 1 / 3, places=4)  # per pair: 1 agreeing of 3
        services.annotator_exclude(profile=self.profile(2), by=self.researcher, reason="clicks at random on gold pairs")
        frame = agreement.votes_frame(study=self.study)
        after = agreement.agreement_report(frame, rounds=0)["alignment"]
        self.assertEqual((after["vote_pairs"], after["agreement_rate"]), (2, 1.0))
        rows = {r["pseudonym"]: r for r in agreement.annotator_table(frame, thresholds=agreement.Thresholds())}
        self.assertTrue(rows["p-x2"]["excluded"])
        # Still measured, against the included majority only.
        self.assertEqual(rows["p-x2"]["majority_agreement_alignment"], 0.0)
        self.assertEqual(rows["p-x0"]["majority_agreement_alignment"], 1.0)
        profile = self.profile(2)
        self.assertIsNotNone(profile.excluded_at)
        self.assertRegex(profile.excluded_reason, r"^\d{4}-\d\d-\d\dT\S+ excluded by res: clicks at random on gold pairs$")

        services.annotator_include(profile=profile, by=self.researcher, reason="checked the audio: it was broken")
        profile.refresh_from_db()
        self.assertIsNone(profile.excluded_at)
        self.assertEqual(len(profile.excluded_reason.splitlines()), 2)
        self.assertIn("included again by res: checked the audio", profile.excluded_reason)
        restored = agreement.agreement_report(agreement.votes_frame(study=self.study), rounds=0)["alignment"]
        self.assertEqual(restored["agreement_rate"], before["agreement_rate"])

    def test_exclusion_needs_a_reason_and_a_researcher(self):
        with self.assertRaisesMessage(ServiceError, "Say why"):
            services.annotator_exclude(profile=self.profile(0), by=self.researcher, reason="  ")
        with self.assertRaises(ServiceError) as caught:
            services.annotator_exclude(profile=self.profile(0), by=self.annotators[1], reason="no")
        self.assertEqual(caught.exception.status, 403)
        self.assertIsNone(self.profile(0).excluded_at)
        with self.assertRaisesMessage(ServiceError, "is not excluded"):
            services.annotator_include(profile=self.profile(0), by=self.researcher)
        services.annotator_exclude(profile=self.profile(0), by=self.researcher, reason="test")
        with self.assertRaisesMessage(ServiceError, "already excluded"):
            services.annotator_exclude(profile=self.profile(0), by=self.researcher, reason="again")


@pytest.mark.parametrize("seed", range(5))
def test_closed_form_alpha_equals_the_krippendorff_package(seed):
    """The bootstrap uses summed per-pair coincidences; they must give the package's alpha exactly."""
    rng = np.random.default_rng(seed)
    n = rng.integers(2, 7, size=40)
    k = rng.binomial(n, rng.uniform(0.2, 0.8, size=40))
    sums = agreement.nominal_unit_stats(n, k).sum(axis=0)
    expected = krippendorff.alpha(value_counts=np.column_stack([n - k, k]), level_of_measurement="nominal")
    assert agreement.alpha_nominal_from_sums(sums) == pytest.approx(expected, abs=1e-12)
    # And the agreement-rate columns are plain pair counts.
    assert sums[0] == pytest.approx((n * (n - 1) / 2).sum())
    assert sums[1] == pytest.approx((k * (k - 1) / 2 + (n - k) * (n - k - 1) / 2).sum())


def test_bootstrap_sums_resample_units_with_replacement():
    units = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    draws = stats.bootstrap_sums(units, rounds=500, seed=3)
    # Every resample has three units, so the first column plus the second equals 3 + (units of type 3).
    assert draws.shape == (500, 2)
    assert ((draws >= 0) & (draws <= 3)).all()
    assert draws.mean(axis=0) == pytest.approx([2.0, 2.0], abs=0.1)
    assert np.array_equal(draws, stats.bootstrap_sums(units, rounds=500, seed=3))


def test_thresholds_parse_rejects_bad_values_with_a_readable_message():
    assert agreement.thresholds_parse({}) == agreement.Thresholds()
    assert agreement.thresholds_parse({"min_votes": "5", "gold_min": "0.9"}).min_votes == 5
    with pytest.raises(ServiceError, match="min_votes='many' is not an integer"):
        agreement.thresholds_parse({"min_votes": "many"})
    with pytest.raises(ServiceError, match="agreement_p=2 is out of range"):
        agreement.thresholds_parse({"agreement_p": "2"})
    with pytest.raises(ServiceError, match="finite"):
        agreement.thresholds_parse({"gold_min": "nan"})


def test_votes_frame_prepare_on_a_synthetic_frame():
    frame = agreement.votes_frame_prepare(
        pd.DataFrame(
            {
                "judgment_id": [1, 2],
                "pair_id": [1, 1],
                "annotator_id": [10, 11],
                "pseudonym": ["a", None],
                "excluded": [None, pd.Timestamp("2025-01-01", tz="UTC")],
                "clip_a": [5, 5],
                "clip_b": [6, 6],
                "a_clip": [5, 6],
                "alignment_choice": [5, 5],
                "musicality_choice": [6, 5],
                "alignment_confidence": [Decimal("3.0"), Decimal("4.5")],
                "musicality_confidence": [3, 2],
            }
        )
    )
    assert list(frame["excluded"]) == [False, True]
    assert list(frame["pseudonym"]) == ["a", "annotator-11"]
    assert list(frame["pref_alignment"]) == [1, 1]
    assert list(frame["aside_alignment"]) == [1, 0]
    assert list(frame["pref_musicality"]) == [0, 1]
