"""One home per role, one navigation on every page, and a consent link only where consent exists."""

from __future__ import annotations

import re

from django.test import TestCase
from django.urls import reverse

from annotation import services
from tests.factories import JudgmentFactory, PairFactory, StudyFactory, UserFactory


def nav(response) -> str:
    """The main navigation, with the per-request CSRF token blanked."""
    found = re.search(r'<nav aria-label="Main">(.*?)</nav>', response.content.decode(), re.S).group(1)
    return re.sub(r'name="csrfmiddlewaretoken" value="[^"]*"', "", found)


class HomePerRoleTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.researcher = UserFactory(username="res", roles=["researcher"])
        cls.admin = UserFactory(username="boss", roles=["admin"])
        cls.annotator = UserFactory(username="ann", roles=["annotator"])
        cls.other = UserFactory(username="other", roles=["annotator"])
        cls.mine = StudyFactory(name="mine", title="Mine", owner=cls.researcher)
        cls.theirs = StudyFactory(name="theirs", title="Theirs", owner=cls.admin)
        services.study_annotator_add(study=cls.mine, user=cls.annotator)
        services.study_annotator_add(study=cls.mine, user=cls.other)
        for _ in range(4):
            PairFactory(study=cls.mine)
        # Someone else's votes: the annotator's progress must not count them.
        for pair in list(cls.mine.pairs.all())[:3]:
            JudgmentFactory(annotator=cls.other, pair=pair)

    def home(self, user):
        self.client.force_login(user)
        return self.client.get(reverse("home"))

    def test_a_researcher_lands_on_their_studies_without_any_consent_prompt(self):
        response = self.home(self.researcher)
        text = response.content.decode()
        self.assertIn('id="home-research"', text)
        self.assertIn(reverse("study-manage", args=["mine"]), text)
        self.assertNotIn(reverse("study-manage", args=["theirs"]), text)
        self.assertNotIn('id="home-tasks"', text)
        self.assertNotIn(reverse("consent"), text)
        self.assertNotIn("not part of any study", text)
        self.assertNotIn("Withdraw consent", text)

    def test_an_annotator_lands_on_their_tasks_with_only_their_own_judgments_counted(self):
        response = self.home(self.annotator)
        text = response.content.decode()
        self.assertIn('id="home-tasks"', text)
        self.assertNotIn('id="home-research"', text)
        self.assertIn(reverse("consent"), text)  # not consented yet: the way in is the consent page
        self.assertRegex(text, r'data-progress="mine">0 of \d+ pairs judged by you')
        self.assertNotIn(reverse("study-manage-list"), nav(response))

    def test_staff_see_both_sections_and_every_study(self):
        text = self.home(self.admin).content.decode()
        self.assertIn('id="home-research"', text)
        self.assertIn('id="home-tasks"', text)
        self.assertIn(reverse("study-manage", args=["theirs"]), text)
        self.assertIn(reverse("study-manage", args=["mine"]), text)
        # Staff are in no study as annotators: no consent prompt, no "ask a researcher".
        self.assertNotIn(reverse("consent"), text)
        self.assertNotIn("not part of any study", text)

    def test_withdraw_consent_shows_only_after_consent_was_given(self):
        self.assertNotIn("Withdraw consent", self.home(self.annotator).content.decode())
        services.consent_give(user=self.annotator)
        self.assertIn("Withdraw consent", self.home(self.annotator).content.decode())
        services.consent_withdraw(user=self.annotator)
        self.assertNotIn("Withdraw consent", self.home(self.annotator).content.decode())

    def test_the_navigation_is_the_same_on_arena_pages_and_marks_the_current_page(self):
        self.client.force_login(self.researcher)
        home = nav(self.client.get(reverse("home")))
        for name in ("arena:arena", "arena:leaderboard"):
            page = nav(self.client.get(reverse(name)))
            for link in ("My studies", "Manage studies", "Reports", "Scoring runs", "Judges", "Arena", "Leaderboard"):
                self.assertIn(f">{link}</a>", page, f"{link} missing on {name}")
            self.assertEqual(re.sub(r' aria-current="page"', "", page), re.sub(r' aria-current="page"', "", home))
        self.assertRegex(nav(self.client.get(reverse("arena:leaderboard"))), r'aria-current="page">Leaderboard<')
        self.assertRegex(home, r'aria-current="page">My studies<')

    def test_each_scoring_page_marks_its_own_entry_of_the_navigation(self):
        from scoring.models import Judge, ScoringRun, TrainingRun

        self.client.force_login(self.researcher)
        judge = Judge.objects.create(key="sig", kind=Judge.Kind.SIGNAL)
        run = ScoringRun.objects.create(judge=judge, study=self.mine, label="sig v1")
        training = TrainingRun.objects.create(study=self.mine, feature_judge=judge, created_by=self.researcher)
        expected = {
            reverse("scoring:judge-list"): "Judges",
            reverse("scoring:training-detail", args=[training.pk]): "Judges",
            reverse("scoring:run-list"): "Scoring runs",
            reverse("scoring:run-detail", args=[run.pk]): "Scoring runs",
            reverse("scoring:report-list"): "Reports",
            reverse("scoring:study-report", args=["mine"]): "Reports",
        }
        for path, entry in expected.items():
            response = self.client.get(path)
            self.assertEqual(response.status_code, 200, path)
            self.assertEqual(re.findall(r'aria-current="page">([^<]+)<', nav(response)), [entry], path)
        # A refused training request shows the judges page again, under its own entry.
        refused = self.client.post(reverse("scoring:reward-train"), {"study": "", "features": ""})
        self.assertEqual(refused.status_code, 400)
        self.assertEqual(re.findall(r'aria-current="page">([^<]+)<', nav(refused)), ["Judges"])

    def test_anonymous_arena_visitors_get_the_arena_links_only(self):
        page = nav(self.client.get(reverse("arena:arena")))
        self.assertIn(">Arena</a>", page)
        self.assertNotIn("My studies", page)
