"""Loudness-matched playback: the gains the pages get (pairwise, rating, practice), the study option, the study page's note."""

from __future__ import annotations

import random

import numpy as np
import pyloudnorm
import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from annotation import services
from annotation.models import Pair, Study
from annotation.ratings import services as rating_services
from annotation.selectors import study_loudness
from common.errors import ServiceError
from common.loudness import PEAK_CEILING_DBTP, page_gain_db, playback_gain_db
from tests.factories import AnnotatorFactory, ClipFactory, ConditionFactory, JudgmentFactory, StudyAnnotatorFactory, StudyFactory, UserFactory
from tests.listening import clip_at

pytestmark = pytest.mark.django_db
SR = 48000


def tone(amp: float, *, freq: float = 997.0, seconds: float = 3.0, noise: float = 0.0, seed: int = 0) -> np.ndarray:
    t = np.arange(int(seconds * SR)) / SR
    x = amp * np.sin(2 * np.pi * freq * t)
    return x + noise * np.random.default_rng(seed).standard_normal(len(t))


def ingest(audio: np.ndarray, **kwargs):
    clip, _ = services.clip_ingest_array(audio=audio, sample_rate=SR, fmt="WAV", **kwargs)
    return clip


def pyloudnorm_lufs(audio: np.ndarray) -> float:
    # The stored file is 16-bit PCM: measure what was written, with pyloudnorm alone.
    stored = np.round(np.asarray(audio, dtype=np.float32) * 32767) / 32767
    return pyloudnorm.Meter(SR).integrated_loudness(stored)


# --- The rule in page steps -------------------------------------------------------------------


def test_page_gain_is_the_rule_in_tenth_db_steps_and_never_crosses_the_ceiling():
    rng = random.Random(5)
    for _ in range(5000):
        lufs, peak, target = rng.uniform(-60, 0), rng.uniform(-40, 3), rng.uniform(-40, -10)
        exact = playback_gain_db(lufs, peak, target_lufs=target)
        gain = page_gain_db(lufs, peak, target_lufs=target)
        assert round(gain * 10) == pytest.approx(gain * 10, abs=1e-9)
        assert abs(gain - exact) <= 0.1 + 1e-9
        if gain > 0:
            assert peak + gain <= PEAK_CEILING_DBTP + 1e-9
    # Rounded to nearest where the ceiling leaves room; down where rounding up would cross it.
    assert page_gain_db(-30.0, -20.0, target_lufs=-23.04) == 7.0
    assert page_gain_db(-30.0, -3.06, target_lufs=-23.0) == 2.0  # 2.06 allowed: 2.1 would reach -0.96 dBTP
    assert page_gain_db(None, -3.0, target_lufs=-23.0) == 0.0


# --- Pairwise ------------------------------------------------------------------------------------


def _pair_study(**study_fields):
    study = StudyFactory(overlap_target=1, overlap_share=1.0, **study_fields)
    loud, quiet = tone(0.3, noise=0.02), tone(0.04, freq=440.0, seed=1)
    reference = ingest(tone(0.1, freq=330.0), kind="reference")
    condition = ConditionFactory(reference=reference)
    clip_loud, clip_quiet = ingest(loud), ingest(quiet)
    Pair.objects.create(study=study, condition=condition, clip_a=clip_loud, clip_b=clip_quiet, clip_key=Pair.key_for(clip_loud.pk, clip_quiet.pk))
    user = StudyAnnotatorFactory(study=study).annotator
    client = APIClient()
    client.force_authenticate(user)
    body = client.post(reverse("api-assignment-next", kwargs={"name": study.name})).json()["assignment"]
    return study, body, {"loud": (clip_loud, loud), "quiet": (clip_quiet, quiet), "reference": (reference, None)}


def _by_url(body: dict, clips: dict) -> dict:
    """The page's gain of each clip, keyed by which clip it is (the page shows them in the annotator's own order)."""
    out = {}
    for entry in (body["clips"]["A"], body["clips"]["B"], body["condition"]["reference"]):
        for name, (clip, _) in clips.items():
            if clip_at(entry["url"]).pk == clip.pk:
                out[name] = entry["gain_db"]
    return out


def test_pairwise_next_carries_the_rules_gain_for_each_clip_and_the_reference():
    study, body, clips = _pair_study()
    assert study.loudness_match and study.loudness_target_lufs == -23.0
    gains = _by_url(body, clips)
    assert set(gains) == {"loud", "quiet", "reference"}
    for name, (clip, audio) in clips.items():
        assert gains[name] == page_gain_db(clip.loudness_lufs, clip.true_peak_dbtp, target_lufs=-23.0)
        if audio is not None:
            # Against pyloudnorm on the stored samples: neither clip is held by the ceiling, so both land on the target.
            assert pyloudnorm_lufs(audio) + gains[name] == pytest.approx(-23.0, abs=0.1)
    assert gains["loud"] < 0 < gains["quiet"]


def test_a_study_without_loudness_matching_gets_zero_gains():
    _, body, clips = _pair_study(loudness_match=False)
    assert set(_by_url(body, clips).values()) == {0.0}


def test_an_unmeasured_clip_plays_at_zero_and_is_counted(client):
    study = StudyFactory()
    measured = ingest(tone(0.3))
    old = ClipFactory()  # stored without a measurement, as clips from before loudness was measured
    assert old.loudness_measured_at is None and old.loudness_lufs is None
    Pair.objects.create(study=study, condition=ConditionFactory(), clip_a=measured, clip_b=old, clip_key=Pair.key_for(measured.pk, old.pk))
    assert study.clip_gain_db(old) == 0.0
    assert study.clip_gain_db(measured) != 0.0
    assert study_loudness(study=study)["unmeasured"] == 1
    researcher = UserFactory(roles=["researcher"])
    study.collaborators.add(researcher)
    client.force_login(researcher)
    page = client.get(reverse("study-manage", kwargs={"name": study.name})).content.decode()
    assert "1 clip of this study has no loudness measurement" in page and "manage.py backfill_loudness" in page
    assert "matched to -23 LUFS" in page
    # With matching off, nothing is levelled, so there is nothing to warn about.
    services.study_update(study=study, loudness_match=False)
    page = client.get(reverse("study-manage", kwargs={"name": study.name})).content.decode()
    assert "no loudness measurement" not in page and "off: clips play as stored" in page


def test_a_silent_clip_counts_as_measured_not_as_missing():
    study = StudyFactory()
    silent, loud = ingest(np.zeros(SR)), ingest(tone(0.3))
    Pair.objects.create(study=study, condition=ConditionFactory(), clip_a=silent, clip_b=loud, clip_key=Pair.key_for(silent.pk, loud.pk))
    summary = study_loudness(study=study)
    assert (summary["unmeasured"], summary["unmeasurable"]) == (0, 1)
    assert study.clip_gain_db(silent) == 0.0


# --- Rating pages ----------------------------------------------------------------------------------


def test_acr_next_carries_the_rules_gain(client):
    study = StudyFactory(overlap_target=1, min_listen_seconds=1.0, loudness_target_lufs=-26.0)
    rating_services.rating_task_set(study=study, task="acr", dimensions=["musicality"])
    audio = tone(0.3)
    clip = ingest(audio)
    reference = ingest(tone(0.2, freq=220.0), kind="reference")
    rating_services.rating_item_add(study=study, condition=ConditionFactory(reference=reference), clips=[clip])
    client.force_login(StudyAnnotatorFactory(study=study).annotator)
    body = client.post(reverse("ratings:api-next", kwargs={"name": study.name}), content_type="application/json").json()["assignment"]
    (entry,) = body["clips"]
    assert entry["gain_db"] == page_gain_db(clip.loudness_lufs, clip.true_peak_dbtp, target_lufs=-26.0)
    assert pyloudnorm_lufs(audio) + entry["gain_db"] == pytest.approx(-26.0, abs=0.1)
    assert body["condition"]["reference"]["gain_db"] == page_gain_db(reference.loudness_lufs, reference.true_peak_dbtp, target_lufs=-26.0)
    # The gain is a rounded figure, nothing finer than the audio itself says.
    assert round(entry["gain_db"], 1) == entry["gain_db"]


def test_multi_stimulus_letters_carry_the_rules_gain_in_their_samples(client):
    """A multi-stimulus page is told 0 dB for every clip (a gain per letter would single out a hidden reference);
    the rule's gain is in the bytes each letter is served as (common/audio_render.py)."""
    import io

    import soundfile as sf

    study = StudyFactory(overlap_target=1, min_listen_seconds=1.0, loudness_target_lufs=-26.0)
    rating_services.rating_task_set(study=study, task="multi", dimensions=["musicality"])
    audio = [tone(0.3), tone(0.05, freq=440.0), tone(0.15, freq=660.0)]
    clips = [ingest(a) for a in audio]
    reference = ingest(tone(0.2, freq=220.0), kind="reference")
    rating_services.rating_item_add(study=study, condition=ConditionFactory(reference=reference), clips=clips)
    user = StudyAnnotatorFactory(study=study).annotator
    client.force_login(user)
    body = client.post(reverse("ratings:api-next", kwargs={"name": study.name}), content_type="application/json").json()["assignment"]
    from annotation.ratings.models import RatingAssignment

    labels = RatingAssignment.objects.get(annotator=user).labels
    by_pk = {clip.pk: (clip, a) for clip, a in zip(clips, audio)}
    assert len(body["clips"]) == 3
    assert {e["gain_db"] for e in (*body["clips"], body["condition"]["reference"])} == {0.0}
    meter = pyloudnorm.Meter(SR)
    for entry in body["clips"]:
        clip, samples = by_pk[labels[entry["label"]]]
        gain = page_gain_db(clip.loudness_lufs, clip.true_peak_dbtp, target_lufs=-26.0)
        served, rate = sf.read(io.BytesIO(b"".join(client.get(entry["url"]).streaming_content)), dtype="float64")
        assert rate == SR
        # The stored clip's loudness plus the rule's gain, within 16-bit rounding: the gain went into the samples.
        assert meter.integrated_loudness(served) == pytest.approx(pyloudnorm_lufs(samples) + gain, abs=0.05)
        assert meter.integrated_loudness(served) == pytest.approx(-26.0, abs=0.1)


def test_rating_study_with_matching_off_gets_zero_gains(client):
    study = StudyFactory(overlap_target=1, loudness_match=False)
    rating_services.rating_task_set(study=study, task="multi", dimensions=["musicality"])
    rating_services.rating_item_add(study=study, condition=ConditionFactory(), clips=[ingest(tone(0.3)), ingest(tone(0.05, freq=440.0))])
    client.force_login(StudyAnnotatorFactory(study=study).annotator)
    body = client.post(reverse("ratings:api-next", kwargs={"name": study.name}), content_type="application/json").json()["assignment"]
    assert [e["gain_db"] for e in body["clips"]] == [0.0, 0.0]


# --- Practice page ---------------------------------------------------------------------------------


def test_practice_page_carries_the_gains_of_the_clips_as_shown(client):
    study = StudyFactory(name="practice-levels")
    loud, quiet = ingest(tone(0.3)), ingest(tone(0.04, freq=440.0))
    gold = Pair.objects.create(
        study=study, condition=ConditionFactory(), clip_a=loud, clip_b=quiet, clip_key=Pair.key_for(loud.pk, quiet.pk), kind=Pair.Kind.GOLD, expected_alignment=loud
    )
    services.practice_from_gold(pair=gold, explanation="A follows the instruction.")
    user = StudyAnnotatorFactory(study=study).annotator
    client.force_login(user)
    page = client.get(reverse("practice", kwargs={"name": study.name}))
    shown_a = page.context["shown_a"]
    first, second = (loud, quiet) if shown_a == "a" else (quiet, loud)
    html = page.content.decode()
    for side, clip in (("a", first), ("b", second)):
        assert f'data-gain-{side}="{page_gain_db(clip.loudness_lufs, clip.true_peak_dbtp, target_lufs=-23.0):.1f}"' in html


# --- The option ------------------------------------------------------------------------------------


def test_new_studies_match_loudness_and_the_form_shows_it(client):
    assert services.study_create(name="fresh").loudness_match is True
    researcher = UserFactory(roles=["researcher"])
    client.force_login(researcher)
    form = client.get(reverse("study-create")).content.decode()
    assert 'name="loudness_match"' in form and "checked" in form.split('name="loudness_match"')[1].split(">")[0]
    assert 'name="loudness_target_lufs"' in form and 'value="-23.0"' in form


def test_changing_the_setting_is_stamped_and_a_bad_target_changes_nothing():
    study = services.study_create(name="levels")
    assert study.loudness_changed_at is None
    services.study_update(study=study, title="same levels")
    assert Study.objects.get(pk=study.pk).loudness_changed_at is None
    # Before anyone answered, a change mixes nothing: no stamp.
    services.study_update(study=study, loudness_target_lufs=-20.0)
    assert Study.objects.get(pk=study.pk).loudness_changed_at is None
    clip_a, clip_b = ingest(tone(0.3)), ingest(tone(0.05))
    pair = Pair.objects.create(study=study, condition=ConditionFactory(), clip_a=clip_a, clip_b=clip_b, clip_key=Pair.key_for(clip_a.pk, clip_b.pk))
    JudgmentFactory(pair=pair, annotator=AnnotatorFactory(), a_clip=clip_a, alignment_choice=clip_a, musicality_choice=clip_b)
    services.study_update(study=study, loudness_target_lufs=-18.0)
    changed = Study.objects.get(pk=study.pk)
    assert changed.loudness_target_lufs == -18.0 and changed.loudness_changed_at is not None
    with pytest.raises(ServiceError, match="loudness_target_lufs"):
        services.study_update(study=study, loudness_target_lufs=5.0)
    assert Study.objects.get(pk=study.pk).loudness_target_lufs == -18.0


@pytest.mark.engine
def test_migration_keeps_existing_studies_unmatched(transactional_db):
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    before = [("annotation", "0019_clip_loudness")]
    after = [("annotation", "0020_study_loudness_match")]
    executor.migrate(before)
    old = executor.loader.project_state(before).apps
    old.get_model("annotation", "Study").objects.create(name="older-study")
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(after)
    new = executor.loader.project_state(after).apps
    assert new.get_model("annotation", "Study").objects.get(name="older-study").loudness_match is False
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())
    assert Study.objects.get(name="older-study").loudness_match is False
    assert Study.objects.create(name="newer-study").loudness_match is True
