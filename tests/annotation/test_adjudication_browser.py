"""In Chromium, on a desktop and at 390 px: an adjudicator opens the queue from their home page, listens to the most
disputed pair on the A/B transport, and decides it with a reason."""

from __future__ import annotations

import os

import pytest

from annotation.adjudication_models import Adjudication
from tests.annotation.adjudication_world import build
from tests.annotation.browser_helpers import login
from tests.browser import DESKTOP, DOC_SHOTS, PHONE, overflow

pytestmark = pytest.mark.browser


def shot(page, name: str, tmp_path) -> None:
    """AUDITORIUM_SCREENSHOTS=1 refreshes the committed docs/screenshots; otherwise a temporary folder."""
    folder = DOC_SHOTS if os.environ.get("AUDITORIUM_SCREENSHOTS") == "1" else tmp_path
    page.screenshot(path=str(folder / f"{name}.png"), full_page=True)


def hear_both(page, seconds: float) -> None:
    # Polled with evaluate, not wait_for_function, whose predicate goes through eval and so is refused by the page's CSP.
    for _ in range(100):
        if page.evaluate("window.auditoriumAdjudication !== undefined"):
            break
        page.wait_for_timeout(100)
    else:
        raise AssertionError("the adjudication page's script did not run")
    page.locator("body").focus()
    for side in ("A", "B"):
        for _ in range(200):
            state = page.evaluate("window.auditoriumAdjudication.snapshot()")
            if state["ready"] and state["log"][side]["seconds"] >= seconds:
                break
            if state["loading"]:
                pass
            elif state["ready"] and state["active"] != side:
                page.keyboard.press(side.lower())
            elif not state["playing"]:
                page.keyboard.press("Space")
            page.wait_for_timeout(100)
        else:
            raise AssertionError(f"clip {side} was not heard for {seconds} s: {state}")
    if page.evaluate("window.auditoriumAdjudication.snapshot()")["playing"]:
        page.keyboard.press("Space")


@pytest.mark.engine
@pytest.mark.timeout(120)
@pytest.mark.parametrize("device", ["desktop", "phone"])
def test_an_adjudicator_decides_the_most_disputed_pair(live_server, browser, transactional_db, device, tmp_path):
    w = build(name=f"adj-{device}")
    adjudicator, tied = w["adjudicator"], w["pairs"]["tied"]
    adjudicator.set_password("pw")
    adjudicator.save()
    context = browser.new_context(**(PHONE if device == "phone" else DESKTOP))
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    suffix = "-390" if device == "phone" else ""
    try:
        login(page, live_server, adjudicator.username)
        page.click("#home-adjudication a")
        page.wait_for_selector("#queue-table")
        first = page.locator("#queue-table tbody tr").first
        assert first.get_attribute("data-pair") == str(tied.pk)
        assert overflow(page) == 0
        shot(page, f"adjudication-queue{suffix}", tmp_path)
        first.locator("a").click()
        page.wait_for_selector("#adjudication-form")
        assert page.locator("#adjudication-submit").is_disabled()
        hear_both(page, 0.5)
        page.check("#adjudication-form input[name=alignment][value=A]")
        page.check("#adjudication-form input[name=musicality][value=tie]")
        page.fill("#id_reason", "Both follow the brief; A keeps the tempo the prompt asks for.")
        assert not page.locator("#adjudication-submit").is_disabled()
        assert overflow(page) == 0
        shot(page, f"adjudication-item{suffix}", tmp_path)
        page.click("#adjudication-submit")
        page.wait_for_selector("#queue-table")
        decision = Adjudication.objects.get(pair=tied)
        assert (decision.alignment, decision.musicality, decision.adjudicator_id) == ("clip_a", "tie", adjudicator.pk)
        assert "decided" in page.inner_text(f"#queue-table tr[data-pair='{tied.pk}']")
        assert not errors, errors
    finally:
        context.close()
