"""In the browser: a researcher creates a benchmark, a team uploads a prediction file, the leaderboard shows it; also at 390 px.

Screenshots go to AUDITORIUM_SCREENSHOT_DIR when it is set, otherwise to a temporary folder.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from scoring.benchmarks import services
from scoring.benchmarks.models import Benchmark, Submission
from tests.benchmarks.helpers import item_truth, jsonl, known_study
from tests.browser import axe_violations
from tests.factories import UserFactory
from tests.live_browser import BrowserLiveServerTestCase

pytestmark = pytest.mark.browser

PHONE = {"viewport": {"width": 390, "height": 844}, "has_touch": True, "is_mobile": True, "device_scale_factor": 2}


class BenchmarkBrowserTests(BrowserLiveServerTestCase):
    shots_prefix = "benchmark-shots-"

    def setUp(self):
        researcher = UserFactory(username="researcher", roles=["researcher"])
        member = UserFactory(username="member")
        services.team_create(name="lab-one", members=[member])
        study, _ = known_study(n_pairs=16, name="listening-test")
        study.owner = researcher  # the study rule: its owner builds benchmarks from it
        study.save(update_fields=["owner"])
        self.errors: list[str] = []

    @pytest.mark.engine
    def test_create_upload_and_leaderboard(self):
        # The researcher creates the benchmark from the form.
        context, page = self.open_as("researcher", "/benchmarks/new/")
        page.fill("#b-name", "judge-test")
        page.fill("#b-title", "Judge test, spring")
        page.select_option("#b-study", "listening-test")
        page.fill("#b-rounds", "300")
        page.screenshot(path=str(self.shots / "benchmark-create.png"), full_page=True)
        page.click("#create-benchmark button[type=submit]")
        page.wait_for_url("**/benchmarks/judge-test/")
        bench = Benchmark.objects.get(name="judge-test")
        self.assertEqual(bench.n_items, 16)
        context.close()

        # A team member uploads a prediction file right on 12 of 16 musicality items.
        truth = item_truth(bench)
        ids = sorted(truth)
        rows = [{"id": i, "preferred": truth[i]["musicality"] if n < 12 else {"A": "B", "B": "A"}[truth[i]["musicality"]]} for n, i in enumerate(ids)]
        tmp = Path(tempfile.mkdtemp())
        (tmp / "predictions.jsonl").write_bytes(jsonl(rows))
        (tmp / "bad.jsonl").write_bytes(b'{"id": "judge-test-00001", "preferred": "A"}\n{"id": "nope", "preferred": "A"}\n')
        context, page = self.open_as("member", "/benchmarks/judge-test/")
        page.set_input_files("#u-file", str(tmp / "bad.jsonl"))
        page.click("#upload button[type=submit]")
        page.wait_for_selector(".messages li")
        self.assertIn("line 2: id 'nope' is not an item", page.locator(".messages li").first.inner_text())
        self.assertFalse(Submission.objects.exists())
        page.fill("#u-label", "my-judge")
        page.set_input_files("#u-file", str(tmp / "predictions.jsonl"))
        page.click("#upload button[type=submit]")
        page.wait_for_url("**/benchmarks/submissions/*/")
        self.assertEqual(page.locator("[data-part=public] h2").inner_text(), "Public part")
        # No private figure of any kind before the close, not even its own (a one-item flip would read a label).
        self.assertEqual(page.locator("[data-part=private]").count(), 0)
        self.assertIn("after the close", page.locator("#private-note").inner_text())
        page.screenshot(path=str(self.shots / "benchmark-submission.png"), full_page=True)
        page.goto(f"{self.live_server_url}/benchmarks/judge-test/")
        row = page.locator("#leaderboard tbody tr").first
        self.assertIn("lab-one · my-judge", row.inner_text())
        public = [i for i in bench.items.all() if not i.is_private]
        right = sum(1 for i in public if ids.index(i.item_id) < 12)
        self.assertIn(f"{right / len(public):.3f}", row.inner_text())
        self.assertEqual(page.locator("#leaderboard svg.ci-bar").count(), 1)
        page.screenshot(path=str(self.shots / "benchmark-leaderboard.png"), full_page=True)
        context.close()

        # The same pages on a phone: nothing scrolls sideways.
        for username, path, name in (
            ("researcher", "/benchmarks/new/", "create"),
            ("member", "/benchmarks/judge-test/", "leaderboard"),
            ("member", f"/benchmarks/submissions/{Submission.objects.get().pk}/", "submission"),
            ("researcher", "/benchmarks/", "list"),
        ):
            context, page = self.open_as(username, path, **PHONE)
            self.assertEqual(self.overflow(page), 0, f"{path} scrolls sideways at 390 px")
            page.screenshot(path=str(self.shots / f"benchmark-{name}-390.png"), full_page=True)
            context.close()
        # axe (WCAG A/AA) on the pages, wide and narrow; axe is injected inline, so this context bypasses the CSP.
        found = {}
        for viewport in ({"width": 1280, "height": 860}, PHONE["viewport"]):
            context, page = self.open_as("researcher", "/benchmarks/judge-test/", viewport=viewport, bypass_csp=True)
            for path in ("/benchmarks/", "/benchmarks/new/", "/benchmarks/judge-test/", f"/benchmarks/submissions/{Submission.objects.get().pk}/"):
                page.goto(self.live_server_url + path)
                violations = axe_violations(page)
                if violations:
                    found[f"{path} {viewport['width']}"] = violations
            context.close()
        self.assertEqual(found, {})
        self.assertEqual(self.errors, [])
