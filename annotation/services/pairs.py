"""Conditions (what was asked) and pairs (two clips compared under one condition, in one study)."""

from __future__ import annotations

import hashlib

from django.db import IntegrityError, transaction

from common.errors import ServiceError

from ..models import Clip, Condition, Pair, Study, modality_for


def condition_content_key(*, prompt: str, lyrics: str, reference: Clip | None) -> str:
    raw = "\x1f".join((prompt.strip(), lyrics.strip(), reference.sha256 if reference else ""))
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def condition_get_or_create(*, prompt: str = "", lyrics: str = "", reference: Clip | None = None, external_id: str = "") -> tuple[Condition, bool]:
    prompt, lyrics = (prompt or "").strip(), (lyrics or "").strip()
    if not (prompt or lyrics or reference):
        raise ServiceError("A condition needs at least one of: text prompt, lyrics, reference audio.", code="empty_condition")
    key = condition_content_key(prompt=prompt, lyrics=lyrics, reference=reference)
    defaults = {
        "prompt": prompt,
        "lyrics": lyrics,
        "reference": reference,
        "external_id": external_id,
        "modality": modality_for(has_lyrics=bool(lyrics), has_reference=reference is not None),
    }
    try:
        with transaction.atomic():
            return Condition.objects.get_or_create(content_key=key, defaults=defaults)
    except IntegrityError:
        return Condition.objects.get(content_key=key), False


def pair_overlap_for(*, study: Study, clip_key: str, condition_id: int) -> int:
    """Deterministic per pair: the study's overlap share of pairs get the overlap target, the rest one vote."""
    if study.overlap_target <= 1 or study.overlap_share <= 0:
        return 1
    digest = hashlib.sha256(f"{study.pk}:{condition_id}:{clip_key}".encode()).digest()
    fraction = int.from_bytes(digest[:8], "big") / 2**64
    return study.overlap_target if fraction < study.overlap_share else 1


def pair_get_or_create(
    *,
    study: Study,
    condition: Condition,
    clip_a: Clip,
    clip_b: Clip,
    split: str = Pair.Split.TRAIN,
    kind: str = Pair.Kind.REGULAR,
    expected_alignment: Clip | None = None,
    expected_musicality: Clip | None = None,
    overlap: int | None = None,
    dataset_source: str = "",
    catch_spec: dict | None = None,
) -> tuple[Pair, bool]:
    """One pair per (study, condition, {clip_a, clip_b}); (B, A) finds the stored (A, B)."""
    if clip_a.pk == clip_b.pk:
        raise ServiceError("A pair needs two distinct clips (A and B are the same audio).", code="identical_clips")
    if split not in Pair.Split.values:
        raise ServiceError(f"Unknown split {split!r}; use train or test.", code="bad_split")
    key = Pair.key_for(clip_a.pk, clip_b.pk)
    existing = Pair.objects.filter(study=study, condition=condition, clip_key=key).first()
    if existing is not None:
        return existing, False
    pair = Pair(
        study=study,
        condition=condition,
        clip_a=clip_a,
        clip_b=clip_b,
        clip_key=key,
        split=split,
        kind=kind,
        expected_alignment=expected_alignment,
        expected_musicality=expected_musicality,
        dataset_source=dataset_source,
        catch_spec=catch_spec or {},
        overlap=overlap or pair_overlap_for(study=study, clip_key=key, condition_id=condition.pk),
    )
    pair.full_clean(exclude=["study", "condition", "clip_a", "clip_b"], validate_unique=False, validate_constraints=False)
    try:
        with transaction.atomic():
            pair.save()
    except IntegrityError:
        return Pair.objects.get(study=study, condition=condition, clip_key=key), False
    return pair, True

