"""The antiphase-loudness headphone screen (Woods et al. 2017): headphone ears find the quiet tone, a loudspeaker
mix hears the antiphase tone as the quietest and fails, and a study that asks for it serves it end to end."""

from __future__ import annotations

import io

import numpy as np
import pytest
import soundfile as sf
from django.test import Client
from django.urls import reverse

from annotation.crowd_models import ScreeningAttempt
from annotation.screens import SCREENS, antiphase
from tests.crowd import play_screen
from tests.factories import PairFactory, StudyAnnotatorFactory, StudyFactory


def _tones(audio: np.ndarray) -> list[np.ndarray]:
    n, gap = int(antiphase.SAMPLE_RATE * antiphase.TONE_SECONDS), int(antiphase.SAMPLE_RATE * antiphase.GAP_SECONDS)
    return [audio[k * (n + gap) : k * (n + gap) + n] for k in range(antiphase.INTERVALS)]


def _rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(x, dtype=np.float64))))


def headphones(seed: int, index: int) -> int:
    """Each ear hears its own channel: the quietest tone is the one with the lowest level at the ears."""
    return 1 + int(np.argmin([_rms(t[:, 0]) + _rms(t[:, 1]) for t in _tones(antiphase.trial_audio(seed, index))]))


def loudspeakers(seed: int, index: int) -> int:
    """Two speakers mix in the air (equal paths, the worst case for the antiphase tone): the ears hear L + R."""
    return 1 + int(np.argmin([_rms(t[:, 0] + t[:, 1]) for t in _tones(antiphase.trial_audio(seed, index))]))


def test_the_trial_is_a_quiet_tone_an_antiphase_tone_and_a_plain_one():
    for seed in range(5):
        spec = antiphase.trial_spec(seed, 0)
        tones = _tones(antiphase.trial_audio(seed, 0))
        plain = ({1, 2, 3} - {spec["target"], spec["antiphase"]}).pop()
        quiet, anti, full = (tones[i - 1] for i in (spec["target"], spec["antiphase"], plain))
        assert 20 * np.log10(_rms(quiet[:, 0]) / _rms(full[:, 0])) == pytest.approx(antiphase.QUIET_DB, abs=0.05)
        assert np.allclose(anti[:, 0], -anti[:, 1], atol=1e-4) and np.allclose(full[:, 0], full[:, 1])
        assert _rms(anti[:, 0]) == pytest.approx(_rms(full[:, 0]), rel=1e-3)
        spectrum = np.abs(np.fft.rfft(full[:, 0]))
        assert np.fft.rfftfreq(len(full), 1 / antiphase.SAMPLE_RATE)[spectrum.argmax()] == pytest.approx(antiphase.TONE_HZ, abs=1.0)


def test_headphones_pass_and_loudspeakers_answer_the_antiphase_tone():
    trials = 6
    for seed in range(40):
        assert antiphase.score(seed, [headphones(seed, i) for i in range(trials)]) == trials
        assert antiphase.score(seed, [loudspeakers(seed, i) for i in range(trials)]) == 0
    # The answer moves between trials and seeds (a fixed answer would pass a listener who always says 1).
    answers = [a for seed in range(40) for a in antiphase.answers_for(seed, trials)]
    assert min(answers.count(k) for k in (1, 2, 3)) > len(answers) / 5


def test_the_wav_is_the_seeded_trial_in_stereo():
    audio, rate = sf.read(io.BytesIO(antiphase.trial_wav(7, 2)), dtype="float32")
    assert rate == antiphase.SAMPLE_RATE and audio.shape[1] == 2
    assert np.allclose(audio, antiphase.trial_audio(7, 2), atol=1 / 2**14)


@pytest.mark.django_db
def test_a_study_with_the_antiphase_screen_serves_it_and_checks_it_on_the_server():
    study = StudyFactory(name="antiphase-study", screening="antiphase", screening_trials=3, screening_pass=3, screening_retries=0)
    PairFactory(study=study)
    user = StudyAnnotatorFactory(study=study).annotator
    client = Client()
    client.force_login(user)
    page = client.get(reverse("screening", kwargs={"name": study.name})).content.decode()
    assert SCREENS["antiphase"].instructions_text() in page and "Which tone was the quietest?" in page and "faint tone" not in page
    attempt = ScreeningAttempt.objects.get(annotator=user)
    assert attempt.kind == "antiphase"
    wav = client.get(reverse("screening-trial", kwargs={"token": attempt.token, "index": 1}))
    assert wav.content == antiphase.trial_wav(attempt.seed, 1)
    receipts = play_screen(client, attempt)
    right = {f"trial-{i}": str(a) for i, a in enumerate(antiphase.answers_for(attempt.seed, attempt.trials))}
    response = client.post(reverse("screening-submit", kwargs={"name": study.name, "token": attempt.token}), {**right, **receipts})
    assert response.status_code == 302 and response["Location"] == reverse("annotate", kwargs={"name": study.name})
    attempt.refresh_from_db()
    assert attempt.passed is True and attempt.correct == 3
