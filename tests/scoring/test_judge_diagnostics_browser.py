"""The report's judge diagnostics in a real browser at 1280 and 390 px: the bias table and the agreement matrix are
shown, and at 390 px the page does not scroll sideways (wide tables scroll in their own box)."""

from __future__ import annotations

import pytest

from tests.factories import UserFactory
from tests.live_browser import BrowserLiveServerTestCase
from tests.scoring.diagnosed_study import diagnosed_study

pytestmark = [pytest.mark.browser]

PHONE = {"viewport": {"width": 390, "height": 844}, "device_scale_factor": 1, "is_mobile": True, "has_touch": True}
DESKTOP = {"viewport": {"width": 1280, "height": 860}}


class JudgeDiagnosticsBrowserTests(BrowserLiveServerTestCase):
    shots_prefix = "judge-diagnostics-shots-"

    @pytest.mark.engine
    def test_bias_table_and_matrix_at_1280_and_390_px(self):
        self.errors: list[str] = []
        study, _ = diagnosed_study("diagnosed-browser")
        researcher = UserFactory(username="researcher", roles=["researcher"])
        study.owner = researcher
        study.save(update_fields=["owner"])
        path = f"/scoring/studies/{study.name}/report/"
        for name, options in (("1280", DESKTOP), ("390", PHONE)):
            context, page = self.open_as("researcher", path, **options)
            page.wait_for_selector("#judge-bias", timeout=120_000)
            rows = page.locator("#judge-bias tbody tr")
            self.assertEqual(rows.count(), 5)  # rubric and aqa on both dimensions, signal on alignment only
            self.assertIn("aqa v1", page.locator("#judge-corr-alignment").inner_text())
            self.assertTrue(page.locator("#judge-calibration").is_visible())
            width = page.evaluate("document.documentElement.scrollWidth")
            self.assertLessEqual(width, int(name), f"the report is {width} px wide at {name} px")
            escaping = page.evaluate(
                """() => [...document.querySelectorAll('#judge-diagnostics table')].filter((t) => t.scrollWidth > t.parentElement.clientWidth + 1
                     && getComputedStyle(t.parentElement).overflowX === 'visible').map((t) => t.id)"""
            )
            self.assertEqual(escaping, [])
            page.locator("#judge-diagnostics").screenshot(path=str(self.shots / f"judge-diagnostics-{name}.png"))
            context.close()
        self.assertEqual([e for e in self.errors if "websocket" not in e.lower()], [])
