"""The study report's live group hears every change that moves its figures: a scoring run that finishes,
an annotator who withdraws (or consents again), besides votes and exclusions (tests/scoring/test_report.py).
The push leaves after the commit, from the service that made the change."""

from __future__ import annotations

from unittest import mock

import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.test import TestCase

from annotation import services as annotation_services
from scoring import broadcast, services
from scoring.models import Judge, ScoringRun, Verdict
from scoring.routing import websocket_urlpatterns
from tests.factories import AnnotatorFactory, JudgmentFactory, PairFactory, StudyFactory, UserFactory


# database_sync_to_async closes "old" connections around each call; inside a TestCase
# transaction that would close the test's own connection.
@mock.patch("channels.db.close_old_connections", lambda: None)
class ReportGroupTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.researcher = UserFactory(username="report-live-res", roles=["researcher"])
        cls.study = StudyFactory(name="report-live", owner=cls.researcher)
        cls.other = StudyFactory(name="report-live-other", owner=cls.researcher)
        cls.pairs = [PairFactory(study=cls.study) for _ in range(2)]
        cls.voter = AnnotatorFactory(username="report-live-voter")
        for pair in cls.pairs:  # two votes in one study: one push for it
            JudgmentFactory(annotator=cls.voter, pair=pair)
        cls.judge = Judge.objects.create(key="signal-technical", kind=Judge.Kind.SIGNAL)

    def messages_after(self, change, *, study=None, expect: int = 1) -> list[dict]:
        """The messages the study's report group receives while `change` runs and its commit callbacks fire."""

        def run_change():
            with self.captureOnCommitCallbacks(execute=True):
                change()

        async def scenario():
            communicator = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/scoring/studies/{(study or self.study).name}/report/")
            communicator.scope["user"] = self.researcher
            connected, _ = await communicator.connect()
            self.assertTrue(connected)
            await database_sync_to_async(run_change)()
            received = [await communicator.receive_json_from(timeout=5) for _ in range(expect)]
            self.assertTrue(await communicator.receive_nothing(timeout=0.3), "more pushes than expected")
            await communicator.disconnect()
            return received

        return async_to_sync(scenario)()

    def run_with_verdicts(self, *, study, stored: int) -> ScoringRun:
        run = ScoringRun.objects.create(judge=self.judge, study=study, pair_ids=[p.pk for p in self.pairs], total=len(self.pairs), state=ScoringRun.State.RUNNING)
        for pair in self.pairs[:stored]:
            Verdict.objects.create(run=run, pair=pair, alignment_choice=pair.clip_a, musicality_choice=pair.clip_b)
        return run

    @pytest.mark.engine
    def test_the_consent_listener_is_installed(self):
        self.assertIn(broadcast.report_consent_listener, annotation_services.consent_listeners)

    @pytest.mark.engine
    def test_a_run_that_finishes_reaches_the_report_of_its_study(self):
        run = self.run_with_verdicts(study=self.study, stored=2)
        (message,) = self.messages_after(lambda: services.run_progress_update(run_id=run.pk))
        self.assertEqual((message["type"], message["reason"]), ("changed", "run"))
        self.assertEqual(ScoringRun.objects.get(pk=run.pk).state, ScoringRun.State.DONE)

    @pytest.mark.engine
    def test_a_run_scoped_by_pairs_reaches_the_report_of_the_pairs_study(self):
        run = self.run_with_verdicts(study=None, stored=2)
        (message,) = self.messages_after(lambda: services.run_progress_update(run_id=run.pk))
        self.assertEqual(message["reason"], "run")

    @pytest.mark.engine
    def test_a_run_still_going_or_another_studys_run_sends_nothing(self):
        run = self.run_with_verdicts(study=self.study, stored=1)
        self.assertEqual(self.messages_after(lambda: services.run_progress_update(run_id=run.pk), expect=0), [])
        self.assertEqual(ScoringRun.objects.get(pk=run.pk).state, ScoringRun.State.RUNNING)
        finished = self.run_with_verdicts(study=self.study, stored=2)
        self.assertEqual(self.messages_after(lambda: services.run_progress_update(run_id=finished.pk), study=self.other, expect=0), [])

    @pytest.mark.engine
    def test_a_withdrawal_and_renewed_consent_reach_the_report_of_every_study_voted_in(self):
        (message,) = self.messages_after(lambda: annotation_services.consent_withdraw(user=self.voter))
        self.assertEqual((message["type"], message["reason"]), ("changed", "consent"))
        (message,) = self.messages_after(lambda: annotation_services.consent_give(user=self.voter))
        self.assertEqual(message["reason"], "consent")
        # Consent given while not withdrawn changes no figure, and a study the voter never voted in hears nothing.
        self.assertEqual(self.messages_after(lambda: annotation_services.consent_give(user=self.voter), expect=0), [])
        self.assertEqual(self.messages_after(lambda: annotation_services.consent_withdraw(user=self.voter), study=self.other, expect=0), [])

    @pytest.mark.engine
    def test_a_withdrawal_that_is_rolled_back_sends_nothing(self):
        def withdraw_then_fail():
            from django.db import transaction

            try:
                with transaction.atomic():
                    annotation_services.consent_withdraw(user=self.voter)
                    raise RuntimeError("rolled back")
            except RuntimeError:
                pass

        self.assertEqual(self.messages_after(withdraw_then_fail, expect=0), [])
