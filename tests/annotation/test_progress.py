"""One account of an annotator's progress: the home page and the listening page's API agree."""

from __future__ import annotations

from django.test import TestCase
from django.urls import reverse

from annotation import selectors
from tests.factories import AnnotatorFactory, JudgmentFactory, PairFactory, StudyAnnotatorFactory, StudyFactory


class ProgressAgreesTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.study = StudyFactory(name="agree", overlap_target=1)
        cls.pairs = [PairFactory(study=cls.study) for _ in range(3)]
        cls.me = AnnotatorFactory(username="me")
        cls.other = AnnotatorFactory(username="other")
        StudyAnnotatorFactory(study=cls.study, annotator=cls.me)
        StudyAnnotatorFactory(study=cls.study, annotator=cls.other)
        # One vote per pair: the other annotator took two of the three pairs, I judged the third.
        JudgmentFactory(pair=cls.pairs[0], annotator=cls.other)
        JudgmentFactory(pair=cls.pairs[1], annotator=cls.other)
        JudgmentFactory(pair=cls.pairs[2], annotator=cls.me)

    def setUp(self):
        self.client.force_login(self.me)

    def test_nothing_left_is_finished_on_both_pages_with_the_same_count(self):
        home = self.client.get(reverse("home"))
        self.assertContains(home, "1 of 1 pairs judged")
        self.assertContains(home, "Finished")
        self.assertNotContains(home, ">Continue<")
        answer = self.client.post(reverse("api-assignment-next", args=[self.study.name])).json()
        self.assertIsNone(answer["assignment"])
        self.assertEqual(answer["state"], "finished")
        self.assertEqual((answer["progress"]["done"], answer["progress"]["target"]), (1, 1))
        self.assertIn("1 of 1", answer["detail"])

    def test_a_pair_with_room_keeps_the_study_open(self):
        PairFactory(study=self.study)
        progress = selectors.annotator_progress(study=self.study, annotator=self.me)
        self.assertEqual((progress["done"], progress["target"], progress["left"], progress["state"]), (1, 2, 1, "open"))
        self.assertContains(self.client.get(reverse("home")), ">Continue<")

    def test_a_closed_study_says_it_is_closed(self):
        PairFactory(study=self.study)
        self.study.is_active = False
        self.study.save(update_fields=["is_active"])
        answer = self.client.post(reverse("api-assignment-next", args=[self.study.name])).json()
        self.assertEqual(answer["state"], "closed")
        self.assertIn("closed", answer["detail"])
        self.assertNotIn("Thank you", answer["detail"])


class ProgressCountsReachablePairsTests(TestCase):
    """Pairs other annotators already filled are not counted as the annotator's to do, on either page."""

    def test_home_and_the_served_pair_give_the_same_target_without_full_pairs(self):
        study = StudyFactory(name="filled", overlap_target=1)
        full = [PairFactory(study=study, overlap=1) for _ in range(4)]
        for _ in range(3):
            PairFactory(study=study, overlap=1)
        me, other = AnnotatorFactory(username="me"), AnnotatorFactory(username="other")
        StudyAnnotatorFactory(study=study, annotator=me)
        StudyAnnotatorFactory(study=study, annotator=other)
        for pair in full:
            JudgmentFactory(pair=pair, annotator=other)
        self.client.force_login(me)
        self.assertContains(self.client.get(reverse("home")), 'data-progress="filled">0 of 3 pairs judged by you<')
        served = self.client.post(reverse("api-assignment-next", args=[study.name])).json()["assignment"]
        self.assertEqual((served["progress"]["done"], served["progress"]["target"]), (0, 3))
        # The same pair comes back while reserved: it still counts once.
        again = self.client.post(reverse("api-assignment-next", args=[study.name])).json()["assignment"]
        self.assertEqual(again["id"], served["id"])
        self.assertEqual(again["progress"]["target"], 3)
        self.assertContains(self.client.get(reverse("home")), 'data-progress="filled">0 of 3 pairs judged by you<')


class RatingStudiesCountRatedItemsTests(TestCase):
    def test_rating_studies_say_clips_or_sets_rated_not_pairs_judged(self):
        from annotation import services
        from tests.ratings_helpers import rating_study

        me = AnnotatorFactory(username="rater")
        for name, task in (("acr-study", "acr"), ("multi-study", "multi")):
            study = rating_study(task=task, items=2, name=name)
            services.study_annotator_add(study=study, user=me)
        self.client.force_login(me)
        home = self.client.get(reverse("home")).content.decode()
        self.assertIn('data-progress="acr-study">0 of 2 clips rated by you<', home)
        self.assertIn('data-progress="multi-study">0 of 2 sets rated by you<', home)
        self.assertNotIn("pairs judged", home)
