"""A recruited participant in Chromium, at 1280 and at 390 px, under the site's Content-Security-Policy:
link -> Start -> consent -> the questions before the study (a required one left blank blocks with a message)
-> a pair on the A/B transport -> the questions after the study -> the completion code. And the researcher's
editor, reached from the study page: a bad definition is refused with where and why, a good one previewed."""

from __future__ import annotations

import json

import pytest

from annotation import services
from annotation.crowd_models import ExternalParticipant
from annotation.models import Judgment
from annotation.questionnaire_models import Questionnaire, QuestionnaireResponse
from tests.annotation.browser_helpers import login
from tests.browser import DESKTOP, PHONE
from tests.crowd import judge_pair_by_keyboard
from tests.factories import ConditionFactory, PairFactory, StudyFactory, UserFactory

pytestmark = pytest.mark.browser

PRE = [
    {"id": "training", "kind": "single", "text": "How many years of musical training have you had?", "choices": ["None", "1–5 years", "More than 5 years"], "required": True},
    {"id": "genres", "kind": "multiple", "text": "Which styles do you listen to often?", "choices": ["Classical", "Pop", "Jazz", "Electronic"]},
    {"id": "comfort", "kind": "likert", "text": "My headphones are comfortable.", "scale": ["Strongly disagree", "Disagree", "Neutral", "Agree", "Strongly agree"]},
    {"id": "age", "kind": "number", "text": "Your age in years", "min": 18, "max": 100, "required": True},
]
POST = [{"id": "comment", "kind": "text", "text": "Anything you would like to tell the researchers?", "max_length": 300}]


def overflow(page) -> int:
    return page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")


@pytest.mark.engine
@pytest.mark.timeout(180)
@pytest.mark.parametrize("device", ["desktop", "phone"])
def test_a_participant_answers_before_and_after_the_study_and_gets_the_code(live_server, browser, device, tmp_path):
    study = StudyFactory(name=f"asked-{device}", title="Which clip fits the words?", min_listen_seconds=0.5, annotator_target=1, overlap_target=1)
    PairFactory(study=study, condition=ConditionFactory(prompt="A calm piano piece."))
    services.questionnaire_save(study=study, phase="pre", questions=PRE)
    services.questionnaire_save(study=study, phase="post", questions=POST)
    completion = f"{live_server.url}/healthz/"
    link = services.recruitment_link_create(study=study, completion_code="C0MPL3TE", completion_url=completion)
    context = browser.new_context(**(PHONE if device == "phone" else DESKTOP))
    page = context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    page.on("console", lambda msg: problems.append(msg.text) if msg.type == "error" and "400" not in msg.text or "Content Security Policy" in msg.text else None)
    page.on("response", lambda r: problems.append(f"{r.status} {r.url}") if r.status >= 500 else None)
    try:
        page.goto(f"{live_server.url}/r/{link.token}/?PROLIFIC_PID=5f0c0ffee{device}&STUDY_ID=st&SESSION_ID=se")
        page.click("#start-button")
        page.click("#continue-link")
        page.wait_for_selector("#consent-title")
        page.check("#id_agree")
        page.click("text=Give consent")

        # Before the study: the age left blank is refused with a message beside it, and nothing is kept.
        page.wait_for_selector("#questionnaire-title")
        assert page.inner_text("#questionnaire-title") == "A few questions before you start"
        page.check("label:has-text('1–5 years') input")
        page.check("label:has-text('Jazz') input")
        page.check("label:has-text('Pop') input")
        page.check("label:has-text('Agree'):not(:has-text('Disagree')):not(:has-text('Strongly')) input")
        page.click("#questionnaire-submit")
        page.wait_for_selector("#q_age-error")
        assert page.inner_text("#q_age-error") == "This question needs an answer before you go on."
        assert "1 question needs your attention" in page.inner_text("#questionnaire-error")
        assert page.is_checked("label:has-text('Jazz') input")  # what was answered stays answered
        assert not QuestionnaireResponse.objects.exists()
        assert overflow(page) == 0
        page.screenshot(path=str(tmp_path / f"questionnaire-blocked-{device}.png"), full_page=True)
        page.fill("#id_q_age", "34")
        page.click("#questionnaire-submit")

        # The pair, then the end of the work: finishing leads to the questions after the study.
        judge_pair_by_keyboard(page, 0.6)
        page.wait_for_selector("#stage-empty", state="visible")
        assert Judgment.objects.filter(annotator__external_participant__link=link).count() == 1
        page.click("#finish-link")
        page.wait_for_selector("#questionnaire-title")
        assert page.inner_text("#questionnaire-title") == "A few questions before you finish"
        assert overflow(page) == 0
        page.fill("#id_q_comment", "Clip B was a little loud.")
        page.screenshot(path=str(tmp_path / f"questionnaire-post-{device}.png"), full_page=True)
        page.click("#questionnaire-submit")

        page.wait_for_selector("#completion-code")
        assert page.inner_text("#completion-code") == "C0MPL3TE"
        participant = ExternalParticipant.objects.get(link=link)
        assert participant.completed_at is not None
        answers = {r.phase: r.answers for r in QuestionnaireResponse.objects.filter(annotator=participant.user)}
        assert answers == {"pre": {"training": "1–5 years", "genres": ["Pop", "Jazz"], "comfort": 4, "age": 34}, "post": {"comment": "Clip B was a little loud."}}
        assert not problems, problems
    finally:
        context.close()


@pytest.mark.engine
@pytest.mark.timeout(120)
@pytest.mark.parametrize("device", ["desktop", "phone"])
def test_the_researcher_writes_the_questions_from_the_study_page(live_server, browser, transactional_db, device, tmp_path):
    owner = UserFactory(username=f"asker-{device}", roles=["researcher"])
    study = StudyFactory(name=f"asking-{device}", owner=owner)
    context = browser.new_context(**(PHONE if device == "phone" else DESKTOP))
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        login(page, live_server, owner.username)
        page.goto(f"{live_server.url}/manage/studies/{study.name}/")
        page.click("#questionnaires-link")
        page.wait_for_selector("#h-questionnaires")
        page.fill("#id_pre", json.dumps([{**PRE[3], "min": 100, "max": 18}]))
        page.click("#questionnaire-save")
        page.wait_for_selector("#questionnaire-edit-form .errorlist")
        assert "Question 1 (age): min must not be above max." in page.inner_text("#questionnaire-edit-form .errorlist")
        assert not Questionnaire.objects.exists()
        page.fill("#id_pre", json.dumps(PRE, indent=2, ensure_ascii=False))
        page.fill("#id_post", json.dumps(POST))
        page.click("#questionnaire-save")
        page.wait_for_selector(".questionnaire-preview")
        assert "Questionnaires saved" in page.inner_text("ul.messages")
        assert page.locator(".questionnaire-preview").count() == 2 and page.locator(".questionnaire-preview fieldset.question").count() == 3
        assert [q.version for q in Questionnaire.objects.order_by("phase")] == [1, 1]
        assert overflow(page) == 0
        page.screenshot(path=str(tmp_path / f"questionnaire-editor-{device}.png"), full_page=True)
        assert not errors, errors
    finally:
        context.close()
