"""factory_boy factories shared by the test suite."""

from __future__ import annotations

import hashlib
import io
from decimal import Decimal

import factory
import numpy as np
import soundfile as sf
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.files.base import ContentFile
from django.utils import timezone

from annotation.models import (
    AnnotatorProfile,
    Assignment,
    Clip,
    Condition,
    Judgment,
    Pair,
    Study,
    StudyAnnotator,
    System,
    modality_for,
)
from annotation.services import condition_content_key


def wav_bytes(*, seconds: float = 1.0, freq: float = 440.0, sr: int = 16000) -> bytes:
    t = np.arange(int(seconds * sr)) / sr
    buf = io.BytesIO()
    sf.write(buf, (0.3 * np.sin(2 * np.pi * freq * t)).astype(np.float32), sr, format="WAV")
    return buf.getvalue()


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    password = factory.django.Password("pw")

    @factory.post_generation
    def roles(self, create, extracted, **kwargs):
        if create and extracted:
            for name in extracted:
                self.groups.add(Group.objects.get_or_create(name=name)[0])


class AnnotatorFactory(UserFactory):
    @factory.post_generation
    def roles(self, create, extracted, **kwargs):
        if create:
            for name in extracted or ["annotator"]:
                self.groups.add(Group.objects.get_or_create(name=name)[0])

    @factory.post_generation
    def profile(self, create, extracted, **kwargs):
        if create:
            AnnotatorProfile.objects.get_or_create(user=self, defaults={"pseudonym": f"p-{self.username}", "consented_at": timezone.now(), "consent_version": "1"})


class SystemFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = System
        django_get_or_create = ("name",)

    name = factory.Sequence(lambda n: f"system-{n}")


class ClipFactory(factory.django.DjangoModelFactory):
    """A real WAV file; each factory call gets a distinct tone, so a distinct hash."""

    class Meta:
        model = Clip

    # Not a model field: popped in _create to make each clip's content distinct.
    freq = factory.Sequence(lambda n: 220.0 + 7.0 * n)
    system = factory.SubFactory(SystemFactory)
    duration = 1.0
    sample_rate = 16000
    channels = 1
    extension = ".wav"

    @classmethod
    def _create(cls, model_class, *args, **kwargs):
        data = wav_bytes(seconds=kwargs["duration"], freq=kwargs.pop("freq"), sr=kwargs["sample_rate"])
        sha = hashlib.sha256(data).hexdigest()
        clip = model_class(sha256=sha, **kwargs)
        clip.file.save(f"{sha}.wav", ContentFile(data), save=False)
        clip.save()
        return clip


class ConditionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Condition

    prompt = factory.Sequence(lambda n: f"upbeat pop song number {n} with piano")
    lyrics = ""
    reference = None
    content_key = factory.LazyAttribute(lambda o: condition_content_key(prompt=o.prompt, lyrics=o.lyrics, reference=o.reference))
    modality = factory.LazyAttribute(lambda o: modality_for(has_lyrics=bool(o.lyrics), has_reference=o.reference is not None))


class StudyFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Study
        django_get_or_create = ("name",)

    name = factory.Sequence(lambda n: f"study-{n}")
    overlap_target = 2
    overlap_share = 1.0
    min_listen_seconds = 2.0
    lock_ttl_seconds = 600


class PairFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Pair

    study = factory.SubFactory(StudyFactory)
    condition = factory.SubFactory(ConditionFactory)
    clip_a = factory.SubFactory(ClipFactory)
    clip_b = factory.SubFactory(ClipFactory)
    clip_key = factory.LazyAttribute(lambda o: Pair.key_for(o.clip_a.id, o.clip_b.id))
    overlap = 1


class StudyAnnotatorFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = StudyAnnotator

    study = factory.SubFactory(StudyFactory)
    annotator = factory.SubFactory(AnnotatorFactory)
    seed = factory.Sequence(lambda n: 1000 + n)


class AssignmentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Assignment

    annotator = factory.SubFactory(AnnotatorFactory)
    pair = factory.SubFactory(PairFactory)
    a_clip = factory.LazyAttribute(lambda o: o.pair.clip_a)
    served_at = factory.LazyFunction(timezone.now)
    lock_expires_at = factory.LazyFunction(lambda: timezone.now() + timezone.timedelta(minutes=30))


class JudgmentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Judgment

    annotator = factory.SubFactory(AnnotatorFactory)
    pair = factory.SubFactory(PairFactory)
    a_clip = factory.LazyAttribute(lambda o: o.pair.clip_a)
    alignment_choice = factory.LazyAttribute(lambda o: o.pair.clip_a)
    alignment_confidence = Decimal("3.0")
    musicality_choice = factory.LazyAttribute(lambda o: o.pair.clip_a)
    musicality_confidence = Decimal("3.0")
    listening_log = factory.LazyFunction(lambda: {"A": {"plays": 1, "seconds": 5.0, "seeks": 0, "loops": 0}, "B": {"plays": 1, "seconds": 5.0, "seeks": 0, "loops": 0}, "switches": 1})
