"""In Chromium, on a desktop and at 390 px: a participant opens a recruitment link, starts, keeps the resume
code and reaches consent; back in the same browser the link carries on; on a new device the code resumes
the same account; the top bar shows only the study and withdrawal."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from annotation import services
from annotation.crowd_models import ExternalParticipant
from tests.factories import PairFactory, StudyFactory

pytestmark = pytest.mark.browser
DESKTOP = {"viewport": {"width": 1280, "height": 800}}
PHONE = {"viewport": {"width": 390, "height": 844}, "has_touch": True, "is_mobile": True, "device_scale_factor": 2}
DOC_SHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


def shot(page, name: str, tmp_path) -> None:
    folder = DOC_SHOTS if os.environ.get("AUDITORIUM_SCREENSHOTS") == "1" else tmp_path
    page.screenshot(path=str(folder / f"{name}.png"), full_page=True)


def overflow(page) -> int:
    return page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")


@pytest.mark.engine
@pytest.mark.timeout(180)
@pytest.mark.parametrize("device", ["desktop", "phone"])
def test_a_participant_starts_returns_and_resumes_on_a_new_device(live_server, browser, device, tmp_path):
    study = StudyFactory(name=f"recruit-{device}", title="Which clip fits the words?")
    PairFactory(study=study)
    link = services.recruitment_link_create(study=study, completion_code="C0MPL3TE", screenout_code="OUT")
    url = f"{live_server.url}/r/{link.token}/?PROLIFIC_PID=5f0c0ffee{device}&STUDY_ID=st&SESSION_ID=se"
    options = PHONE if device == "phone" else DESKTOP
    suffix = "-phone" if device == "phone" else ""
    laptop = browser.new_context(**options)
    try:
        page = laptop.new_page()
        page.goto(url)
        assert page.inner_text("#start-button") == "Start the study" and ExternalParticipant.objects.count() == 0
        assert overflow(page) == 0
        shot(page, f"recruitment-start{suffix}", tmp_path)
        page.click("#start-button")
        page.wait_for_selector("#resume-code")
        code = page.inner_text("#resume-code")
        assert len(code.replace("-", "")) == 12 and overflow(page) == 0
        nav = page.inner_text("nav")
        assert "Which clip fits the words?" in nav and "Arena" not in nav and "Leaderboard" not in nav
        shot(page, f"recruitment-resume-code{suffix}", tmp_path)
        page.click("#continue-link")
        page.wait_for_selector("#consent-title")
        # Back later in the same browser, after the session ended: the stored code resumes it.
        laptop.clear_cookies(name="sessionid")
        page.goto(url)
        assert page.inner_text("#start-button") == "Continue the study"
        page.click("#start-button")
        page.wait_for_selector("#consent-title")
    finally:
        laptop.close()
    phone = browser.new_context(**options)
    try:
        page = phone.new_page()
        page.goto(url)
        page.wait_for_selector("#resume-code")  # a new device asks for the code
        assert page.is_visible("#new-participant-button") and overflow(page) == 0  # or offers to take part apart
        shot(page, f"recruitment-new-device{suffix}", tmp_path)
        page.click("#start-button")  # an empty code: the browser asks for it (required)
        assert ExternalParticipant.objects.count() == 1
        page.fill("#resume-code", "WRNG-WRNG-WRNG")
        page.click("#start-button")
        page.wait_for_selector("#start-message")
        assert "resume code" in page.inner_text("#start-message")
        page.fill("#resume-code", code.lower())
        page.click("#start-button")
        page.wait_for_selector("#consent-title")
        assert ExternalParticipant.objects.count() == 1
    finally:
        phone.close()
