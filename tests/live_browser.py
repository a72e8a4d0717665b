"""A Chromium beside a live ASGI server (Daphne in its own process, websockets included) for browser test classes."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from channels.testing import ChannelsLiveServerTestCase

from tests.browser import launch


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
