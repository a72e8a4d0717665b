"""The results section, the compare page and the planner in Chromium at 1280 and 390 px: figures shown, forest plots inside their card."""

from __future__ import annotations

import pytest

from tests.factories import UserFactory
from tests.live_browser import BrowserLiveServerTestCase
from tests.scoring.showcase_study import showcase_study

pytestmark = [pytest.mark.browser]

WIDTHS = {"desktop": {"viewport": {"width": 1280, "height": 900}}, "phone": {"viewport": {"width": 390, "height": 844}, "device_scale_factor": 1, "is_mobile": True, "has_touch": True}}

# Every forest plot row, its strip and its figures lie inside the plot, and the plot inside its card.
ESCAPES = """() => [...document.querySelectorAll('figure.forest')].flatMap((f) => {
  const card = f.closest('.card').getBoundingClientRect(), box = f.getBoundingClientRect(), out = [];
  if (box.right > card.right + 0.5 || box.left < card.left - 0.5) out.push(`${f.id} leaves its card`);
  for (const el of f.querySelectorAll('.forest-strip, .forest-value, .forest-label, circle, line')) {
    const r = el.getBoundingClientRect();
    if (r.width && (r.right > box.right + 6 || r.left < box.left - 6)) out.push(`${f.id}: ${el.tagName}.${el.getAttribute('class')} at ${r.left.toFixed(0)}–${r.right.toFixed(0)} outside ${box.left.toFixed(0)}–${box.right.toFixed(0)}`);
  }
  return out; })"""


class ResultsBrowserTests(BrowserLiveServerTestCase):
    shots_prefix = "results-shots-"

    def setUp(self):
        self.errors: list[str] = []

    @pytest.mark.engine
    def test_results_and_compare_show_their_figures_at_1280_and_390_px(self):
        study, _, _ = showcase_study(name="results-page")
        reader = UserFactory(username="reader", roles=["researcher"])
        study.collaborators.add(reader)
        for name, options in WIDTHS.items():
            context, page = self.open_as("reader", "/scoring/reports/", **options)
            page.goto(f"{self.live_server_url}/scoring/studies/{study.name}/report/?bootstrap=200", timeout=180_000)
            page.wait_for_selector("#results", timeout=90_000)
            for dim in ("alignment", "musicality"):
                self.assertGreaterEqual(page.locator(f"#forest-strengths-{dim} .forest-row:not(.forest-axis)").count(), 6)
                self.assertGreater(page.locator(f"#results-{dim} .results-sentences li").count(), 5)
                # Each plotted system has its point and its interval drawn.
                self.assertEqual(page.locator(f"#forest-strengths-{dim} circle.forest-point").count(), page.locator(f"#forest-strengths-{dim} .forest-row:not(.forest-axis)").count())
                self.assertGreater(page.locator(f"#forest-strengths-{dim} line.forest-interval").count(), 0)
            self.assertIn("votes", page.locator("#results-musicality .results-sentences li").first.inner_text())
            self.assertEqual(page.evaluate(ESCAPES), [])
            self.assertEqual(self.overflow(page), 0, f"the report scrolls sideways at {name}")
            page.locator("#results").screenshot(path=str(self.shots / f"results-{name}.png"))
            page.click("#compare-link")
            page.wait_for_selector("#compare-form")
            page.select_option("#compare-a", "aurora")
            page.select_option("#compare-b", "draggy")
            page.click("#compare-form button[type=submit]")
            page.wait_for_selector("#comparison")
            self.assertIn("aurora", page.locator("#compare-musicality .compare-sentence").inner_text())
            self.assertEqual(page.locator("#forest-compare-musicality circle.forest-point").count(), 1)
            self.assertGreater(page.locator("#differ-musicality audio").count(), 1)
            self.assertEqual(page.evaluate(ESCAPES), [])
            self.assertEqual(self.overflow(page), 0, f"the compare page scrolls sideways at {name}")
            page.screenshot(path=str(self.shots / f"compare-{name}.png"), full_page=True)
            # From the compare page to the planner for the same two systems, then a typed, smaller effect.
            page.click("text=Plan the next study")
            page.wait_for_selector("#plan-table")
            self.assertIn("To find aurora winning", page.inner_text("#plan-sentence"))
            self.assertEqual(page.locator("#plan-table tbody tr").count(), 6)
            page.fill("#plan-effect", "0.6")
            page.click("#plan-form button[type=submit]")
            page.wait_for_selector("#plan-table")
            self.assertIn("winning 60 % of votes", page.inner_text("#plan-sentence"))
            self.assertEqual(self.overflow(page), 0, f"the plan page scrolls sideways at {name}")
            # Its table needs no sideways scroll: the power column is in view.
            self.assertTrue(page.evaluate("() => { const t = document.getElementById('plan-table'); return t.scrollWidth <= t.parentElement.clientWidth + 1; }"), name)
            page.screenshot(path=str(self.shots / f"plan-{name}.png"), full_page=True)
            context.close()
        self.assertEqual(self.errors, [])
