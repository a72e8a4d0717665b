"""The release page in a browser: a researcher asks for a build, the worker (another process) builds it,
the page follows it and offers the zip, which downloads whole."""

from __future__ import annotations

import zipfile
from unittest import mock

import pytest

from arena.models import ReleaseBuild
from tests.arena.helpers import voted
from tests.factories import UserFactory
from tests.live_processes import OtherProcessLiveTestCase

from .conftest import arena_system, visitor_with_terms

pytestmark = pytest.mark.browser


class ReleasePageBrowserTests(OtherProcessLiveTestCase):
    shots_prefix = "release-shots-"

    @classmethod
    def setUpClass(cls):
        # The server only queues the build (as the demo's web process does); the test's child process is the worker.
        cls._no_worker = mock.patch("arena.release_builds.release_build_queue")
        cls._no_worker.start()
        try:
            super().setUpClass()
        finally:
            cls._no_worker.stop()

    @pytest.mark.engine
    def test_build_follow_and_download(self):
        UserFactory(username="researcher", roles=["researcher"])
        visitor, _ = visitor_with_terms()
        a, b = arena_system("aurora"), arena_system("borealis")
        for choice in ("a", "b", "tie", "a"):
            voted(visitor, a, b, choice)
        context = self.browser.new_context(viewport={"width": 1280, "height": 860}, accept_downloads=True, bypass_csp=True)
        page = context.new_page()
        errors = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(f"{self.live_server_url}/accounts/login/?next=/arena/release/")
        page.fill("#id_username", "researcher")
        page.fill("#id_password", "pw")
        page.click("button[type=submit]")
        page.wait_for_url("**/arena/release/")
        self.assertIn("4 from visitors now", page.locator("main").inner_text())
        page.click("#build-release")
        page.wait_for_url("**/arena/release/")
        build = ReleaseBuild.objects.get()
        row = page.locator(f'#builds tr[data-build="{build.pk}"]')
        self.assertEqual(row.locator('[data-field="state"]').inner_text(), "pending")
        self.assertEqual(page.locator("#release-active").inner_text(), f"Release #{build.pk} is queued; this page follows its progress.")
        self.assertEqual(page.locator("#release-status").inner_text(), "updating every 2 s")
        self.assertTrue(page.locator("#build-release").is_disabled())
        page.screenshot(path=str(self.shots / "release-queued.png"), full_page=True)
        at = self.other_process(f"from arena.release_builds import release_build_execute; release_build_execute(build_id={build.pk}); import time; print('changed-at', time.time())")
        self.wait_until(page, f"!!document.querySelector('#builds tr[data-build=\"{build.pk}\"] a[download]')", since=at, within=5.0)
        build.refresh_from_db()
        self.assertEqual((build.state, build.battles, build.audio_files), ("done", 4, 8))
        self.assertEqual(page.locator("#release-status").inner_text(), "up to date")
        # The note went with the row's state: nothing on the page says the build is still queued.
        self.assertEqual(page.locator("#release-active").count(), 0)
        self.assertNotIn("is queued", page.locator("main").inner_text())
        page.screenshot(path=str(self.shots / "release-done.png"), full_page=True)
        with page.expect_download() as info:
            page.locator(f'#builds tr[data-build="{build.pk}"] a[download]').click()
        download = info.value
        self.assertEqual(download.suggested_filename, build.file_name)
        names = zipfile.ZipFile(download.path()).namelist()
        self.assertEqual(len([n for n in names if "/audio/" in n]), 8)
        self.assertTrue(any(n.endswith("battles.parquet") for n in names) and any(n.endswith("registry.yaml") for n in names))
        self.assertEqual(errors, [])
        context.close()
