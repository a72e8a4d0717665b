"""The listening page's browser tests share a study with real-sounding audio and a sign-in through the login page."""

from __future__ import annotations

import numpy as np
import pytest

from annotation import services
from tests.factories import ConditionFactory, PairFactory, StudyFactory, SystemFactory


def plucks(seconds: float, notes: list[float], *, sr: int = 16000, noise: float = 0.0, seed: int = 0) -> np.ndarray:
    """Decaying plucked notes, so the waveforms on screen look like music rather than a flat tone."""
    t = np.arange(int(seconds * sr)) / sr
    out = np.zeros_like(t)
    step = seconds / len(notes)
    for i, freq in enumerate(notes):
        local = t - i * step
        on = local >= 0
        out[on] += np.exp(-local[on] * 5.0) * np.sin(2 * np.pi * freq * local[on])
    out += noise * np.random.default_rng(seed).standard_normal(len(t))
    return (0.5 * out / np.max(np.abs(out))).astype(np.float32)


def ingest(audio: np.ndarray, **kwargs):
    clip, _ = services.clip_ingest_array(audio=audio, sample_rate=16000, fmt="WAV", **kwargs)
    return clip


def login(page, live_server, username: str, password: str = "pw") -> None:
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")


@pytest.fixture
def listening_study(transactional_db):
    study = StudyFactory(
        name="browser-study",
        title="Pop prompts, batch 1",
        instructions="Listen to both clips fully before answering. Judge instruction following and musicality separately.",
        min_listen_seconds=1.0,
        rationale_min_length=10,
        overlap_target=1,
        lock_ttl_seconds=600,
        licence="CC BY-NC-SA 4.0",
    )
    reference = ingest(plucks(2.0, [262, 330, 392, 523]), kind="reference")
    condition = ConditionFactory(
        prompt="An upbeat synth-pop song with a four-on-the-floor beat, bright pads and a female vocal.",
        lyrics="Neon on the water\nwe run until the morning",
        reference=reference,
    )
    clip_a = ingest(plucks(2.5, [440, 494, 523, 587, 659, 587, 523, 494, 440, 392]), system=SystemFactory(name="secret-system-one"))
    clip_b = ingest(plucks(2.5, [330, 330, 392, 392, 440], noise=0.08, seed=1), system=SystemFactory(name="secret-system-two"))
    pair = PairFactory(study=study, condition=condition, clip_a=clip_a, clip_b=clip_b)
    return study, pair
