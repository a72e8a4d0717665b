"""In Chromium, on a desktop and at 390 px: the headphone check, then the practice round with its feedback, then the first real pair."""

from __future__ import annotations

import os

import pytest

from annotation import services
from annotation.crowd_models import PracticeItem, ScreeningAttempt
from annotation.screens import huggins as screening
from tests.annotation.browser_helpers import listening_study, login  # noqa: F401  (the fixture is used by name)
from tests.browser import DESKTOP, DOC_SHOTS, PHONE, overflow
from tests.crowd import hear_practice, screen_receipts_ready
from tests.factories import ClipFactory, UserFactory

pytestmark = pytest.mark.browser


def shot(page, name: str, tmp_path) -> None:
    """AUDITORIUM_SCREENSHOTS=1 refreshes the committed docs/screenshots; otherwise a temporary folder."""
    folder = DOC_SHOTS if os.environ.get("AUDITORIUM_SCREENSHOTS") == "1" else tmp_path
    size = page.viewport_size
    page.set_viewport_size({"width": size["width"], "height": page.evaluate("document.documentElement.scrollHeight")})
    page.screenshot(path=str(folder / f"{name}.png"))
    page.set_viewport_size(size)


LOAD_ALL = """() => Promise.all([...document.querySelectorAll('audio')].map((a) => new Promise((ok) => {
    a.preload = 'auto'; a.addEventListener('loadeddata', () => ok(), {once: true}); a.addEventListener('error', () => ok(), {once: true}); a.load(); })))"""


@pytest.mark.engine
@pytest.mark.timeout(180)
@pytest.mark.parametrize("device", ["desktop", "phone"])
def test_screen_then_practice_with_feedback_then_the_first_pair(live_server, browser, listening_study, device, tmp_path):  # noqa: F811
    study, pair = listening_study
    study.screening, study.screening_trials, study.screening_pass = "huggins", 3, 3
    study.save()
    # Practice has its own clips: an item sharing a clip with a served pair is never shown.
    clip_a, clip_b = ClipFactory(duration=1.0), ClipFactory(duration=1.0)
    PracticeItem.objects.create(
        study=study, condition=pair.condition, clip_a=clip_a, clip_b=clip_b, expected_alignment=clip_a, expected_musicality=clip_a,
        explanation="Clip with the rising melody keeps the bright, upbeat feel the instruction asks for; the other is muddy and flat.",
    )
    user = UserFactory(username=f"ears-{device}", roles=["annotator"])
    services.study_annotator_add(study=study, user=user)
    services.consent_give(user=user)
    context = browser.new_context(**(PHONE if device == "phone" else DESKTOP), bypass_csp=True)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    suffix = "-phone" if device == "phone" else ""
    try:
        login(page, live_server, user.username)
        page.goto(f"{live_server.url}/studies/{study.name}/annotate/")
        page.wait_for_selector("#screening-title")
        assert page.url.endswith(f"/studies/{study.name}/screening/")
        assert page.locator("audio").count() == 3 and overflow(page) == 0
        # The trial audio is served and plays as WAV.
        duration = page.evaluate("""() => new Promise((ok) => { const a = document.querySelector('audio'); a.preload = 'auto';
            a.addEventListener('loadedmetadata', () => ok(a.duration)); a.load(); })""")
        assert abs(duration - (3 * screening.BURST_SECONDS + 2 * screening.GAP_SECONDS)) < 0.05
        # Answers count only for sounds played: every player loads its sound.
        page.evaluate(LOAD_ALL)
        screen_receipts_ready(page)
        # Answer as a listener on headphones would (the page itself never holds the answers).
        attempt = ScreeningAttempt.objects.get(annotator=user)
        for index, target in enumerate(screening.answers_for(attempt.seed, attempt.trials)):
            page.check(f"input[name=trial-{index}][value='{target}']")
        shot(page, f"crowd-screening{suffix}", tmp_path)
        page.click("text=Check my answers")

        page.wait_for_selector("#practice-title")
        assert "Practice pair 1 of 1" in page.inner_text("#practice-title") and overflow(page) == 0
        shown_a = page.locator("input[name=shown_a]").input_value()
        wrong = "B" if shown_a == "a" else "A"  # the clip that was not expected
        # Practice plays on the same A/B transport as the real pairs; no plain audio players.
        assert page.locator("audio").count() == 0 and page.locator("#practice-app #btn-play").count() == 1
        assert page.locator("#practice-submit").is_disabled()  # nothing heard yet
        hear_practice(page, 0.9)
        page.wait_for_selector("#practice-submit:not([disabled])")
        page.check(f"input[name=alignment][value={wrong}]")
        page.check(f"input[name=musicality][value={wrong}]")
        page.click("text=Answer and see the expected answer")
        page.wait_for_selector("#practice-feedback")
        feedback = page.inner_text("#practice-feedback")
        assert "you chose the other" in feedback and "rising melody" in feedback and overflow(page) == 0
        shot(page, f"crowd-practice-feedback{suffix}", tmp_path)
        page.click("#practice-next")

        page.wait_for_selector("#btn-read", state="visible")
        assert page.url.endswith(f"/studies/{study.name}/annotate/")
        assert page.locator("#cond-prompt").inner_text().startswith("An upbeat synth-pop song")
        assert overflow(page) == 0
        shot(page, f"crowd-first-pair{suffix}", tmp_path)
        assert not errors, errors
    finally:
        context.close()
