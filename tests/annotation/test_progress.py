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
