"""In Chromium, on a desktop and at 390 px: a researcher names a practice pair and opens a recruitment link from the study page."""

from __future__ import annotations

import os

import pytest

from annotation.crowd_models import PracticeItem, RecruitmentLink
from annotation.models import Pair
from tests.annotation.browser_helpers import login
from tests.browser import DESKTOP, DOC_SHOTS, PHONE, overflow
from tests.factories import PairFactory, StudyFactory, UserFactory

pytestmark = pytest.mark.browser


def section_shot(page, selector: str, name: str, tmp_path) -> None:
    """AUDITORIUM_SCREENSHOTS=1 refreshes the committed docs/screenshots; otherwise a temporary folder."""
    folder = DOC_SHOTS if os.environ.get("AUDITORIUM_SCREENSHOTS") == "1" else tmp_path
    page.locator(selector).screenshot(path=str(folder / f"{name}.png"))


@pytest.mark.engine
@pytest.mark.timeout(120)
@pytest.mark.parametrize("device", ["desktop", "phone"])
def test_practice_pairs_and_recruitment_links_from_the_study_page(live_server, browser, transactional_db, device, tmp_path):
    owner = UserFactory(username=f"owner-{device}", roles=["researcher"])
    study = StudyFactory(name=f"crowd-page-{device}", owner=owner)
    gold = PairFactory(study=study, kind=Pair.Kind.GOLD)
    gold.expected_alignment, gold.expected_musicality = gold.clip_a, gold.clip_b
    gold.save()
    context = browser.new_context(**(PHONE if device == "phone" else DESKTOP))
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    suffix = "-phone" if device == "phone" else ""
    try:
        login(page, live_server, owner.username)
        page.goto(f"{live_server.url}/manage/studies/{study.name}/")
        # A refused link (no completion code) keeps the values typed and says what is missing.
        page.fill("#id_cap", "50")
        page.click("text=Open the link")
        page.wait_for_selector("#link-form .errorlist")
        assert "completion code" in page.inner_text("#link-form") and not RecruitmentLink.objects.exists()
        page.fill("#id_label", "Prolific pilot")
        page.fill("#id_completion_code", "C1A2B3")
        page.fill("#id_screenout_code", "NOHEADPHONES")
        page.click("text=Open the link")
        page.wait_for_selector("#recruitment-links")
        assert RecruitmentLink.objects.get(study=study).cap == 50
        assert "PROLIFIC_PID={{%PROLIFIC_PID%}}" in page.locator(".link-url").input_value()

        page.select_option("#id_pair_id", str(gold.pk))
        page.fill("#id_explanation", "A keeps the bright synth lead the prompt asks for; B drifts into a muddy pad.")
        section_shot(page, "#practice", f"study-practice-form{suffix}", tmp_path)
        page.click("text=Add practice pair")
        page.wait_for_selector("#practice-items")
        # Moved into the practice pool: the gold pair is no longer one of the study's pairs.
        assert PracticeItem.objects.filter(study=study, clip_a=gold.clip_a, clip_b=gold.clip_b).exists() and not Pair.objects.filter(pk=gold.pk).exists()
        assert "muddy pad" in page.inner_text("#practice-items")
        assert overflow(page) == 0
        section_shot(page, "#practice", f"study-practice{suffix}", tmp_path)
        section_shot(page, "#recruitment", f"study-recruitment{suffix}", tmp_path)
        assert not errors, errors
    finally:
        context.close()
