"""A synthetic study whose preferences follow audio properties the signal judge can measure.

Each condition asks for a "bright" or a "dark" piece; its clips are tones of random pitch with
random white noise. The hidden truth:

- musicality: the clip with less noise is better;
- alignment: under a "bright" prompt the higher tone follows the prompt, under "dark" the lower.

Every simulated annotator sides with the truth with probability AGREEMENT (0.8), independently
per vote and dimension, so a model that learned the truth perfectly scores about 0.8 against
single votes. Votes are written straight into the database as imported votes would be.
"""

from __future__ import annotations

import itertools
from decimal import Decimal

import numpy as np
from django.utils import timezone

from annotation.models import AnnotatorProfile, Clip, Judgment, Pair, System
from annotation.services import clip_ingest_array, condition_get_or_create, pair_get_or_create
from tests.factories import AnnotatorFactory, StudyFactory

AGREEMENT = 0.8
SR = 16000
WORDS = {"bright": ("bright", "shimmering", "airy"), "dark": ("dark", "murky", "deep")}


def _clip(rng: np.random.Generator) -> tuple[Clip, float, float]:
    freq = float(rng.uniform(150.0, 3000.0))
    noise = float(rng.uniform(0.001, 0.08))
    t = np.arange(SR) / SR
    wave = 0.3 * np.sin(2 * np.pi * freq * t) + noise * rng.standard_normal(SR)
    clip, _ = clip_ingest_array(audio=wave.astype(np.float32), sample_rate=SR, fmt="WAV")
    return clip, freq, noise


def build_study(*, name: str = "reward-synth", conditions: int = 36, clips_per_condition: int = 4, annotators: int = 3, seed: int = 7, systems: int = 0):
    """(study, truth) where truth[pair_id] = {"alignment": winner clip id, "musicality": winner clip id}.

    With `systems`, clip k of condition c comes from system (c + k) mod systems, so with more
    systems than clips per condition each system answers only some of the prompts.
    """
    rng = np.random.default_rng(seed)
    makers = [System.objects.get_or_create(name=f"{name}-system-{k}")[0] for k in range(systems)]
    study = StudyFactory(name=name, overlap_target=annotators)
    people = [AnnotatorFactory(username=f"{name}-annotator-{k}") for k in range(annotators)]
    truth: dict[int, dict] = {}
    judgments = []
    for c in range(conditions):
        mood = "bright" if c % 2 == 0 else "dark"
        prompt = f"a {WORDS[mood][c % 3]} {mood} instrumental, take {c}"
        condition, _ = condition_get_or_create(prompt=prompt)
        clips = [_clip(rng) for _ in range(clips_per_condition)]
        if makers:
            for k, (clip, _, _) in enumerate(clips):
                clip.system = makers[(c + k) % len(makers)]
                clip.save(update_fields=["system"])
        for (a, fa, na), (b, fb, nb) in itertools.combinations(clips, 2):
            pair, _ = pair_get_or_create(study=study, condition=condition, clip_a=a, clip_b=b, overlap=annotators)
            align = a if (fa > fb) == (mood == "bright") else b
            music = a if na < nb else b
            truth[pair.pk] = {"alignment": align.pk, "musicality": music.pk}
            for person in people:
                pick_align = align if rng.random() < AGREEMENT else (b if align == a else a)
                pick_music = music if rng.random() < AGREEMENT else (b if music == a else a)
                judgments.append(
                    Judgment(
                        annotator=person, pair=pair, a_clip=a, alignment_choice=pick_align, musicality_choice=pick_music,
                        alignment_confidence=Decimal("3.0"), musicality_confidence=Decimal(str(rng.integers(2, 6))), source=Judgment.Source.IMPORT,
                    )
                )  # fmt: skip
    Judgment.objects.bulk_create(judgments)
    return study, truth


def add_contrarian(study, *, username: str = "contrarian") -> AnnotatorProfile:
    """An annotator who votes against the truth on every pair: a model trained on them gets worse."""
    person = AnnotatorFactory(username=username)
    rows = []
    for pair in Pair.objects.filter(study=study).select_related("clip_a", "clip_b"):
        rows.append(Judgment(annotator=person, pair=pair, a_clip=pair.clip_a, alignment_choice=pair.clip_b, musicality_choice=pair.clip_b,
                             alignment_confidence=Decimal("5.0"), musicality_confidence=Decimal("5.0"), source=Judgment.Source.IMPORT))  # fmt: skip
    Judgment.objects.bulk_create(rows)
    profile = person.annotator_profile
    profile.consented_at = timezone.now()
    return profile
