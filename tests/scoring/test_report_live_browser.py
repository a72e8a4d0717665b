"""An open study report follows changes made in another process (as the demo's worker and a second web
process make them) without a reload: a scoring run that finishes shows its verdicts, and an annotator who
withdraws takes their vote out of the counts (4 votes become 3)."""

from __future__ import annotations

import pytest

from scoring.models import Judge, ScoringRun
from tests.factories import AnnotatorFactory, JudgmentFactory, PairFactory, StudyFactory, UserFactory
from tests.live_processes import OtherProcessLiveTestCase

pytestmark = pytest.mark.browser

STAMP = "import time; print('changed-at', time.time())"
VOTES = ".report-facts div:nth-child(3) dd"
JUDGE_ROW = "#judges table tbody tr:first-child"
JUDGE_VERDICTS = f"{JUDGE_ROW} td:first-of-type"  # querySelector and .first: the main table, not the breakdowns
# The push, the page's 1.5 s debounce, the report computed afresh (seconds on a busy machine, even
# without bootstrap) and the body swapped in. Without the push the page would only poll every 30 s.
WITHIN = 25.0


class ReportFollowsOtherProcessesTests(OtherProcessLiveTestCase):
    shots_prefix = "report-live-shots-"

    def setUp(self):
        self.researcher = UserFactory(username="researcher", roles=["researcher"])
        self.study = StudyFactory(name="live-report", title="Live report", owner=self.researcher)
        self.pairs = [PairFactory(study=self.study) for _ in range(2)]
        for n in range(4):
            JudgmentFactory(annotator=AnnotatorFactory(username=f"voter-{n}"), pair=self.pairs[0])
        self.errors: list[str] = []

    def open_report(self):
        # No bootstrap intervals: what is timed is the way from the change to the page, not the statistics.
        path = f"/scoring/studies/{self.study.name}/report/?bootstrap=0"
        context, page = self.open_as("researcher", path, viewport={"width": 1280, "height": 900}, bypass_csp=True)
        page.wait_for_function("document.getElementById('live-status').textContent.trim() === 'live'", timeout=30_000)
        self.assertEqual(page.locator(VOTES).inner_text(), "4")
        return context, page

    @pytest.mark.engine
    def test_a_withdrawal_in_another_process_lowers_the_votes_shown(self):
        context, page = self.open_report()
        at = self.other_process(
            "from django.contrib.auth import get_user_model; from annotation.services import consent_withdraw; "
            f"consent_withdraw(user=get_user_model().objects.get(username='voter-3')); {STAMP}"
        )
        latency = self.wait_until(page, f"document.querySelector({VOTES!r}).textContent.trim() === '3'", since=at, within=WITHIN)
        self.assertTrue(page.locator("#live-status").inner_text().startswith("live · updated"))
        page.screenshot(path=str(self.shots / "report-after-withdrawal.png"), full_page=True)
        print(f"report after a withdrawal: {latency:.2f} s after the change")
        self.assertEqual(self.errors, [])
        context.close()

    @pytest.mark.engine
    def test_a_run_finished_in_another_process_shows_its_verdicts(self):
        judge = Judge.objects.create(key="signal-technical", kind=Judge.Kind.SIGNAL)
        run = ScoringRun.objects.create(judge=judge, study=self.study, label="technical v1", pair_ids=[p.pk for p in self.pairs], total=len(self.pairs))
        context, page = self.open_report()
        # The queued run is listed with no verdict yet.
        self.assertIn("technical v1", page.locator(JUDGE_ROW).first.inner_text())
        self.assertEqual(page.locator(JUDGE_VERDICTS).first.inner_text(), "0")
        # The worker's task for a queued run: every pair judged and stored, then the run is done.
        at = self.other_process(f"from scoring import services; services.run_dispatch(run_id={run.pk}); {STAMP}")
        self.assertEqual(ScoringRun.objects.get(pk=run.pk).state, ScoringRun.State.DONE)
        latency = self.wait_until(page, f"document.querySelector({JUDGE_VERDICTS!r}).textContent.trim() === '2'", since=at, within=WITHIN)
        page.locator("#judges").screenshot(path=str(self.shots / "report-after-run.png"))
        print(f"report after a finished run: {latency:.2f} s after the change")
        self.assertEqual(self.errors, [])
        context.close()


@pytest.mark.services
class ReportFollowsOtherProcessesOnRedisTests(ReportFollowsOtherProcessesTests):
    """The same changes with the layer a deployment uses."""

    redis = True
    shots_prefix = "report-live-redis-shots-"
