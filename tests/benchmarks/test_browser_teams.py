"""In the browser: a researcher makes a team and adds a member; the member registers an outside judge,
uploads two files, and sees the reliability plot and the pairwise tests; the pages pass at 390 px and under axe.

Screenshots go to AUDITORIUM_SCREENSHOT_DIR when it is set, otherwise to a temporary folder.
"""

from __future__ import annotations

import numpy as np
import pytest
from django.test import override_settings

from scoring.benchmarks import services
from scoring.benchmarks.models import JudgeEndpoint, Submission, Team
from tests.benchmarks.helpers import item_truth, jsonl, known_study
from tests.browser import axe_violations
from tests.factories import UserFactory
from tests.live_browser import BrowserLiveServerTestCase

pytestmark = pytest.mark.browser

PHONE = {"viewport": {"width": 390, "height": 844}, "has_touch": True, "is_mobile": True, "device_scale_factor": 2}
WIDE = {"viewport": {"width": 1280, "height": 860}}


# The member's judge below is registered on loopback, which the server refuses unless allowed explicitly.
# k = 4: the 12 public items fill a few merged reliability bins for a team member to see.
@override_settings(BENCHMARK_ENDPOINT_PRIVATE_NETWORKS=["127.0.0.1"], BENCHMARK_MIN_CELL=4)
class TeamBrowserTests(BrowserLiveServerTestCase):
    shots_prefix = "benchmark-team-shots-"

    def setUp(self):
        UserFactory(username="researcher", roles=["researcher"])
        UserFactory(username="member")
        study, _ = known_study(n_pairs=24, name="team-study")
        self.bench = services.benchmark_create(name="team-bench", title="Team bench", study=study, bootstrap_rounds=200)
        self.errors: list[str] = []

    @pytest.mark.engine
    def test_team_endpoint_plot_and_pairwise(self):
        context, page = self.open_as("researcher", "/benchmarks/teams/")
        page.fill("#t-name", "lab-two")
        page.select_option("#t-bench", "team-bench")
        page.click("#team-create button[type=submit]")
        page.wait_for_url("**/benchmarks/teams/lab-two/")
        page.fill("#m-users", "member")
        page.click("#members-add button[type=submit]")
        page.wait_for_selector("#members li:has-text('member')")
        context.close()
        self.assertEqual(list(Team.objects.get(name="lab-two").members.values_list("username", flat=True)), ["member"])

        context, page = self.open_as("member", "/benchmarks/teams/lab-two/")
        page.fill("#r-name", "remote-judge")
        page.fill("#r-url", "http://127.0.0.1:9/judge")
        page.click("#endpoint-register button[type=submit]")
        page.wait_for_selector("#endpoints dt:has-text('remote-judge')")
        page.click("#endpoints summary")
        self.assertEqual(page.locator("[data-secret=remote-judge]").inner_text(), JudgeEndpoint.objects.get().secret)
        page.screenshot(path=str(self.shots / "benchmark-team.png"), full_page=True)
        context.close()

        # Two submissions: one with probabilities (a reliability plot), so the leaderboard has a pair to test.
        truth = item_truth(self.bench)
        rng = np.random.default_rng(2)
        rows = []
        for n, item_id in enumerate(sorted(truth)):
            right = n % 5 != 0
            side = truth[item_id]["musicality"] if right else {"A": "B", "B": "A"}[truth[item_id]["musicality"]]
            p = float(np.clip(rng.normal(0.75 if side == "A" else 0.25, 0.12), 0, 1))
            rows.append({"id": item_id, "preferred": side, "probability_a": round(p, 3)})
        team = Team.objects.get(name="lab-two")
        member = team.members.get()
        good = services.submission_from_file(benchmark=self.bench, team=team, data=jsonl(rows), label="calibrated", user=member)
        services.submission_from_file(benchmark=self.bench, team=team, data=jsonl([{"id": i, "preferred": "A"} for i in truth]), label="always-a", user=member)

        context, page = self.open_as("member", f"/benchmarks/submissions/{good.pk}/")
        self.assertGreaterEqual(page.locator("svg.reliability-plot circle.bin").count(), 3)
        self.assertTrue(page.locator("svg.reliability-plot").first.is_visible())
        page.screenshot(path=str(self.shots / "benchmark-submission-plot.png"), full_page=True)
        page.goto(f"{self.live_server_url}/benchmarks/team-bench/")
        page.click("#pairwise summary")
        self.assertEqual(page.locator("#pairwise tbody tr").count(), 1)
        self.assertEqual(page.locator("#endpoint form.endpoint-run").count(), 1)
        page.screenshot(path=str(self.shots / "benchmark-leaderboard-pairwise.png"), full_page=True)
        context.close()

        for username, path, name in (
            ("researcher", "/benchmarks/teams/", "teams"),
            ("member", "/benchmarks/teams/lab-two/", "team"),
            ("member", f"/benchmarks/submissions/{good.pk}/", "submission-plot"),
            ("member", "/benchmarks/team-bench/", "leaderboard-pairwise"),
        ):
            context, page = self.open_as(username, path, **PHONE)
            for summary in page.locator("details > summary").all():
                summary.click()
            self.assertEqual(self.overflow(page), 0, f"{path} scrolls sideways at 390 px")
            page.screenshot(path=str(self.shots / f"benchmark-{name}-390.png"), full_page=True)
            context.close()
        found = {}
        for viewport in (WIDE["viewport"], PHONE["viewport"]):
            context, page = self.open_as("researcher", "/benchmarks/teams/", viewport=viewport, bypass_csp=True)
            for path in ("/benchmarks/teams/", "/benchmarks/teams/lab-two/", f"/benchmarks/submissions/{good.pk}/", "/benchmarks/team-bench/"):
                page.goto(self.live_server_url + path)
                violations = axe_violations(page)
                if violations:
                    found[f"{path} {viewport['width']}"] = violations
            context.close()
        self.assertEqual(found, {})
        self.assertEqual(self.errors, [])
        self.assertEqual(Submission.objects.count(), 2)

    @pytest.mark.engine
    def test_a_member_who_is_no_researcher_reaches_the_benchmarks_from_home(self):
        member = Team.objects.create(name="lab-three", benchmark=self.bench)
        member.members.add(UserFactory._meta.model.objects.get(username="member"))
        for options, name in ((WIDE, "home-benchmark-teams"), (PHONE, "home-benchmark-teams-390")):
            context, page = self.open_as("member", "/", **options, bypass_csp=True)  # axe is injected inline
            section = page.locator("#home-benchmark-teams")
            self.assertTrue(section.is_visible())
            self.assertEqual(self.overflow(page), 0, "the home page scrolls sideways")
            self.assertEqual(axe_violations(page), [])
            page.screenshot(path=str(self.shots / f"{name}.png"), full_page=True)
            section.get_by_role("link", name="lab-three").click()
            page.wait_for_url("**/benchmarks/teams/lab-three/")
            page.locator("nav[aria-label=Main]").get_by_role("link", name="Judge benchmarks").click()
            page.wait_for_url("**/benchmarks/")
            context.close()
        self.assertEqual(self.errors, [])
