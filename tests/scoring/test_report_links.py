"""A study's report is reached by links: the nav, the reports index, the study page, the runs page and a run's page."""

from __future__ import annotations

from django.test import TestCase
from django.urls import reverse

from scoring.models import Judge, ScoringRun
from tests.factories import AnnotatorFactory, JudgmentFactory, PairFactory, StudyFactory, UserFactory


class ReportLinkTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.researcher = UserFactory(username="linker", roles=["researcher"])
        # The study rule: reports, runs and study pages are for the owner, collaborators and admins.
        cls.study = StudyFactory(name="linked", title="Linked study", owner=cls.researcher)
        cls.pairs = [PairFactory(study=cls.study) for _ in range(2)]
        JudgmentFactory(pair=cls.pairs[0])
        StudyFactory(name="empty-one", owner=cls.researcher)
        StudyFactory(name="someone-elses")  # never listed to this researcher
        judge = Judge.objects.create(key="signal", kind=Judge.Kind.SIGNAL)
        cls.scoring_run = ScoringRun.objects.create(judge=judge, study=cls.study, state=ScoringRun.State.DONE, total=2, done=2)
        cls.report = reverse("scoring:study-report", args=["linked"])

    def setUp(self):
        self.client.force_login(self.researcher)

    def test_nav_links_to_the_reports_index_which_lists_every_study_with_counts(self):
        home = self.client.get(reverse("home"))
        self.assertContains(home, f'href="{reverse("scoring:report-list")}"')
        index = self.client.get(reverse("scoring:report-list"))
        self.assertContains(index, f'href="{self.report}"')
        self.assertContains(index, reverse("scoring:study-report", args=["empty-one"]))
        rows = {s.name: (s.n_pairs, s.n_judgments, s.n_runs) for s in index.context["studies"]}
        self.assertEqual(rows, {"linked": (2, 1, 1), "empty-one": (0, 0, 0)})

    def test_study_page_runs_page_and_run_page_link_to_the_report(self):
        for url in (
            reverse("study-manage", args=["linked"]),
            reverse("study-manage-list"),
            reverse("scoring:run-list"),
            reverse("scoring:run-detail", args=[self.scoring_run.pk]),
        ):
            self.assertContains(self.client.get(url), f'href="{self.report}"', msg_prefix=url)

    def test_annotators_see_no_report_links_and_are_refused_the_index(self):
        self.client.force_login(AnnotatorFactory())
        self.assertNotContains(self.client.get(reverse("home")), reverse("scoring:report-list"))
        self.assertEqual(self.client.get(reverse("scoring:report-list")).status_code, 403)
