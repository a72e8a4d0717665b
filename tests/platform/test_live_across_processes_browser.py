"""Live pages follow changes made by another process within 3 s: a training run's page, a scoring run's
verdict table, the arena leaderboard and a study report, on the demo's embedded settings (the SQLite-file channel layer)
and, where REDIS_URL is set, on Redis.

Each change is made by a child process (`manage.py shell` on the project's own settings), the way the
demo's worker makes it: a reward-model training run by the training service, the pairs of a scoring run
judged by the signal judge through the run's queued jobs, the board refitted by `manage.py leaderboard`.
"""

from __future__ import annotations

from datetime import timedelta
from unittest import mock

import pytest
from django.test.utils import override_settings
from django.utils import timezone

from arena.models import LeaderboardSnapshot
from arena.services import vote_submit
from scoring.models import Judge, ScoringRun, TrainingRun
from tests.arena.conftest import FAST_RATES, arena_system, fetch_audio, ready_battle, send, visitor_with_terms
from tests.factories import PairFactory, StudyFactory, UserFactory
from tests.live_processes import OtherProcessLiveTestCase

pytestmark = pytest.mark.browser

STAMP = "import time; print('changed-at', time.time())"


@override_settings(**FAST_RATES)
class LivePagesAcrossProcessesTests(OtherProcessLiveTestCase):
    shots_prefix = "live-shots-"

    def setUp(self):
        self.researcher = UserFactory(username="researcher", roles=["researcher"])
        self.study = StudyFactory(name="live-study", title="Live study", owner=self.researcher)
        self.errors: list[str] = []

    def open_page(self, path: str, *, sign_in: bool = True):
        context = self.browser.new_context(viewport={"width": 1280, "height": 860}, bypass_csp=True)
        page = context.new_page()
        page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        if sign_in:
            page.goto(f"{self.live_server_url}/accounts/login/?next={path}")
            page.fill("#id_username", "researcher")
            page.fill("#id_password", "pw")
            page.click("button[type=submit]")
            page.wait_for_url(f"**{path}*")
        else:
            page.goto(f"{self.live_server_url}{path}")
        return context, page

    def wait_live(self, page, selector: str):
        page.wait_for_function(f"document.querySelector({selector!r}).textContent.trim() === 'live'", timeout=10000)

    @pytest.mark.engine
    def test_a_training_run_page_follows_the_training_in_another_process(self):
        feature = Judge.objects.create(key="signal-technical", kind=Judge.Kind.SIGNAL)
        run = TrainingRun.objects.create(study=self.study, feature_judge=feature)
        context, page = self.open_page(f"/scoring/training/{run.pk}/")
        self.wait_live(page, "#live-status")
        self.assertEqual(page.locator('[data-field="state"]').inner_text(), "pending")
        # The worker's task: the study has no votes, so the training ends failed, and says why.
        at = self.other_process(f"from scoring.reward.services import training_execute; training_execute(training_id={run.pk}); {STAMP}")
        latency = self.wait_until(page, "document.querySelector('[data-field=\"state\"]').textContent === 'failed'", since=at)
        self.wait_until(page, "!!document.querySelector('#training-results .error')", since=at)
        TrainingRun.objects.get(pk=run.pk, state=TrainingRun.State.FAILED)
        self.assertIn(TrainingRun.objects.get(pk=run.pk).error[:40], page.locator("#training-results .error").inner_text())
        page.screenshot(path=str(self.shots / "live-training-failed.png"), full_page=True)
        print(f"training page: {latency:.2f} s after the change")
        self.assertEqual(self.errors, [])
        context.close()

    @pytest.mark.engine
    def test_a_scoring_runs_verdict_table_fills_as_another_process_judges_its_pairs(self):
        judge = Judge.objects.create(key="signal-technical", kind=Judge.Kind.SIGNAL)
        pairs = [PairFactory(study=self.study) for _ in range(2)]
        run = ScoringRun.objects.create(judge=judge, study=self.study, pair_ids=[p.pk for p in pairs], total=len(pairs))
        context, page = self.open_page(f"/scoring/runs/{run.pk}/")
        self.wait_live(page, "#live-status")
        self.assertIn("No verdict yet", page.locator("#verdicts").inner_text())
        # The worker's task for a queued run: one job per pair, each judged and stored (Celery runs them in that process).
        at = self.other_process(f"from scoring import services; services.run_dispatch(run_id={run.pk}); {STAMP}")
        latency = self.wait_until(page, "document.querySelectorAll('#verdicts tbody tr.status-ok').length === 2", since=at)
        self.wait_until(page, "document.querySelector('[data-field=\"state\"]').textContent === 'done'", since=at)
        self.assertEqual(ScoringRun.objects.get(pk=run.pk).state, ScoringRun.State.DONE)
        self.assertNotIn("No verdict yet", page.locator("#verdicts").inner_text())
        page.screenshot(path=str(self.shots / "live-scoring-run.png"), full_page=True)
        print(f"verdict table: {latency:.2f} s after the change")
        self.assertEqual(self.errors, [])
        context.close()

    @pytest.mark.engine
    def test_the_arena_leaderboard_shows_a_refit_made_by_another_process(self):
        a, b = arena_system("aurora-live"), arena_system("borealis-live")
        visitor, _ = visitor_with_terms()
        # Votes land without a refit here (the refit is the other process's change).
        with mock.patch("arena.services.leaderboard_queue_refresh"):
            for choice in ("a", "a", "b"):
                battle = ready_battle(visitor, a, b, ready_ago=60)
                t0 = timezone.now() - timedelta(seconds=50)
                for side, offset in (("a", 0), ("b", 10)):
                    fetch_audio(battle, side=side, at=t0)
                    send(battle, visitor, [(offset + s, kind, side) for s, kind in ((0, "play"), (3, "pause"), (4, "play"), (7, "ended"))], start=t0)
                vote_submit(battle=battle, visitor=visitor, choice=choice)
        self.assertFalse(LeaderboardSnapshot.objects.exists())
        context, page = self.open_page("/arena/leaderboard/", sign_in=False)
        self.wait_live(page, "#live")
        self.assertNotIn("aurora-live", page.locator("#board-rows").inner_text())
        at = self.other_process(f"from django.core.management import call_command; call_command('leaderboard', '--refresh', '--min-votes', '1', '--rounds', '30'); {STAMP}")
        latency = self.wait_until(page, "document.getElementById('board-rows').textContent.includes('aurora-live')", since=at)
        self.assertIn("3 votes", page.locator("#board-meta").inner_text())
        page.screenshot(path=str(self.shots / "live-leaderboard.png"), full_page=True)
        print(f"leaderboard: {latency:.2f} s after the change")
        self.assertEqual(self.errors, [])
        context.close()

    @pytest.mark.engine
    def test_a_study_report_refreshes_when_another_process_announces_a_change(self):
        context, page = self.open_page(f"/scoring/studies/{self.study.name}/report/")
        self.wait_live(page, "#live-status")
        # What a judgment submitted in another process queues: the debounced "report changed" push.
        at = self.other_process(f"from scoring.broadcast import report_changed_queue; report_changed_queue(study_id={self.study.pk}, reason='judgment'); {STAMP}")
        latency = self.wait_until(page, "document.getElementById('live-status').textContent.startsWith('live · updated')", since=at)
        print(f"study report: {latency:.2f} s after the change")
        self.assertEqual(self.errors, [])
        context.close()


@pytest.mark.services
class LivePagesAcrossProcessesOnRedisTests(LivePagesAcrossProcessesTests):
    """The same pages with the layer a deployment uses."""

    redis = True
    shots_prefix = "live-redis-shots-"
