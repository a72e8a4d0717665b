"""A Chromium beside a live ASGI server (Daphne in its own process, websockets included) for browser test classes."""

from __future__ import annotations

import os
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from asgiref.sync import SyncToAsync
from channels.testing import ChannelsLiveServerTestCase

from tests.browser import launch


def _fresh_single_thread_executor() -> None:
    # The live server is forked from the test process. Once any earlier test ran thread-sensitive
    # work outside a request (an in-process uvicorn finishing a response, say), asgiref's one
    # shared executor has its worker thread, which a fork does not copy: the child's executor
    # then counts a dead thread as running and never starts another, so every websocket connect
    # (its auth lookup runs there) waits forever. A child gets an executor of its own.
    SyncToAsync.single_thread_executor = ThreadPoolExecutor(max_workers=1)


os.register_at_fork(after_in_child=_fresh_single_thread_executor)


class BrowserLiveServerTestCase(ChannelsLiveServerTestCase):
    """One server process and one Chromium per class. Screenshots go to AUDITORIUM_SCREENSHOT_DIR, or a temporary folder."""

    serialized_rollback = False
    shots_prefix = "shots-"

    @classmethod
    def setUpClass(cls):
        os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
        from django.db import connections

        # The server process is forked from this one: it opens its own database connection.
        connections.close_all()
        super().setUpClass()
        from playwright.sync_api import sync_playwright

        cls._playwright = sync_playwright().start()
        cls.browser = launch(cls._playwright)
        cls.shots = Path(os.environ.get("AUDITORIUM_SCREENSHOT_DIR") or tempfile.mkdtemp(prefix=cls.shots_prefix))
        cls.shots.mkdir(parents=True, exist_ok=True)

    @classmethod
    def tearDownClass(cls):
        cls.browser.close()
        cls._playwright.stop()
        super().tearDownClass()

    def open_as(self, username: str, path: str, **context_options):
        """A new browser context (desktop-sized unless options are given) signed in as `username`
        (password "pw") and at `path`; page errors and console errors go to `self.errors`."""
        context = self.browser.new_context(**(context_options or {"viewport": {"width": 1280, "height": 860}}))
        page = context.new_page()
        page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        page.on("console", lambda msg: self.errors.append(msg.text) if msg.type == "error" else None)
        page.goto(f"{self.live_server_url}/accounts/login/?next={path}")
        page.fill("#id_username", username)
        page.fill("#id_password", "pw")
        page.click("button[type=submit]")
        page.wait_for_url(f"**{path}*")
        return context, page

    @staticmethod
    def overflow(page) -> int:
        """How far the page scrolls sideways (0 when it fits the viewport)."""
        return page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
