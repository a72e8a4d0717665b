"""The headphone screen's page shows the answers and wording of the attempt's screen (annotation.screens), so a new
kind of screen needs no template change, and the answers it offers are the ones the submit view accepts."""

from __future__ import annotations

import html
import re

import pytest
from django.urls import reverse

from annotation.crowd_models import ScreeningAttempt
from annotation.screens import SCREENS, Screen, huggins
from tests.crowd import play_screen
from tests.factories import StudyAnnotatorFactory, StudyFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def screened(client):
    study = StudyFactory(name="screen-page", screening="huggins", screening_trials=2, screening_pass=2)
    user = StudyAnnotatorFactory(study=study).annotator
    client.force_login(user)
    return study


def _offered(page: str, trials: int) -> list[list[str]]:
    return [re.findall(rf'<input type="radio" name="trial-{i}" value="([^"]+)"', page) for i in range(trials)]


def test_the_huggins_page_offers_its_three_noises(client, screened):
    page = client.get(reverse("screening", kwargs={"name": screened.name})).content.decode()
    assert _offered(page, 2) == [["1", "2", "3"], ["1", "2", "3"]]
    assert "Each sound below has 3 noises" in page and "choose the noise with the tone: 1, 2 or 3." in page
    assert 'aria-label="Sound 2: Which noise had the tone?"' in page


def test_another_screen_kind_brings_its_own_answers_and_wording(client, screened, monkeypatch):
    # A screen with four answers, registered under the study's kind: its page and its checker, no template of its own.
    four = Screen(
        trial_wav=huggins.trial_wav,
        score=lambda seed, answers: sum(a == 4 for a in answers),
        choices=(1, 2, 3, 4),
        instructions="Four beeps per sound; one is louder. Pick it: {choices}.",
        question="Which beep was louder?",
    )
    monkeypatch.setitem(SCREENS, "huggins", four)
    page = html.unescape(client.get(reverse("screening", kwargs={"name": screened.name})).content.decode())
    assert _offered(page, 2) == [["1", "2", "3", "4"], ["1", "2", "3", "4"]]
    assert "Four beeps per sound; one is louder. Pick it: 1, 2, 3 or 4." in page
    assert "three noises" not in page and "noise with the tone" not in page
    assert 'aria-label="Sound 1: Which beep was louder?"' in page
    # The fourth answer, offered on the page, is one the submit view takes.
    attempt = ScreeningAttempt.objects.get(study=screened)
    receipts = play_screen(client, attempt)
    client.post(reverse("screening-submit", kwargs={"name": screened.name, "token": attempt.token}), {"trial-0": "4", "trial-1": "4", **receipts})
    attempt.refresh_from_db()
    assert attempt.correct == 2 and attempt.passed is True
