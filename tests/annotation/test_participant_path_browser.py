"""The whole participant path in Chromium, on a desktop and at 390 px, under the site's Content-Security-Policy:
recruitment link -> Start -> resume code -> consent -> headphone screen -> pass message -> practice on the A/B
transport -> the real pairs up to the study's target -> completion code -> back to the platform's completion URL
(here a loopback page of the live server, so nothing leaves the machine)."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from annotation import services
from annotation.crowd_models import ExternalParticipant, PracticeAnswer, PracticeItem, ScreeningAttempt
from annotation.models import Judgment
from annotation.screens import huggins as screening
from tests.crowd import hear_practice, judge_pair_by_keyboard, screen_receipts_ready
from tests.factories import ClipFactory, ConditionFactory, PairFactory, StudyFactory

pytestmark = pytest.mark.browser
DESKTOP = {"viewport": {"width": 1280, "height": 800}}
PHONE = {"viewport": {"width": 390, "height": 844}, "has_touch": True, "is_mobile": True, "device_scale_factor": 2}
DOC_SHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
# The screenshots docs/crowd.md shows; the others are kept only in a temporary folder.
DOCUMENTED = {"participant-passed-practice", "participant-all-done-phone", "participant-completion-code"}


def shot(page, name: str, tmp_path) -> None:
    """AUDITORIUM_SCREENSHOTS=1 refreshes the documented ones in docs/screenshots."""
    folder = DOC_SHOTS if os.environ.get("AUDITORIUM_SCREENSHOTS") == "1" and name in DOCUMENTED else tmp_path
    page.screenshot(path=str(folder / f"{name}.png"), full_page=True)


def overflow(page) -> int:
    return page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")


PLAY_ALL = """() => Promise.all([...document.querySelectorAll('audio')].map((a) => new Promise((ok) => {
    a.addEventListener('playing', () => ok(true), {once: true}); a.addEventListener('error', () => ok(false), {once: true}); a.play(); })))"""


def top_bar_is_the_study_only(page, title: str) -> None:
    nav = page.inner_text("nav")
    assert title in nav and "Withdraw" in nav and "Arena" not in nav and "Leaderboard" not in nav, nav


@pytest.mark.engine
@pytest.mark.timeout(240)
@pytest.mark.parametrize("device", ["desktop", "phone"])
def test_a_participant_goes_from_the_link_to_the_completion_url(live_server, browser, device, tmp_path):
    title = "Which clip fits the words?"
    study = StudyFactory(
        name=f"path-{device}", title=title, min_listen_seconds=0.5, annotator_target=2, overlap_target=1,
        screening="huggins", screening_trials=1, screening_pass=1,
        instructions="Listen to both clips, then say which follows the description and which is better music.",
    )
    condition = ConditionFactory(prompt="A calm piano piece with a slow, steady pulse.")
    for _ in range(3):  # one more than the target: the code comes at the target, not when the study runs dry
        PairFactory(study=study, condition=condition)
    practice_a, practice_b = ClipFactory(duration=1.0), ClipFactory(duration=1.0)
    PracticeItem.objects.create(
        study=study, condition=condition, clip_a=practice_a, clip_b=practice_b, expected_alignment=practice_a, expected_musicality=practice_a,
        explanation="The first clip keeps a slow, steady pulse; the other rushes.",
    )
    # The platform's completion page, played here by a page of the live server itself.
    completion = f"{live_server.url}/healthz/"
    link = services.recruitment_link_create(study=study, completion_code="C0MPL3TE", screenout_code="OUT", completion_url=completion)
    suffix = "-phone" if device == "phone" else ""
    context = browser.new_context(**(PHONE if device == "phone" else DESKTOP))
    page = context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    page.on("console", lambda msg: problems.append(msg.text) if msg.type == "error" or "Content Security Policy" in msg.text else None)
    page.on("response", lambda r: problems.append(f"{r.status} {r.url}") if r.status >= 500 else None)
    try:
        # The link only shows a page; Start is the POST that makes the account and shows the resume code.
        page.goto(f"{live_server.url}/r/{link.token}/?PROLIFIC_PID=5f0c0ffee{device}&STUDY_ID=st&SESSION_ID=se")
        assert ExternalParticipant.objects.count() == 0
        page.click("#start-button")
        page.wait_for_selector("#resume-code")
        assert len(page.inner_text("#resume-code").replace("-", "")) == 12
        page.click("#continue-link")

        page.wait_for_selector("#consent-title")
        page.check("#id_agree")
        page.click("text=Give consent")

        # The headphone screen: one trial, answered as a listener on headphones would (the page never holds the answer).
        page.wait_for_selector("#screening-title")
        top_bar_is_the_study_only(page, title)
        assert all(page.evaluate(PLAY_ALL))  # answers count only for sounds played
        screen_receipts_ready(page)
        attempt = ScreeningAttempt.objects.get(annotator__external_participant__link=link)
        for index, target in enumerate(screening.answers_for(attempt.seed, attempt.trials)):
            page.check(f"input[name=trial-{index}][value='{target}']")
        page.click("text=Check my answers")

        # The pass message, on the practice page, whose clips play on the A/B transport.
        page.wait_for_selector("#practice-title")
        assert "Headphone check passed: 1 of 1 right" in page.inner_text("ul.messages")
        assert page.locator("audio").count() == 0 and page.locator("#practice-app .clip-row").count() == 2
        assert page.locator("#practice-submit").is_disabled()
        top_bar_is_the_study_only(page, title)
        hear_practice(page, 0.6)
        page.wait_for_selector("#practice-submit:not([disabled])")
        assert overflow(page) == 0
        shot(page, f"participant-passed-practice{suffix}", tmp_path)
        page.check("input[name=alignment][value=A]")
        page.check("input[name=musicality][value=A]")
        page.click("#practice-submit")
        page.wait_for_selector("#practice-feedback")
        assert "slow, steady pulse" in page.inner_text("#practice-feedback")
        page.click("#practice-next")

        # The real pairs, by keyboard, until the target: then "All done", with finishing as the one primary action.
        for _ in range(2):
            judge_pair_by_keyboard(page, 0.7)  # stored, then straight on to the next pair (or the end)
        page.wait_for_selector("#stage-empty", state="visible")
        assert Judgment.objects.filter(annotator__external_participant__link=link).count() == 2
        # The page proved receiving each clip it played (common/audio_proof.py), and only proven fetches were counted.
        from annotation.models import AudioReceipt

        assert AudioReceipt.objects.filter(user__external_participant__link=link).count() >= 4
        assert "All done" in page.inner_text("#empty-title")
        top_bar_is_the_study_only(page, title)
        assert page.locator("#btn-skip").is_hidden()  # no greyed-out "Skip this pair" at the end
        primary = page.locator("#listen-app .button.primary:visible, #listen-app button.primary:visible")
        assert primary.count() == 1 and primary.inner_text() == "Finish and get your completion code"
        assert "back to my studies" not in page.inner_text("#listen-app").lower()  # inner_text reads only what shows
        assert overflow(page) == 0
        shot(page, f"participant-all-done{suffix}", tmp_path)

        page.click("#finish-link")
        page.wait_for_selector("#completion-code")
        assert page.inner_text("#completion-code") == "C0MPL3TE"
        refresh = page.locator("meta[http-equiv=refresh]").get_attribute("content")
        assert refresh.endswith(f"url={completion}?cc=C0MPL3TE")  # the page goes back by itself too
        assert overflow(page) == 0
        shot(page, f"participant-completion-code{suffix}", tmp_path)
        page.click("#completion-link")
        page.wait_for_url(f"{completion}?cc=C0MPL3TE")
        assert parse_qs(urlsplit(page.url).query) == {"cc": ["C0MPL3TE"]}

        participant = ExternalParticipant.objects.get(link=link)
        assert participant.completed_at is not None
        assert PracticeAnswer.objects.filter(annotator=participant.user).count() == 1
        assert not problems, problems
    finally:
        context.close()
