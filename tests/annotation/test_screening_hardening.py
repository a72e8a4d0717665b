"""The headphone screen: no hidden input reaches the server's work, an |L - R| energy detector picks the
target at chance, the Huggins percept stays where it was, and a screen-out ends a participant's session."""

from __future__ import annotations

import time

import numpy as np
import pytest
import requests
from django.conf import settings
from django.test import Client
from django.urls import reverse
from scipy.stats import binomtest

from annotation import services
from annotation.crowd_models import ScreeningAttempt
from annotation.screens import huggins as screening
from tests.crowd import play_screen
from tests.factories import PairFactory, StudyAnnotatorFactory, StudyFactory
from tests.live_uvicorn import serving

TOKEN = "t" * 32  # an unmasked CSRF secret: the cookie and the field carry the same value


def _bursts(audio: np.ndarray) -> list[np.ndarray]:
    n, gap = int(screening.SAMPLE_RATE * screening.BURST_SECONDS), int(screening.SAMPLE_RATE * screening.GAP_SECONDS)
    return [audio[k * (n + gap) : k * (n + gap) + n] for k in range(screening.INTERVALS)]


def energy_detector(seed: int, index: int) -> int:
    """The script that passed the old screen: the burst whose ears differ most (sum of |L - R|)."""
    return 1 + int(np.argmax([np.abs(b[:, 0] - b[:, 1]).sum() for b in _bursts(screening.trial_audio(seed, index))]))


def test_an_interaural_energy_detector_picks_the_target_at_chance():
    trials = [(seed, index) for seed in range(1000, 1070) for index in range(3)]  # 210 trials
    hits = sum(energy_detector(seed, index) == screening.trial_spec(seed, index)["target"] for seed, index in trials)
    p = binomtest(hits, len(trials), 1 / 3).pvalue
    assert p > 0.01, f"the detector picks the target {hits} of {len(trials)} times (p = {p:.4f})"


def test_the_target_keeps_its_huggins_band_and_the_others_differ_only_where_no_pitch_is_heard():
    for seed, index in ((7, 0), (8, 1), (9, 2)):
        spec = screening.trial_spec(seed, index)
        freqs = np.fft.rfftfreq(int(screening.SAMPLE_RATE * screening.BURST_SECONDS), 1.0 / screening.SAMPLE_RATE)
        for number, burst in enumerate(_bursts(screening.trial_audio(seed, index)), start=1):
            power = np.abs(np.fft.rfft(burst[:, 0] - burst[:, 1])) ** 2
            low = power[freqs < 1500].sum() / power.sum()
            if number == spec["target"]:
                near = np.abs(freqs - spec["frequency"]) <= 2 * screening.BANDWIDTH * spec["frequency"]
                assert power[near].sum() / power.sum() > 0.95  # the interaural difference is the narrow band: the pitch
            else:
                assert low < 1e-3 and power[freqs >= screening.DECOY_LOW_HZ * 0.9].sum() / power.sum() > 0.95


@pytest.fixture
def member(db):
    study = StudyFactory(name="screened-live", screening="huggins", screening_trials=4, screening_pass=3, screening_retries=1)
    PairFactory(study=study)
    user = StudyAnnotatorFactory(study=study).annotator
    services.consent_give(user=user)
    return study, user


@pytest.mark.engine
@pytest.mark.django_db(transaction=True)
def test_the_trial_count_comes_from_the_study_never_the_form_under_uvicorn(member):
    study, user = member
    browser = Client()
    browser.force_login(user)
    session = browser.cookies[settings.SESSION_COOKIE_NAME].value
    attempt = services.screening_attempt_open(study=study, annotator=user)
    url_path = reverse("screening-submit", kwargs={"name": study.name, "token": attempt.token})
    cookies = {settings.SESSION_COOKIE_NAME: session, "csrftoken": TOKEN}
    receipts = play_screen(browser, attempt)  # the same session: its sounds were played
    with serving() as (port, _):
        url = f"http://127.0.0.1:{port}{url_path}"
        for hidden in ("abc", "1e3", "10000000", "-5", "9" * 5000):
            started = time.monotonic()
            response = requests.post(url, data={"csrfmiddlewaretoken": TOKEN, "trials": hidden, "trial-0": "abc", **receipts}, cookies=cookies, allow_redirects=False, timeout=30)
            elapsed = time.monotonic() - started
            assert response.status_code == 400 and "Answer every sound" in response.text, (hidden, response.status_code)
            assert elapsed < 5.0, f"trials={hidden[:20]} took {elapsed:.1f} s"
        assert ScreeningAttempt.objects.get(pk=attempt.pk).passed is None  # bad answers change nothing
        right = {f"trial-{i}": str(t) for i, t in enumerate(screening.answers_for(attempt.seed, attempt.trials))}
        done = requests.post(url, data={"csrfmiddlewaretoken": TOKEN, "trials": "10000000", **right, **receipts}, cookies=cookies, allow_redirects=False, timeout=30)
        assert done.status_code == 302
        page = requests.get(f"http://127.0.0.1:{port}{done.headers['Location']}", cookies={**cookies, **done.cookies.get_dict()}, allow_redirects=True, timeout=30)
        assert "Headphone check passed: 4 of 4 right" in page.text
    assert ScreeningAttempt.objects.get(pk=attempt.pk).passed is True


@pytest.mark.django_db
def test_a_screened_out_participant_is_signed_out_and_attempts_are_limited(client):
    study = StudyFactory(name="screen-out", screening="huggins", screening_trials=3, screening_pass=3, screening_retries=1)
    PairFactory(study=study)
    link = services.recruitment_link_create(study=study, completion_code="DONE1", screenout_code="OUT1")
    url = f"{reverse('recruitment-enter', kwargs={'token': link.token})}?PROLIFIC_PID=screen1"
    client.get(url)
    client.post(url, {})
    user_id = int(client.session["_auth_user_id"])
    from django.contrib.auth import get_user_model

    services.consent_give(user=get_user_model().objects.get(pk=user_id))
    for _ in range(2):  # one attempt and one retry, both wrong
        client.get(reverse("screening", kwargs={"name": study.name}))
        attempt = ScreeningAttempt.objects.filter(annotator_id=user_id, passed__isnull=True).get()
        wrong = {f"trial-{i}": str(t % 3 + 1) for i, t in enumerate(screening.answers_for(attempt.seed, 3))}
        receipts = play_screen(client, attempt)
        last = client.post(reverse("screening-submit", kwargs={"name": study.name, "token": attempt.token}), {**wrong, **receipts})
    assert b"OUT1" in last.content and "_auth_user_id" not in client.session
    assert ScreeningAttempt.objects.filter(annotator_id=user_id).count() == 2
    with pytest.raises(Exception):
        services.screening_attempt_open(study=study, annotator=get_user_model().objects.get(pk=user_id))
