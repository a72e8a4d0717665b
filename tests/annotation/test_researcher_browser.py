"""A researcher's day in the browser: import pairs from the study page, reach the report by links,
and watch a queued scoring run's progress bar move.

Daphne serves the pages in a child process (Channels' live server). The run's progress is written
to the database from this process, as a worker in another process would write it: with the
in-memory channel layer no push can cross that boundary, so the bar moves only if the run page
fetches progress itself.

Screenshots go to AUDITORIUM_SCREENSHOT_DIR when it is set, otherwise to a temporary folder.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from annotation.models import Judgment, Pair
from scoring.models import Judge, ScoringRun
from tests.annotation.admin_upload import audio_zip, jsonl, row
from tests.factories import PairFactory, StudyFactory, UserFactory
from tests.live_browser import BrowserLiveServerTestCase

pytestmark = pytest.mark.browser


class ResearcherDayBrowserTests(BrowserLiveServerTestCase):
    shots_prefix = "researcher-shots-"

    def setUp(self):
        self.researcher = UserFactory(username="researcher", roles=["researcher"])
        self.study = StudyFactory(name="my-study", title="My listening study", owner=self.researcher)
        self.errors: list[str] = []
        self.not_found: list[str] = []

    def open_as(self, username: str, path: str):
        context = self.browser.new_context(viewport={"width": 1280, "height": 860}, bypass_csp=True)
        page = context.new_page()
        page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        page.on("response", lambda r: self.not_found.append(r.url) if r.status == 404 else None)
        page.goto(f"{self.live_server_url}/accounts/login/?next={path}")
        page.fill("#id_username", username)
        page.fill("#id_password", "pw")
        page.click("button[type=submit]")
        page.wait_for_url(f"**{path}*")
        return context, page

    @pytest.mark.engine
    def test_import_from_the_study_page_with_progress_and_a_result_page(self):
        context, page = self.open_as("researcher", f"/manage/studies/{self.study.name}/")
        page.locator(".headline").get_by_role("link", name="Import pairs").click()
        page.wait_for_url("**/manage/import/?study=my-study")
        self.assertEqual(page.locator("#id_study").input_value(), "my-study")
        tmp = Path(tempfile.mkdtemp())
        (tmp / "audio.zip").write_bytes(audio_zip(tmp))
        # First a file with a bad row: nothing is imported and the line is named.
        (tmp / "rows.jsonl").write_bytes(jsonl(row(), row(a="gen/missing.wav", user="605")))
        page.set_input_files("#id_jsonl", str(tmp / "rows.jsonl"))
        page.set_input_files("#id_archive", str(tmp / "audio.zip"))
        page.screenshot(path=str(self.shots / "researcher-import.png"), full_page=True)
        page.click("#import-submit")
        page.wait_for_selector("#row-errors")
        self.assertIn("rows.jsonl line 2", page.locator("#row-errors").inner_text())
        self.assertFalse(Pair.objects.exists())
        page.screenshot(path=str(self.shots / "researcher-import-refused.png"), full_page=True)
        # Then the fixed file: the upload shows progress and ends on the result page.
        (tmp / "rows.jsonl").write_bytes(jsonl(row(), row(user="605")))
        page.set_input_files("#id_jsonl", str(tmp / "rows.jsonl"))
        page.set_input_files("#id_archive", str(tmp / "audio.zip"))
        page.click("#import-submit")
        page.wait_for_url("**/manage/import/done/")
        self.assertIn("Pairs imported into “my-study”", page.locator("h1").inner_text())
        self.assertEqual(Judgment.objects.filter(pair__study=self.study).count(), 2)
        page.screenshot(path=str(self.shots / "researcher-import-done.png"), full_page=True)
        page.get_by_role("link", name="Open the study").click()
        page.wait_for_url(f"**/manage/studies/{self.study.name}/")
        self.assertIn("1", page.locator(".facts div:nth-child(2) dd").inner_text())
        self.assertEqual(self.errors, [])
        context.close()

    @pytest.mark.engine
    def test_report_is_reached_by_links_from_the_nav_the_study_page_and_the_runs_page(self):
        PairFactory(study=self.study)
        judge = Judge.objects.create(key="signal-technical", kind=Judge.Kind.SIGNAL)
        ScoringRun.objects.create(judge=judge, study=self.study, state=ScoringRun.State.DONE, total=1, done=1)
        context, page = self.open_as("researcher", "/")
        report = f"/scoring/studies/{self.study.name}/report/"
        page.get_by_role("navigation", name="Main").get_by_role("link", name="Reports").click()
        page.wait_for_url("**/scoring/reports/")
        page.screenshot(path=str(self.shots / "reports-index.png"), full_page=True)
        page.locator("#reports").get_by_role("link", name=self.study.name).click()
        page.wait_for_url(f"**{report}")
        page.goto(f"{self.live_server_url}/manage/studies/{self.study.name}/")
        page.screenshot(path=str(self.shots / "study-page.png"), full_page=True)
        page.locator(".headline").get_by_role("link", name="Report").click()
        page.wait_for_url(f"**{report}")
        page.goto(f"{self.live_server_url}/scoring/runs/")
        page.locator("#runs").get_by_role("link", name="report").click()
        page.wait_for_url(f"**{report}")
        self.assertEqual(self.errors, [])
        self.assertEqual([u for u in self.not_found if "favicon" in u], [])
        context.close()

    @pytest.mark.engine
    def test_a_queued_runs_progress_bar_moves_as_the_worker_scores_pairs(self):
        judge = Judge.objects.create(key="signal-technical", kind=Judge.Kind.SIGNAL)
        run = ScoringRun.objects.create(judge=judge, study=self.study, state=ScoringRun.State.PENDING, total=4)
        context, page = self.open_as("researcher", f"/scoring/runs/{run.pk}/")
        bar = page.locator("#progress-bar")
        self.assertEqual(bar.get_attribute("value"), "0")
        self.assertEqual(page.locator('[data-field="state"]').inner_text(), "pending")
        # The worker picks the run up and scores two of its four pairs.
        ScoringRun.objects.filter(pk=run.pk).update(state=ScoringRun.State.RUNNING, done=2)
        page.wait_for_function("document.getElementById('progress-bar').value === 2", timeout=10000)
        self.assertEqual(page.locator('[data-field="state"]').inner_text(), "running")
        self.assertEqual(page.locator('[data-field="remaining"]').inner_text(), "2")
        page.screenshot(path=str(self.shots / "scoring-run-progress.png"), full_page=True)
        ScoringRun.objects.filter(pk=run.pk).update(state=ScoringRun.State.DONE, done=3, failed=1)
        page.wait_for_function("document.getElementById('progress-bar').value === 4", timeout=10000)
        self.assertEqual(page.locator('[data-field="state"]').inner_text(), "done")
        self.assertEqual(self.errors, [])
        context.close()
