"""One way to start Debian's Chromium under Playwright for every browser test."""

from __future__ import annotations

import os

import pytest

from tests.prerequisites import missing

# AUDITORIUM_CHROMIUM points elsewhere (the ./auditorium script reads it too).
CHROMIUM = os.environ.get("AUDITORIUM_CHROMIUM", "/usr/bin/chromium")
# Without the background-networking flags Chromium keeps trying hosts this closed network refuses.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--autoplay-policy=no-user-gesture-required",
]
# tests/conftest.py calls require_chromium() before every test carrying this mark.
needs_chromium = pytest.mark.browser


def require_chromium(path: str | None = None) -> str:
    """The Chromium executable; if there is none: a skip locally, a failure under CI."""
    path = path or CHROMIUM
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        missing(
            f"Chromium is missing: no executable at {path}",
            fix="Install Debian's chromium package (apt-get install chromium; ./auditorium test does so as root) or set AUDITORIUM_CHROMIUM.",
        )
    return path


def launch(playwright):
    """A headless Chromium; Playwright's sync API runs an event loop, so Django's async guard is lifted."""
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    return playwright.chromium.launch(executable_path=require_chromium(), headless=True, args=CHROMIUM_ARGS)
