"""One way to start Debian's Chromium under Playwright for every browser test."""

from __future__ import annotations

import os
from pathlib import Path

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


# The two window shapes the pages are checked in: a desktop and a 390 px phone.
DESKTOP = {"viewport": {"width": 1280, "height": 800}}
PHONE = {"viewport": {"width": 390, "height": 844}, "has_touch": True, "is_mobile": True, "device_scale_factor": 2}
DOC_SHOTS = Path(__file__).resolve().parents[1] / "docs" / "screenshots"

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


def axe_violations(page) -> list[dict]:
    """axe-core's WCAG 2.x A/AA violations on the page as it is now, each as {id, impact, help, targets}.

    axe.min.js comes from the axe-playwright-python package, so no Node.js is needed.
    """
    from pathlib import Path

    import axe_playwright_python

    script = Path(axe_playwright_python.__file__).with_name("axe.min.js")
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.add_script_tag(content=script.read_text(encoding="utf-8"))
    result = page.evaluate(
        """async () => {
            const r = await axe.run(document, {runOnly: {type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]}});
            return r.violations.map((v) => ({id: v.id, impact: v.impact, help: v.help, targets: v.nodes.map((n) => n.target.join(" ")).slice(0, 5),
                                             summary: v.nodes.slice(0, 2).map((n) => n.failureSummary)}));
        }"""
    )
    return result


def shots_dir(tmp_path) -> Path:
    # AUDITORIUM_SCREENSHOTS=1 refreshes the committed docs/screenshots; otherwise they stay untouched.
    return DOC_SHOTS if os.environ.get("AUDITORIUM_SCREENSHOTS") == "1" else tmp_path


def overflow(page) -> int:
    """How far the page scrolls sideways (0 when it fits its window)."""
    return page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")


def refuse(page, url: str, *, status: int, body: str) -> list[dict]:
    """Answer every request to `url` with `status` and `body` (JSON when it starts with "{"); returns the headers
    of the requests refused, so a test can check what the page sent."""
    sent: list[dict] = []

    def answer(route):
        sent.append(route.request.headers)
        route.fulfill(status=status, content_type="application/json" if body.startswith("{") else "text/html", body=body)

    page.route(url, answer)
    return sent
