"""The questions before the study stand in front of the APIs as they do in front of the pages: the next pair, the
judgment (the page's cycle and the plain submit) and a separate screen's answer are refused (409, the step named)
with nothing stored, for a recruited participant and an annotator added by hand alike."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from annotation import services
from annotation.crowd_models import ExternalParticipant
from annotation.models import Assignment, DimensionPasses, Judgment, ListeningEvent
from tests.annotation.cycle_page import CyclePage, PassesPage, make_pairs
from tests.factories import StudyFactory
from tests.listening import Clock

pytestmark = pytest.mark.django_db

PRE = [{"id": "training", "kind": "single", "text": "Musical training", "choices": ["None", "Some"], "required": True}]


@pytest.fixture
def clock(monkeypatch):
    return Clock(monkeypatch)


def recruited(study):
    """A participant who came through a recruitment link and gave consent."""
    link = services.recruitment_link_create(study=study, completion_code="C0MPL3TE")
    enter = f"{reverse('recruitment-enter', kwargs={'token': link.token})}?PROLIFIC_PID=5f0c0ffee&STUDY_ID=s&SESSION_ID=t"
    client = Client()
    client.get(enter)
    client.post(enter, {})
    participant = ExternalParticipant.objects.get(study=study)
    services.consent_give(user=participant.user)
    return participant.user


def refused(response):
    assert response.status_code == 409, response.content
    body = response.json()
    assert body["code"] == "questionnaire_required" and body["step"] == "questionnaire-pre"
    assert "questions before the study" in body["detail"] and "Nothing was stored" in body["detail"]


def test_the_next_pair_waits_for_the_questions_before_the_study(clock):
    study = StudyFactory(min_listen_seconds=2.0, overlap_target=1)
    make_pairs(study, 2)
    services.questionnaire_save(study=study, phase="pre", questions=PRE)
    user = recruited(study)
    client = Client()
    client.force_login(user)
    next_url = reverse("api-assignment-next", kwargs={"name": study.name})
    refused(client.post(next_url))
    assert not Assignment.objects.exists()
    services.questionnaire_answer(questionnaire=study.questionnaires.get(phase="pre"), annotator=user, answers={"training": "Some"})
    served = client.post(next_url)
    assert served.status_code == 200 and served.json()["assignment"] is not None


@pytest.mark.parametrize("who", ["recruited", "invited"])
def test_a_pair_served_before_the_questions_were_added_is_not_judged_until_they_are_answered(clock, who):
    study = StudyFactory(min_listen_seconds=2.0, overlap_target=1)
    make_pairs(study, 2)
    page = CyclePage(clock, study=study, user=recruited(study) if who == "recruited" else None)
    page.listen_honestly()
    services.questionnaire_save(study=study, phase="pre", questions=PRE)
    refused(page.submit())
    plain = reverse("api-judgment-submit", kwargs={"assignment_id": page.assignment["id"]})
    body = {k: v for k, v in page.body(key="k-2").items() if k != "listening"}
    refused(page.post(plain, body))
    assert not Judgment.objects.exists() and not ListeningEvent.objects.exists()
    assert Assignment.objects.get(pk=page.assignment["id"]).state == Assignment.State.ACTIVE
    services.questionnaire_answer(questionnaire=study.questionnaires.get(phase="pre"), annotator=page.user, answers={"training": "None"})
    stored = page.submit()
    assert stored.status_code == 201, stored.content
    assert Judgment.objects.filter(annotator=page.user).count() == 1 and stored.json()["next"]["assignment"] is not None


def test_a_separate_screen_answer_waits_for_the_questions_too(clock):
    study = StudyFactory(min_listen_seconds=2.0, overlap_target=1, dimension_passes=DimensionPasses.SEPARATE)
    make_pairs(study, 2)
    page = PassesPage(clock, study=study, user=recruited(study))
    page.listen_honestly()
    services.questionnaire_save(study=study, phase="pre", questions=PRE)
    refused(page.answer("alignment", "A", key="k-1"))
    held = Assignment.objects.get(pk=page.assignment["id"])
    assert held.first_pass == {} and not ListeningEvent.objects.exists()
