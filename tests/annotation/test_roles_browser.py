"""Each role signs in and lands where it works; a researcher takes a study's data out from the study page.

Daphne serves the pages in a child process (Channels' live server); Celery is eager in tests, so the
export's build runs in that process when its request commits, and the page polls its state as it would
poll a worker's.
"""

from __future__ import annotations

import io
import json
import os
import zipfile
from pathlib import Path

import pytest

from annotation import services
from tests.factories import AnnotatorFactory, JudgmentFactory, PairFactory, StudyFactory, UserFactory
from tests.live_browser import BrowserLiveServerTestCase

pytestmark = pytest.mark.browser
DOC_SHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


class RoleLandingBrowserTests(BrowserLiveServerTestCase):
    shots_prefix = "roles-shots-"

    def setUp(self):
        self.researcher = UserFactory(username="researcher", roles=["researcher"])
        self.admin = UserFactory(username="staff", roles=["admin", "researcher"])
        self.annotator = UserFactory(username="annotator", roles=["annotator"])
        self.study = StudyFactory(name="my-study", title="My listening study", owner=self.researcher)
        services.study_annotator_add(study=self.study, user=self.annotator)
        self.pairs = [PairFactory(study=self.study) for _ in range(3)]
        # Someone else's judgment (consent given first, so the export keeps it): the annotator's own count stays 0.
        self.voter = AnnotatorFactory(username="voter")
        services.study_annotator_add(study=self.study, user=self.voter)
        JudgmentFactory(pair=self.pairs[0], annotator=self.voter)
        self.errors: list[str] = []
        if os.environ.get("AUDITORIUM_SCREENSHOTS") == "1":
            self.shots = DOC_SHOTS

    def sign_in(self, username: str, *, viewport=None):
        context = self.browser.new_context(viewport=viewport or {"width": 1280, "height": 860}, bypass_csp=True, accept_downloads=True)
        page = context.new_page()
        page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        page.goto(f"{self.live_server_url}/accounts/login/")
        page.fill("#id_username", username)
        page.fill("#id_password", "pw")
        page.click("button[type=submit]")
        page.wait_for_url(lambda url: "/accounts/login/" not in url)
        page.wait_for_selector("h1")
        return context, page

    def nav_links(self, page) -> list[str]:
        return [" ".join(t.split()) for t in page.get_by_role("navigation", name="Main").get_by_role("link").all_inner_texts()]

    @pytest.mark.engine
    def test_a_researcher_lands_on_their_studies_and_keeps_the_navigation_on_the_arena(self):
        context, page = self.sign_in("researcher")
        self.assertEqual(page.url, f"{self.live_server_url}/")
        research = page.locator("#home-research")
        self.assertTrue(research.is_visible())
        self.assertIn("My listening study", research.inner_text())
        self.assertEqual(page.locator("#home-tasks").count(), 0)
        body = page.inner_text("main")
        self.assertNotIn("consent", body.lower())
        self.assertNotIn("not part of any study", body)
        links = self.nav_links(page)
        self.assertNotIn("Withdraw consent", links)
        page.screenshot(path=str(self.shots / "home-researcher.png"), full_page=True)
        for path in ("/arena/", "/arena/leaderboard/"):
            page.goto(self.live_server_url + path)
            self.assertEqual(self.nav_links(page), links, path)
        research_link = page.get_by_role("navigation", name="Main").get_by_role("link", name="My studies")
        research_link.click()
        page.wait_for_selector("#home-research")
        self.assertEqual(self.errors, [])
        context.close()

    @pytest.mark.engine
    def test_an_annotator_lands_on_their_tasks_with_their_own_progress(self):
        context, page = self.sign_in("annotator")
        tasks = page.locator("#home-tasks")
        self.assertTrue(tasks.is_visible())
        self.assertEqual(page.locator("#home-research").count(), 0)
        self.assertIn("0 of", page.inner_text('[data-progress="my-study"]'))
        self.assertTrue(page.get_by_role("link", name="Read and give consent").is_visible())
        self.assertNotIn("Withdraw consent", self.nav_links(page))
        self.assertNotIn("Manage studies", self.nav_links(page))
        page.screenshot(path=str(self.shots / "home-annotator.png"), full_page=True)
        # After consent, the way out appears in the top bar, and the task starts.
        page.get_by_role("link", name="Read and give consent").click()
        page.check("#id_agree")
        page.get_by_role("button", name="Give consent").click()
        page.wait_for_selector("#home-tasks")
        self.assertIn("Withdraw consent", self.nav_links(page))
        self.assertTrue(page.get_by_role("link", name="Start").is_visible())
        self.assertEqual(self.errors, [])
        context.close()

    @pytest.mark.engine
    def test_staff_see_both_their_studies_and_tasks(self):
        context, page = self.sign_in("staff")
        self.assertTrue(page.locator("#home-research").is_visible())
        self.assertTrue(page.locator("#home-tasks").is_visible())
        self.assertNotIn("consent", page.inner_text("#home-tasks").lower())
        page.screenshot(path=str(self.shots / "home-staff.png"), full_page=True)
        context.close()

    @pytest.mark.engine
    def test_a_researcher_downloads_the_export_from_the_study_page(self):
        context, page = self.sign_in("researcher")
        page.locator("#home-research").get_by_role("link", name="export").click()
        page.wait_for_url(f"**/manage/studies/{self.study.name}/#export")
        form = page.locator("#export-form")
        self.assertTrue(form.is_visible())
        self.assertTrue(page.locator("#export-balance").is_hidden())
        page.check("input[name=split][value=balanced]")
        self.assertTrue(page.locator("#export-balance").is_visible())
        page.check("input[name=split][value=keep]")
        page.check("#id_include_unvoted")
        page.screenshot(path=str(self.shots / "study-export.png"), full_page=True)
        with page.expect_download(timeout=20_000) as download_info:
            page.click("#export-submit")
        download = download_info.value
        self.assertRegex(download.suggested_filename, r"^my-study-dataset-\d{8}-\d{6}\.zip$")
        data = Path(download.path()).read_bytes()
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            rows = [json.loads(line) for name in ("train.jsonl", "test.jsonl") for line in zf.read(name).decode().splitlines()]
            self.assertIn("README.md", zf.namelist())
        # One vote plus the two unvoted pairs the option asked for.
        self.assertEqual(len(rows), 3)
        self.assertEqual(sum(1 for r in rows if r["user id"]), 1)
        page.wait_for_selector("#export-download:not([hidden])")
        self.assertEqual(page.locator("#export-state").inner_text(), "Ready")
        self.assertEqual(page.locator("#export-progress").get_attribute("value"), page.locator("#export-progress").get_attribute("max"))
        page.screenshot(path=str(self.shots / "study-export-ready.png"), full_page=True)
        self.assertEqual(self.errors, [])
        context.close()
