"""In the browser: a team uploads a score file to a MOS benchmark; its leaderboard and submission page, wide and at 390 px.

Screenshots go to AUDITORIUM_SCREENSHOT_DIR when it is set, otherwise to a temporary folder.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from scoring.benchmarks import services
from scoring.benchmarks.models import Benchmark, Submission
from tests.benchmarks.helpers import jsonl, rated_study
from tests.browser import axe_violations
from tests.factories import UserFactory
from tests.live_browser import BrowserLiveServerTestCase

pytestmark = pytest.mark.browser

PHONE = {"viewport": {"width": 390, "height": 844}, "has_touch": True, "is_mobile": True, "device_scale_factor": 2}


class MosBenchmarkBrowserTests(BrowserLiveServerTestCase):
    shots_prefix = "mos-benchmark-shots-"

    def setUp(self):
        UserFactory(username="researcher", roles=["researcher"])
        member = UserFactory(username="member")
        services.team_create(name="lab-one", members=[member])
        study, self.truth = rated_study(n_clips=24, name="rated-clips")
        services.benchmark_create(name="mos-test", title="Clip quality, spring", study=study, kind="mos", seed=2, bootstrap_rounds=300)
        self.errors: list[str] = []

    @pytest.mark.engine
    def test_upload_scores_and_read_the_srcc_board(self):
        bench = Benchmark.objects.get(name="mos-test")
        mos = {i.item_id: self.truth[i.clip_a_id]["musicality"] for i in bench.items.all()}
        tmp = Path(tempfile.mkdtemp())
        (tmp / "scores.jsonl").write_bytes(jsonl([{"id": i, "score": m} for i, m in sorted(mos.items())]))
        context, page = self.open_as("member", "/benchmarks/mos-test/")
        self.assertIn("Submit scores", page.locator("#upload h2").inner_text())
        page.fill("#u-label", "oracle")
        page.set_input_files("#u-file", str(tmp / "scores.jsonl"))
        page.click("#upload button[type=submit]")
        page.wait_for_url("**/benchmarks/submissions/*/")
        self.assertEqual(page.locator("[data-part=private]").count(), 0)
        page.screenshot(path=str(self.shots / "mos-submission.png"), full_page=True)
        page.goto(f"{self.live_server_url}/benchmarks/mos-test/")
        row = page.locator("#leaderboard tbody tr").first
        self.assertIn("lab-one · oracle", row.inner_text())
        self.assertIn("1.000", row.inner_text())
        self.assertEqual(page.locator("#leaderboard svg.ci-bar").count(), 1)
        self.assertNotEqual(page.locator("#ceiling").inner_text(), "—")
        page.screenshot(path=str(self.shots / "mos-leaderboard.png"), full_page=True)
        context.close()
        submission = Submission.objects.get().pk
        for path, name in (("/benchmarks/mos-test/", "leaderboard"), (f"/benchmarks/submissions/{submission}/", "submission")):
            context, page = self.open_as("member", path, **PHONE)
            self.assertEqual(self.overflow(page), 0, f"{path} scrolls sideways at 390 px")
            page.screenshot(path=str(self.shots / f"mos-{name}-390.png"), full_page=True)
            context.close()
        found = {}
        for viewport in ({"width": 1280, "height": 860}, PHONE["viewport"]):
            context, page = self.open_as("researcher", "/benchmarks/mos-test/", viewport=viewport, bypass_csp=True)
            for path in ("/benchmarks/mos-test/", f"/benchmarks/submissions/{submission}/"):
                page.goto(self.live_server_url + path)
                violations = axe_violations(page)
                if violations:
                    found[f"{path} {viewport['width']}"] = violations
            context.close()
        self.assertEqual(found, {})
        self.assertEqual(self.errors, [])
