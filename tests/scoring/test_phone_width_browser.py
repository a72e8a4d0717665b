"""The report and a finished training's page on a 390 px phone: the page never scrolls sideways;
wide tables scroll inside their own box and plots shrink to the screen."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from django.test import override_settings

from scoring.models import Judge
from scoring.reward import services as reward
from tests.factories import UserFactory
from tests.fixtures import needs_tunejury
from tests.live_browser import BrowserLiveServerTestCase
from tests.scoring.reward_study import build_study
from tests.scoring.showcase_study import showcase_study

pytestmark = [pytest.mark.browser]

PHONE = {"viewport": {"width": 390, "height": 844}, "device_scale_factor": 1, "is_mobile": True, "has_touch": True}
MODEL_DIR = Path(tempfile.mkdtemp(prefix="auditorium-test-phone-reward-"))


class _Phone(BrowserLiveServerTestCase):
    shots_prefix = "phone-width-shots-"

    def setUp(self):
        self.errors: list[str] = []

    @staticmethod
    def culprits(page) -> list[str]:
        """The innermost elements whose hiding makes the page narrower, to name what widens it."""
        return page.evaluate(
            """() => { const base = document.documentElement.scrollWidth, found = [];
              const walk = (el) => { let deeper = false;
                for (const c of el.children) { const old = c.style.display; c.style.display = 'none';
                  const narrower = document.documentElement.scrollWidth < base; c.style.display = old;
                  if (narrower) { deeper = true; if (!walk(c)) { const path = []; for (let p = c; p && path.length < 5; p = p.parentElement) path.push(`${p.tagName}${p.id ? "#" + p.id : ""}${p.className ? "." + p.className : ""}`);
                    found.push(`${path.join(" < ")}: ${c.textContent.trim().slice(0, 60)}`); } } }
                return deeper; };
              walk(document.body); return found.slice(0, 8); }"""
        )

    def assert_fits(self, page) -> None:
        width = page.evaluate("document.documentElement.scrollWidth")
        self.assertLessEqual(width, 390, f"{page.url} is {width} px wide at 390 px: {self.culprits(page)}")
        # Every table too wide for the screen sits in a box of its own that scrolls.
        escaping = page.evaluate(
            """() => [...document.querySelectorAll('main table')].filter((t) => t.scrollWidth > t.parentElement.clientWidth + 1
                 && getComputedStyle(t.parentElement).overflowX === 'visible').map((t) => t.id || t.className)"""
        )
        self.assertEqual(escaping, [])


@needs_tunejury
class ReportAtPhoneWidthBrowserTests(_Phone):
    @pytest.mark.engine
    def test_the_report_fits_390_px_with_its_plots_and_tables(self):
        study, _, _ = showcase_study(name="phone-report")
        researcher = UserFactory(username="researcher", roles=["researcher"])
        study.owner = researcher
        study.save(update_fields=["owner"])
        context, page = self.open_as("researcher", "/scoring/reports/", **PHONE)
        # The report (bootstrap intervals included) is computed in this request; on a loaded machine that alone can pass 30 s.
        page.goto(f"{self.live_server_url}/scoring/studies/{study.name}/report/", timeout=180_000)
        page.wait_for_selector("[data-plot='agreement-rate'] svg", timeout=90_000)
        page.wait_for_selector("[data-plot='annotator-bias'] svg", timeout=30_000)
        self.assertGreater(page.locator("table.annotators tbody tr").count(), 5)
        self.assert_fits(page)
        # The plots are drawn no wider than the screen.
        widest = page.evaluate("Math.max(...[...document.querySelectorAll('.plot svg')].map((s) => s.getBoundingClientRect().right))")
        self.assertLessEqual(widest, 390)
        # The annotators' table scrolls inside its box, which the keyboard can reach.
        box = page.locator("#annotators .table-scroll")
        self.assertGreater(box.evaluate("(b) => b.scrollWidth - b.clientWidth"), 0)
        # Its rows stay one line high: a cell scrolled out of view does not wrap to its narrowest and stretch its
        # row. One line of text next to the row's exclusion form: no taller than that form plus a line (a second
        # line of text in any cell, with the cell padding, goes over).
        rows = page.evaluate(
            """() => [...document.querySelectorAll('table.annotators tbody tr')].map((tr) => {
                 const th = tr.querySelector('th'), range = document.createRange(); range.selectNodeContents(th.firstChild);
                 return { name: th.firstChild.textContent.trim(), row: tr.getBoundingClientRect().height,
                          line: range.getBoundingClientRect().height, form: tr.querySelector('form.exclusion').getBoundingClientRect().height }; })"""
        )
        for row in rows:
            self.assertLessEqual(row["row"], row["form"] + row["line"], f"annotator {row['name']}'s row is more than one line high at 390 px: {rows}")
        page.screenshot(path=str(self.shots / "report-390-top.png"))
        page.locator("#confidence").screenshot(path=str(self.shots / "report-390-confidence.png"))
        page.locator("#annotators").screenshot(path=str(self.shots / "report-390-annotators.png"))
        box.evaluate("(b) => { b.scrollLeft = b.scrollWidth; }")
        page.locator("#annotators").screenshot(path=str(self.shots / "report-390-annotators-scrolled.png"))
        self.assertEqual([e for e in self.errors if "websocket" not in e.lower()], [])
        context.close()


@override_settings(AUDITORIUM_MODEL_DIR=MODEL_DIR)
class TrainingAtPhoneWidthBrowserTests(_Phone):
    @pytest.mark.engine
    def test_a_finished_training_fits_390_px(self):
        study, _ = build_study(name="phone-reward", conditions=24)
        researcher = UserFactory(username="researcher", roles=["researcher"])
        study.owner = researcher
        study.save(update_fields=["owner"])
        signal = Judge.objects.create(key="signal-technical", kind=Judge.Kind.SIGNAL)
        run = reward.training_create(study=study, feature_judge=signal, seed=0, options={}, queue=False)
        run = reward.training_execute(training_id=run.pk)
        self.assertEqual(run.state, "done", run.error)
        context, page = self.open_as("researcher", f"/scoring/training/{run.pk}/", **PHONE)
        self.assertGreater(page.locator("#heldout tbody tr").count(), 0)
        self.assertGreater(page.locator("table[id^='baselines-'] tbody tr").count(), 0)
        self.assert_fits(page)
        page.screenshot(path=str(self.shots / "training-390-top.png"))
        page.locator("table[id^='baselines-']").first.locator("xpath=../..").screenshot(path=str(self.shots / "training-390-baselines.png"))
        context.close()
