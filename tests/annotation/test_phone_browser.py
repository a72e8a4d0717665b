"""The annotator's pages on a phone (390 px wide, touch): no sideways scrolling, short enough to use."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from annotation import services
from tests.annotation.browser_helpers import listening_study, login  # noqa: F401  (the fixture is used by name)
from tests.factories import UserFactory

pytestmark = pytest.mark.browser
PHONE = {"viewport": {"width": 390, "height": 844}, "has_touch": True, "is_mobile": True, "device_scale_factor": 2}
DOC_SHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"



@pytest.fixture
def phone(browser):
    context = browser.new_context(**PHONE)
    yield context.new_page()
    context.close()


def shot(page, name: str, tmp_path) -> None:
    """The whole page as the phone lays it out.

    Playwright's full_page screenshot drops the touch emulation while it captures (the page
    then lays out for a mouse), so the viewport is stretched to the page's height instead.
    AUDITORIUM_SCREENSHOTS=1 refreshes the committed docs/screenshots.
    """
    folder = DOC_SHOTS if os.environ.get("AUDITORIUM_SCREENSHOTS") == "1" else tmp_path
    size = page.viewport_size
    page.set_viewport_size({"width": size["width"], "height": height(page)})
    page.screenshot(path=str(folder / f"{name}.png"))
    page.set_viewport_size(size)


def overflow(page) -> int:
    """How far the page reaches past the viewport sideways, in CSS pixels (0: no sideways scrolling)."""
    return page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")


def height(page) -> int:
    return page.evaluate("document.documentElement.scrollHeight")


@pytest.mark.engine
@pytest.mark.timeout(120)
def test_listening_page_fits_a_phone(live_server, phone, listening_study, tmp_path):  # noqa: F811
    study, pair = listening_study
    user = UserFactory(username="thumbs", roles=["annotator"])
    services.study_annotator_add(study=study, user=user)
    services.consent_give(user=user)
    login(phone, live_server, "thumbs")
    shot(phone, "annotation-home-phone", tmp_path)
    assert overflow(phone) == 0

    phone.goto(f"{live_server.url}/studies/{study.name}/annotate/")
    phone.wait_for_selector("#btn-read", state="visible")
    first = height(phone)
    print("coarse pointer:", phone.evaluate("matchMedia('(pointer: coarse)').matches"))
    print(f"390 px listening page, instruction step: {first} px tall")
    assert overflow(phone) == 0
    shot(phone, "annotation-listening-phone", tmp_path)
    phone.click("#btn-read")
    phone.wait_for_selector("#btn-play:not([disabled])", timeout=15_000)
    print(f"390 px listening page, unlocked: {height(phone)} px tall")
    assert overflow(phone) == 0
    assert height(phone) < 3000


@pytest.mark.engine
@pytest.mark.timeout(120)
def test_instructions_open_on_the_first_visit_only_and_the_first_page_stays_short(live_server, phone, listening_study, tmp_path):  # noqa: F811
    """With the demo's full instructions: open on the first visit, folded once read and on every later visit."""
    from annotation.demo.seed import STUDY_INSTRUCTIONS

    study, pair = listening_study
    type(study).objects.filter(pk=study.pk).update(instructions=STUDY_INSTRUCTIONS)
    user = UserFactory(username="firstvisit", roles=["annotator"])
    services.study_annotator_add(study=study, user=user)
    services.consent_give(user=user)
    login(phone, live_server, "firstvisit")
    url = f"{live_server.url}/studies/{study.name}/annotate/"
    is_open = "document.getElementById('instructions-box').open"

    phone.goto(url)
    phone.wait_for_selector("#btn-read", state="visible")
    assert phone.evaluate(is_open), "the first visit shows the instructions"
    assert "Read the request first" in phone.inner_text("#study-instructions")
    first = height(phone)
    print(f"390 px, first visit, instructions open: {first} px tall")
    shot(phone, "annotation-listening-phone-first-visit", tmp_path)
    assert overflow(phone) == 0
    assert first < 2800, first

    phone.click("#btn-read")
    assert not phone.evaluate(is_open), "confirming folds them, so the player moves up"

    phone.reload()
    phone.wait_for_selector("#btn-play", state="visible")
    assert not phone.evaluate(is_open), "a later visit starts folded"
    later = height(phone)
    print(f"390 px, later visit, instructions folded: {later} px tall")
    shot(phone, "annotation-listening-phone-later-visit", tmp_path)
    assert later < first
    phone.click("#instructions-box summary")
    assert phone.evaluate(is_open), "one tap opens them again"
