"""Loudness-matched playback in Chromium: two clips 8 LU apart play within 0.5 LU of each other on the pairwise page and
on a multi-stimulus rating page, read from the GainNodes the transport built (and, on the multi-stimulus page, from the
served bytes, which carry the gain); the study page warns of unmeasured clips.

The clips are synthesised here, written with soundfile and ingested through the normal service; their loudness is
measured again with pyloudnorm from the written files, independently of what ingest stored.
"""

from __future__ import annotations

import io
import math
from pathlib import Path

import numpy as np
import pyloudnorm
import pytest
import soundfile as sf
from django.test import Client
from django.urls import reverse

from annotation import services
from annotation.models import Assignment, Pair
from annotation.ratings import services as rating_services
from annotation.ratings.models import RatingAssignment
from annotation.ratings.selectors import AUDIO_SALT
from common.blind import letter_token
from tests.annotation.browser_helpers import login
from tests.factories import AnnotatorFactory, ClipFactory, ConditionFactory, StudyAnnotatorFactory, StudyFactory, UserFactory

pytestmark = pytest.mark.browser
SR = 48000
TARGET = -23.0
SHOTS = Path("/tmp/auditorium-loudness-shots")


def _write(folder: Path, name: str, audio: np.ndarray) -> tuple[Path, float]:
    path = folder / f"{name}.wav"
    sf.write(str(path), audio.astype(np.float32), SR, subtype="PCM_16")
    written, rate = sf.read(str(path), dtype="float64")
    return path, pyloudnorm.Meter(rate).integrated_loudness(written)


def _music(seed: int, freqs, seconds: float = 4.0) -> np.ndarray:
    """A chord over soft noise, scaled below to a loudness."""
    t = np.arange(int(seconds * SR)) / SR
    x = sum(np.sin(2 * np.pi * f * t) for f in freqs) + 0.3 * np.random.default_rng(seed).standard_normal(len(t))
    return x / np.abs(x).max()


def _clips_8_lu_apart(folder: Path) -> dict:
    """Two clips whose pyloudnorm loudness differs by 8 LU (about -19 and -27 LUFS), both far below the peak ceiling."""
    made = {}
    for name, seed, freqs, lufs in (("loud", 1, (220, 277, 330), -19.0), ("quiet", 2, (196, 247, 294), -27.0)):
        x = _music(seed, freqs)
        x = x * 10 ** ((lufs - pyloudnorm.Meter(SR).integrated_loudness(x)) / 20)
        path, measured = _write(folder, name, x)
        clip, _ = services.clip_ingest(path=path, system=None)
        made[name] = (clip, measured)
    assert made["loud"][1] - made["quiet"][1] == pytest.approx(8.0, abs=0.1)
    return made


def _effective(levels: dict, measured: dict) -> dict:
    """Measured loudness plus the gain each clip's GainNode holds, in LUFS."""
    return {side: measured[side] + 20 * math.log10(levels[side]["value"]) for side in measured}


@pytest.mark.engine
@pytest.mark.timeout(120)
def test_pairwise_page_plays_two_clips_8_lu_apart_within_half_a_lu(live_server, browser, transactional_db, tmp_path):
    SHOTS.mkdir(exist_ok=True)
    made = _clips_8_lu_apart(tmp_path)
    reference_path, reference_lufs = _write(tmp_path, "reference", _music(3, (262, 330)) * 0.05)
    reference, _ = services.clip_ingest(path=reference_path, kind="reference")
    study = StudyFactory(name="levelled", min_listen_seconds=1.0, overlap_target=1, instructions="Compare the two clips.")
    assert study.loudness_match and study.loudness_target_lufs == TARGET
    loud, quiet = made["loud"][0], made["quiet"][0]
    condition = ConditionFactory(prompt="A calm chord progression.", reference=reference)
    Pair.objects.create(study=study, condition=condition, clip_a=loud, clip_b=quiet, clip_key=Pair.key_for(loud.pk, quiet.pk))
    user = AnnotatorFactory(username="leveller")
    StudyAnnotatorFactory(study=study, annotator=user)

    context = browser.new_context(viewport={"width": 1280, "height": 800}, bypass_csp=True)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    login(page, live_server, user.username)
    page.goto(f"{live_server.url}/studies/{study.name}/annotate/")
    page.wait_for_function("window.auditoriumListening && window.auditoriumListening.snapshot().ready", timeout=20_000)
    page.click("#btn-read")
    page.locator("body").focus()
    page.keyboard.press("Space")
    page.wait_for_function("window.auditoriumListening.snapshot().playing && window.auditoriumListening.snapshot().position > 0.3", timeout=10_000)
    page.keyboard.press("s")  # the level holds through an A/B switch
    page.wait_for_timeout(300)
    state = page.evaluate("window.auditoriumListening.snapshot()")
    page.screenshot(path=str(SHOTS / "pairwise-levelled.png"))
    page.keyboard.press("Space")

    a_clip = Assignment.objects.get(annotator=user).a_clip_id
    measured_by_clip = {clip.pk: lufs for clip, lufs in made.values()}
    measured = {"A": measured_by_clip[a_clip], "B": measured_by_clip[quiet.pk if a_clip == loud.pk else loud.pk]}
    effective = _effective(state["levels"], measured)
    assert abs(effective["A"] - effective["B"]) <= 0.5, (measured, state["levels"], effective)
    assert all(abs(value - TARGET) <= 0.5 for value in effective.values()), effective
    # The node holds what the server sent, 10^(dB/20); the quieter clip is lifted, the louder lowered.
    for side in ("A", "B"):
        assert state["levels"][side]["value"] == pytest.approx(10 ** (state["levels"][side]["db"] / 20), rel=1e-6)
    assert sorted(state["levels"][s]["db"] for s in ("A", "B")) == pytest.approx(sorted([TARGET - m for m in measured.values()]), abs=0.15)
    # The reference player is levelled by the same rule.
    assert reference_lufs + 20 * math.log10(state["referenceLevel"]["value"]) == pytest.approx(TARGET, abs=0.5)
    assert not errors, errors
    context.close()


@pytest.mark.engine
@pytest.mark.timeout(120)
def test_multi_stimulus_page_plays_two_clips_8_lu_apart_within_half_a_lu(live_server, browser, transactional_db, tmp_path):
    SHOTS.mkdir(exist_ok=True)
    made = _clips_8_lu_apart(tmp_path)
    study = StudyFactory(name="levelled-ratings", min_listen_seconds=1.0, overlap_target=1, instructions="Rate each clip.")
    rating_services.rating_task_set(study=study, task="multi", dimensions=["musicality"])
    rating_services.rating_item_add(study=study, condition=ConditionFactory(prompt="A calm chord progression."), clips=[c for c, _ in made.values()])
    user = AnnotatorFactory(username="rater-levels")
    StudyAnnotatorFactory(study=study, annotator=user)

    context = browser.new_context(viewport={"width": 1280, "height": 900}, bypass_csp=True)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    login(page, live_server, user.username)
    page.goto(f"{live_server.url}/ratings/studies/{study.name}/rate/")
    page.wait_for_function("window.auditoriumRating && window.auditoriumRating.snapshot().ready", timeout=20_000)
    page.click("#btn-read")
    page.click("#btn-play")
    page.wait_for_function("window.auditoriumRating.snapshot().playing", timeout=10_000)
    page.click(".rate-clip[data-clip='B'] .side-btn")
    page.wait_for_timeout(300)
    state = page.evaluate("window.auditoriumRating.snapshot()")
    page.screenshot(path=str(SHOTS / "multi-levelled.png"), full_page=True)
    page.click("#btn-play")

    # A multi-stimulus page is told 0 dB for every letter: the gain is in the bytes each letter is served as
    # (common/audio_render.py), so the level is measured on those bytes, over the clip's own length.
    assignment = RatingAssignment.objects.get(annotator=user)
    clips_by_pk = {clip.pk: clip for clip, _ in made.values()}
    reader = Client()
    reader.force_login(user)
    measured = {}
    for label, clip_id in assignment.labels.items():
        token = letter_token(salt=AUDIO_SALT, assignment_id=assignment.pk, label=label)
        body = b"".join(reader.get(reverse("ratings:audio", kwargs={"token": token})).streaming_content)
        served, rate = sf.read(io.BytesIO(body), dtype="float64")
        measured[label] = pyloudnorm.Meter(rate).integrated_loudness(served[: int(round(clips_by_pk[clip_id].duration * rate))])
    assert all(state["levels"][label]["db"] == 0.0 for label in measured), state["levels"]
    effective = _effective(state["levels"], measured)
    assert abs(effective["A"] - effective["B"]) <= 0.5, (measured, state["levels"], effective)
    assert all(abs(value - TARGET) <= 0.5 for value in effective.values()), effective
    assert not errors, errors
    context.close()


@pytest.mark.engine
@pytest.mark.timeout(60)
def test_study_page_names_the_clips_without_a_measurement(live_server, browser, transactional_db):
    SHOTS.mkdir(exist_ok=True)
    study = StudyFactory(name="old-clips", title="Clips from before loudness was measured")
    for _ in range(3):
        a, b = ClipFactory(), ClipFactory()
        Pair.objects.create(study=study, condition=ConditionFactory(), clip_a=a, clip_b=b, clip_key=Pair.key_for(a.pk, b.pk))
    researcher = UserFactory(username="lead-levels", roles=["researcher"])
    study.collaborators.add(researcher)
    context = browser.new_context(viewport={"width": 1280, "height": 900}, bypass_csp=True)
    page = context.new_page()
    login(page, live_server, researcher.username)
    page.goto(f"{live_server.url}/manage/studies/{study.name}/")
    note = page.locator("#loudness-note")
    assert note.is_visible()
    assert "6 clips of this study have no loudness measurement" in note.inner_text()
    assert "matched to -23 LUFS" in page.locator("#loudness-setting").inner_text()
    page.screenshot(path=str(SHOTS / "study-page-note.png"))
    context.close()


@pytest.mark.engine
@pytest.mark.timeout(120)
def test_practice_page_levels_its_two_clips_like_the_real_pairs(live_server, browser, transactional_db, tmp_path):
    made = _clips_8_lu_apart(tmp_path)
    loud, quiet = made["loud"][0], made["quiet"][0]
    study = StudyFactory(name="levelled-practice", min_listen_seconds=0.5, overlap_target=1)
    gold = Pair.objects.create(
        study=study, condition=ConditionFactory(prompt="A calm chord progression."), clip_a=loud, clip_b=quiet,
        clip_key=Pair.key_for(loud.pk, quiet.pk), kind=Pair.Kind.GOLD, expected_alignment=loud,
    )
    services.practice_from_gold(pair=gold, explanation="A follows the instruction.")
    user = AnnotatorFactory(username="practiser-levels")
    StudyAnnotatorFactory(study=study, annotator=user)
    context = browser.new_context(viewport={"width": 1280, "height": 800}, bypass_csp=True)
    page = context.new_page()
    login(page, live_server, user.username)
    page.goto(f"{live_server.url}/studies/{study.name}/practice/")
    page.wait_for_function("window.auditoriumPractice !== undefined")
    page.locator("body").focus()
    page.keyboard.press("Space")  # the first press loads both clips
    page.wait_for_function("window.auditoriumPractice.snapshot().ready", timeout=20_000)
    state = page.evaluate("window.auditoriumPractice.snapshot()")
    shown_a = page.locator("input[name=shown_a]").input_value()
    first, second = (loud, quiet) if shown_a == "a" else (quiet, loud)
    measured_by_clip = {clip.pk: lufs for clip, lufs in made.values()}
    effective = _effective(state["levels"], {"A": measured_by_clip[first.pk], "B": measured_by_clip[second.pk]})
    assert abs(effective["A"] - effective["B"]) <= 0.5 and all(abs(v - TARGET) <= 0.5 for v in effective.values()), effective
    context.close()
