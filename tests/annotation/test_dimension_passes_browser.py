"""Separate screens in a real browser, at 1280 px and on a 390 px phone: the same pair asks instruction following
on one screen and musicality on the next, with one listening and one judgment in the end."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from annotation import services
from annotation.models import Assignment, DimensionPasses, Judgment
from tests.annotation.browser_helpers import listening_study, login  # noqa: F401  (the fixture is used by name)
from tests.browser import DESKTOP, PHONE
from tests.factories import UserFactory

pytestmark = pytest.mark.browser


def overflow(page) -> int:
    return page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")


def shot(page, name: str, tmp_path: Path) -> Path:
    path = tmp_path / f"{name}.png"
    page.screenshot(path=str(path), full_page=False)
    keep = os.environ.get("AUDITORIUM_SCREENSHOT_DIR")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(keep) / path.name)
    return path


def snapshot(page) -> dict:
    return page.evaluate("window.auditoriumListening.snapshot()")


def hear(page, side: str, seconds: float = 1.0) -> None:
    """Keep clip `side` playing (keyboard only) until it has been heard for `seconds`; a clip that ended is played again."""
    for _ in range(150):
        state = snapshot(page)
        if state["log"][side]["seconds"] >= seconds:
            return
        if state["active"] != side:
            page.keyboard.press(side.lower())
        elif not state["playing"]:
            page.keyboard.press("Space")
        page.wait_for_timeout(100)
    raise AssertionError(f"clip {side} was not heard for {seconds} s: {snapshot(page)}")


def answer(page, question: str, side: str, confidence: str) -> None:
    page.click(f"#q-{question} .choice-opt.side-{side.lower()}")
    page.click(f"#q-{question} .conf-opt:has(input[value='{confidence}'])")


@pytest.mark.engine
@pytest.mark.timeout(120)
@pytest.mark.parametrize("shape", ["desktop", "phone"])
def test_a_pair_is_asked_on_two_screens_and_stored_as_one_judgment(live_server, browser, listening_study, tmp_path, shape):  # noqa: F811
    study, pair = listening_study
    study.dimension_passes = DimensionPasses.SEPARATE
    study.save(update_fields=["dimension_passes"])
    user = UserFactory(username=f"apart-{shape}", roles=["annotator"])
    services.study_annotator_add(study=study, user=user)
    services.consent_give(user=user)
    context = browser.new_context(**(DESKTOP if shape == "desktop" else PHONE), bypass_csp=True)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        login(page, live_server, user.username)
        page.goto(f"{live_server.url}/studies/{study.name}/annotate/")
        page.wait_for_selector("#btn-read", state="visible")
        page.click("#btn-read")
        page.wait_for_selector("#btn-play:not([disabled])", timeout=15_000)
        page.locator("body").focus()
        page.keyboard.press("Space")
        hear(page, "A")
        page.keyboard.press("s")
        hear(page, "B")
        if snapshot(page)["playing"]:
            page.keyboard.press("Space")

        # Screen 1: instruction following only; the musicality question and the rationale wait for the next screen.
        assert page.locator("#q-alignment").is_visible() and not page.locator("#q-musicality").is_visible()
        assert not page.locator("#rationale").is_visible()
        assert page.locator("#pass-step").inner_text().startswith("Question 1 of 2: instruction following.")
        page.keyboard.press("e")  # a musicality key on the alignment screen answers nothing
        answer(page, "alignment", "A", "4.0")
        page.wait_for_selector("#btn-submit:not([disabled])")
        assert "Save and go on" in page.locator("#btn-submit").inner_text()
        page.locator("#step-answer").scroll_into_view_if_needed()
        shot(page, f"passes-first-{shape}", tmp_path)
        assert overflow(page) == 0
        page.click("#btn-submit")

        # Screen 2: the same pair, its listening kept; musicality only, with the rationale.
        page.wait_for_selector("#q-musicality:not([hidden])")
        assert not page.locator("#q-alignment").is_visible()
        assert page.locator("#pass-step").inner_text().startswith("Question 2 of 2: musicality.")
        assert "Instruction following saved" in page.locator("#flash").inner_text()
        held = Assignment.objects.get(annotator=user)
        assert held.first_pass["dimension"] == "alignment" and not Judgment.objects.filter(annotator=user).exists()
        assert page.locator("#btn-submit").is_disabled()  # nothing answered on this screen yet, and the rationale is required
        answer(page, "musicality", "B", "2.5")
        page.fill("#rationale", "B has the cleaner mix; A drifts.")
        page.locator("body").focus()
        assert page.locator("#checklist li").count() == 0, page.locator("#checklist").inner_text()
        page.wait_for_selector("#btn-submit:not([disabled])")
        assert page.locator("#btn-submit").inner_text().startswith("Submit")
        page.locator("#step-answer").scroll_into_view_if_needed()
        shot(page, f"passes-second-{shape}", tmp_path)
        assert overflow(page) == 0
        page.click("#btn-submit")
        page.wait_for_selector("#stage-empty:not([hidden])", timeout=15_000)
    finally:
        context.close()
    assert not errors, errors
    judgment = Judgment.objects.get(annotator=user)
    a_clip = held.a_clip_id
    assert judgment.alignment_choice_id == a_clip and judgment.musicality_choice_id == pair.other_clip_id(a_clip)
    assert str(judgment.alignment_confidence) == "4.0" and str(judgment.musicality_confidence) == "2.5"
    assert judgment.passes["order"] == ["alignment", "musicality"] and judgment.rationale == "B has the cleaner mix; A drifts."
    assert judgment.listening_log["A"]["seconds"] >= study.min_listen_seconds
