"""The report page in a real browser, with live refresh over a websocket.

Channels' live server (Daphne in a child process) is used instead of pytest-django's
`live_server`, which speaks only WSGI: the page's websocket needs ASGI. A vote is
submitted over HTTP to that server, so the judgment listener, the in-memory
channel layer and the consumer all run in the server process, as in production.

Screenshots go to AUDITORIUM_SCREENSHOT_DIR when it is set (docs/screenshots keeps
the ones in the docs), otherwise to a temporary folder.
"""

from __future__ import annotations

import pytest
from django.utils import timezone

from tests.factories import AnnotatorFactory, AssignmentFactory, UserFactory
from tests.fixtures import needs_tunejury
from tests.listening import listen
from tests.live_browser import BrowserLiveServerTestCase
from tests.scoring.showcase_study import showcase_study

pytestmark = [pytest.mark.browser, needs_tunejury]


class _ReportBrowser(BrowserLiveServerTestCase):
    """A server process of its own per test class: with SQLite, a second test in the same forked
    server process could read the database as it was before its own rows (seen after the
    sign-in tests of tests/reliability ran first), so each test gets a fresh process."""

    shots_prefix = "report-shots-"

    def setUp(self):
        self.study, self.pairs, self.annotators = showcase_study()
        self.researcher = UserFactory(username="researcher", roles=["researcher"])
        # The owner: excluding an annotator is a change to the study, for its owner, collaborators and admins.
        self.study.owner = self.researcher
        self.study.save(update_fields=["owner"])
        self.errors: list[str] = []

    def open_as(self, username: str, path: str):
        # Playwright's wait_for_function runs its predicate through eval, which the pages' CSP forbids (as it should);
        # tests/reliability/test_csp_browser.py loads these pages without the bypass and checks nothing is refused.
        context = self.browser.new_context(viewport={"width": 1360, "height": 900}, bypass_csp=True)
        page = context.new_page()
        page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        page.goto(f"{self.live_server_url}/accounts/login/?next={path}")
        page.fill("#id_username", username)
        page.fill("#id_password", "pw")
        page.click("button[type=submit]")
        page.wait_for_url(f"**{path}*")
        assert "/accounts/login/" not in page.url, page.locator("main").inner_text()
        return context, page

    def votes_shown(self, page) -> int:
        return int(page.locator(".report-facts div:nth-child(3) dd").inner_text())


class ReportPlotsBrowserTests(_ReportBrowser):
    @pytest.mark.engine
    def test_report_page_draws_plots_and_refreshes_when_a_vote_arrives(self):
        path = f"/scoring/studies/{self.study.name}/report/"
        context, page = self.open_as("researcher", path)
        # The report (bootstrap intervals included) is computed in this first request; on a loaded
        # machine that alone can pass Playwright's 30 s default.
        page.wait_for_selector("[data-plot='agreement-rate'] svg", timeout=90_000)
        for plot in ("agreement-rate", "agreement-alpha", "confidence-histogram", "annotator-bias", "judge-confidence-alignment", "judge-confidence-musicality"):
            self.assertGreater(page.locator(f"[data-plot='{plot}'] svg rect, [data-plot='{plot}'] svg circle").count(), 0, plot)
        # The careless annotators stand out in red in the bias plot and carry flags in the table.
        flagged = page.locator("table.annotators tr.flagged th").all_inner_texts()
        self.assertTrue({"p-fjord", "p-grove"} <= {t.split()[0] for t in flagged}, flagged)
        page.screenshot(path=str(self.shots / "report-overview.png"))
        page.locator("#agreement").screenshot(path=str(self.shots / "report-agreement.png"))
        page.locator("#annotators").screenshot(path=str(self.shots / "report-annotators.png"))
        page.locator("#judges").screenshot(path=str(self.shots / "report-judges.png"))
        page.locator("#confidence").screenshot(path=str(self.shots / "report-confidence.png"))
        page.locator("#bias").screenshot(path=str(self.shots / "report-bias.png"))
        page.locator("#triage .triage-item").first.screenshot(path=str(self.shots / "report-triage.png"))
        self.assertEqual(page.locator("#triage audio").first.get_attribute("preload"), "none")

        page.wait_for_function("document.getElementById('live-status').textContent.startsWith('live')", timeout=10000)
        before = self.votes_shown(page)
        # An annotator votes through the API of the same server; the page must follow without a reload.
        annotator = AnnotatorFactory(username="late")
        free = next(p for p in self.pairs if not p.judgments.filter(annotator=annotator).exists())
        assignment = AssignmentFactory(annotator=annotator, pair=free, served_at=timezone.now() - timezone.timedelta(minutes=1))
        listen(assignment, seconds=2.0)
        other, annotator_page = self.open_as("late", "/")
        token = next(c["value"] for c in other.cookies() if c["name"] == "csrftoken")
        response = annotator_page.request.post(
            f"{self.live_server_url}/api/assignments/{assignment.pk}/judgment/",
            data={
                "idempotency_key": "browser-live-1",
                "alignment": "A",
                "alignment_confidence": "4.0",
                "musicality": "A",
                "musicality_confidence": "4.0",
                "rationale": "A is in tune",
                "listening_log": {"A": {"plays": 1, "seconds": 2}, "B": {"plays": 1, "seconds": 2}, "switches": 1},
            },
            headers={"X-CSRFToken": token, "Referer": self.live_server_url + "/"},
        )
        self.assertEqual(response.status, 201, response.text())
        # The push comes at once; the wait is the report computed afresh, seconds on a busy machine (crowd aggregation).
        page.wait_for_function(f"Number(document.querySelector('.report-facts div:nth-child(3) dd').textContent) === {before + 1}", timeout=30000)
        self.assertTrue(page.locator("[data-plot='agreement-rate'] svg").count() == 1)  # plots redrawn after the swap
        other.close()
        context.close()
        self.assertEqual(self.errors, [])


class ReportExclusionBrowserTests(_ReportBrowser):
    @pytest.mark.engine
    def test_excluding_an_annotator_from_the_page(self):
        path = f"/scoring/studies/{self.study.name}/report/"
        context, page = self.open_as("researcher", path)
        row = page.locator("table.annotators tr", has=page.locator("th", has_text="p-fjord"))
        row.locator("input[name=reason]").fill("random answers on gold pairs")
        row.locator("button", has_text="Exclude").click()
        page.wait_for_selector("text=p-fjord is now left out of analysis and export.")
        row = page.locator("table.annotators tr", has=page.locator("th", has_text="p-fjord"))
        self.assertIn("excluded", row.inner_text())
        self.assertEqual(row.locator("button", has_text="Include again").count(), 1)
        page.locator("#annotators").screenshot(path=str(self.shots / "report-annotators-excluded.png"))
        context.close()
        self.assertEqual(self.errors, [])
