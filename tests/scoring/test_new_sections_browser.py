"""The best-of-N pages, the report's drift section, a run's catch pairs by kind and a paused recruitment link, in
Chromium at 1280 and 390 px: figures shown with their intervals, nothing scrolls sideways."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest
from django.utils import timezone

from annotation import services as annotation_services
from annotation.demo import SYSTEM_NAMES
from annotation.demo.seed import SEEDED_VOTERS, seeded_voter
from annotation.demo.votes import demo_rank_votes_seed
from annotation.models import Judgment, Pair
from arena.seed import arena_seed
from scoring import best_of_n, services
from scoring.demo import SIGNAL_JUDGE, demo_judges_seed
from scoring.models import Judge, ScoringRun, Verdict
from tests.factories import ClipFactory, ConditionFactory, JudgmentFactory, PairFactory, StudyFactory, UserFactory
from tests.live_browser import BrowserLiveServerTestCase

pytestmark = [pytest.mark.browser]

WIDTHS = {"desktop": {"viewport": {"width": 1280, "height": 900}}, "phone": {"viewport": {"width": 390, "height": 844}, "device_scale_factor": 1, "is_mobile": True, "has_touch": True}}


def _drift_study(owner):
    """Two recruitment batches, the second answering at chance: its link pauses at the next arrival."""
    rng = np.random.default_rng(3)
    study = StudyFactory(name="drift-page", owner=owner)
    regular = [PairFactory(study=study, condition=ConditionFactory(), clip_a=ClipFactory(), clip_b=ClipFactory(), overlap=20) for _ in range(6)]
    gold = []
    for _ in range(4):
        a = ClipFactory()
        gold.append(PairFactory(study=study, condition=ConditionFactory(), clip_a=a, clip_b=ClipFactory(), kind=Pair.Kind.GOLD, expected_alignment=a, expected_musicality=a, overlap=20))
    day = timezone.now() - timedelta(days=2)
    for n, (label, right, pause) in enumerate((("batch-1", 0.92, None), ("batch-2", 0.5, 0.7))):
        link = annotation_services.recruitment_link_create(study=study, completion_code=f"C{n}", label=label, gold_pause_below=pause, gold_pause_window=4)
        users = [annotation_services.recruitment_enter(token=link.token, params={"PROLIFIC_PID": f"P{n}{k}"})[0].user for k in range(4)]
        for user in users:
            for pair in [*regular, *gold]:
                picks = [pair.clip_a if rng.random() < right else pair.clip_b for _ in range(2)]
                JudgmentFactory(annotator=user, pair=pair, alignment_choice=picks[0], musicality_choice=picks[1])
            Judgment.objects.filter(annotator=user).update(created_at=day + timedelta(days=n))
    try:
        annotation_services.recruitment_enter(token=link.token, params={"PROLIFIC_PID": "late"})
    except Exception:
        pass  # the chance batch's link pauses here
    return study


class NewSectionsBrowserTests(BrowserLiveServerTestCase):
    shots_prefix = "new-sections-shots-"

    @pytest.mark.engine
    def test_best_of_n_drift_catch_kinds_and_a_paused_link_at_1280_and_390_px(self):
        owner = UserFactory(username="sections-owner", roles=["researcher"])
        arena_seed()
        demo_judges_seed()
        judge = Judge.objects.get(key=SIGNAL_JUDGE)
        experiment = best_of_n.best_of_n_create(
            name="bon-page", owner=owner, prompts=["Calm piano ballad in C major", "Upbeat synth pop at 120 bpm"], n=4, ranker=judge, systems=SYSTEM_NAMES, seconds=2.0, queue=False
        )
        experiment = best_of_n.best_of_n_execute(experiment_id=experiment.pk)
        demo_rank_votes_seed(study=experiment.study, annotators=[seeded_voter(experiment.study, name) for name in SEEDED_VOTERS])
        drift = _drift_study(owner)
        pair = drift.pairs.filter(kind=Pair.Kind.REGULAR).first()
        _, catch = services.hard_negative_create(clip=pair.clip_a, degradation={"kind": "noise", "snr_db": 0}, study=drift)
        run = ScoringRun.objects.create(judge=judge, study=drift, state=ScoringRun.State.DONE)
        Verdict.objects.create(run=run, pair=catch, musicality_choice=catch.clip_a)
        run.summary = {"verdicts": services.run_verdict_stats(run=run)}
        run.save(update_fields=["summary"])
        for name, options in WIDTHS.items():
            context, page = self.open_as("sections-owner", f"/scoring/studies/bon-page/best-of-n/?include_seeded=1", **options)
            page.wait_for_selector("#bon-results")
            self.assertEqual(page.locator("#bon-results tbody tr").count(), 4)
            self.assertIn("[", page.locator("#bon-results tbody tr").first.inner_text())
            self.assertEqual(page.locator(".bon-candidates").count(), 2)
            self.assertEqual(self.overflow(page), 0, f"the best-of-N page scrolls sideways at {name}")
            page.screenshot(path=str(self.shots / f"best-of-n-{name}.png"), full_page=True)
            page.goto(f"{self.live_server_url}/scoring/best-of-n/")
            page.wait_for_selector("#bon-form")
            self.assertEqual(self.overflow(page), 0)
            page.screenshot(path=str(self.shots / f"best-of-n-list-{name}.png"), full_page=True)
            page.goto(f"{self.live_server_url}/scoring/studies/drift-page/report/?bootstrap=100", timeout=120_000)
            page.wait_for_selector("#drift", timeout=90_000)
            self.assertIn("batch-2", page.locator("#drift-flags").inner_text())
            self.assertEqual(page.locator("#drift table.drift").count(), 2)
            self.assertEqual(self.overflow(page), 0, f"the report scrolls sideways at {name}")
            page.locator("#drift").screenshot(path=str(self.shots / f"drift-{name}.png"))
            page.goto(f"{self.live_server_url}/scoring/runs/{run.pk}/")
            page.wait_for_selector("#catch-kinds")
            self.assertIn("noise", page.locator("#catch-kinds").inner_text())
            self.assertEqual(self.overflow(page), 0)
            page.locator("#catch-kinds").screenshot(path=str(self.shots / f"catch-kinds-{name}.png"))
            page.goto(f"{self.live_server_url}/manage/studies/drift-page/")
            page.wait_for_selector("#recruitment-links")
            self.assertIn("paused", page.locator("#recruitment-links").inner_text())
            self.assertIn("Gold accuracy of the last 4 participants", page.locator("#recruitment-links").inner_text())
            self.assertEqual(self.overflow(page), 0)
            page.locator("#recruitment").screenshot(path=str(self.shots / f"paused-link-{name}.png"))
            context.close()
