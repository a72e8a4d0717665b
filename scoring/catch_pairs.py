"""Catch pairs from hard negatives: a degraded copy of a clip (scoring/hardneg.py) or an answer to a prompt changed
in one attribute (scoring/semantic.py), each stored with what makes its wrong answer wrong (Pair.catch_spec)."""

from __future__ import annotations

import numpy as np
from django.db import transaction
from django.db.models import Q

from annotation.models import Clip, Condition, Pair, Study
from annotation.services import clip_ingest_array, pair_get_or_create
from common.errors import ServiceError

from .hardneg import DegradationError, degrade, spec_clean


def hard_negative_create(
    *, clip: Clip, degradation: dict, study: Study | None = None, condition: Condition | None = None, catch: bool = True
) -> tuple[Clip, Pair | None]:
    """A degraded variant of a clip (Clip.kind=derived), and with a study a catch pair whose expected answer is the original."""
    import soundfile as sf

    try:
        spec = spec_clean(degradation, duration=clip.duration)
    except DegradationError as exc:
        raise ServiceError(str(exc), code="bad_degradation") from None
    other = None
    if spec["kind"] == "mix":
        other_clip = Clip.objects.filter(pk=spec["other_clip"]).first()
        if other_clip is None:
            raise ServiceError(f"mix: no clip with id {spec['other_clip']}.", code="bad_degradation")
        if other_clip.pk == clip.pk:
            raise ServiceError("mix: choose a different clip to mix in.", code="bad_degradation")
        other, other_sr = sf.read(other_clip.file.path, dtype="float32", always_2d=True)
        if other_sr != clip.sample_rate:
            from scipy.signal import resample_poly

            g = np.gcd(other_sr, clip.sample_rate)
            other = resample_poly(other, clip.sample_rate // g, other_sr // g, axis=0)
    wave, sr = sf.read(clip.file.path, dtype="float32", always_2d=True)
    try:
        degraded = degrade(wave, sr, spec, other=other)
    except DegradationError as exc:
        raise ServiceError(str(exc), code="bad_degradation") from None
    if study is not None and condition is None:
        pair = Pair.objects.filter(study=study).filter(Q(clip_a=clip) | Q(clip_b=clip)).select_related("condition").first()
        if pair is None:
            raise ServiceError(f"Clip {clip.pk} is in no pair of {study.name}; give the condition for the catch pair.", code="no_condition")
        condition = pair.condition
    with transaction.atomic():
        derived, _ = clip_ingest_array(
            audio=degraded,
            sample_rate=sr,
            system=clip.system,
            kind=Clip.Kind.DERIVED,
            fmt="WAV",
            derived_from=clip,
            degradation=spec,
            original_name=f"derived/{clip.sha256[:12]}-{spec['kind']}",
        )
        pair = None
        if study is not None and catch:
            pair, _ = pair_get_or_create(
                study=study,
                condition=condition,
                clip_a=clip,
                clip_b=derived,
                kind=Pair.Kind.CATCH,
                expected_alignment=clip,
                expected_musicality=clip,
                overlap=1,
                catch_spec=spec,
            )
    return derived, pair


def semantic_negative_create(
    *,
    study: Study,
    condition: Condition,
    clip: Clip,
    attribute: str,
    mode: str = "swap",
    seed: int = 0,
    arena_system=None,
) -> tuple[Clip, Pair]:
    """A catch pair at `condition`: `clip` against an answer to a condition that differs in one attribute.

    mode "swap" takes a clip of another condition of the study (scoring/semantic.py ranks them);
    "generate" rewrites the prompt and has `arena_system` (default: the clip's own system in the
    arena) generate the variant, stored as a derived clip. Only alignment is checked.
    """
    from . import semantic

    if mode not in ("swap", "generate"):
        raise ServiceError(f"mode must be swap or generate (got {mode!r}).", code="bad_semantic")
    if not Pair.objects.filter(study=study, condition=condition).filter(Q(clip_a=clip) | Q(clip_b=clip)).exists():
        raise ServiceError(f"Clip {clip.pk} answers no pair of {study.name} at condition {condition.pk}.", code="no_condition")
    try:
        if mode == "swap":
            variant, change = _semantic_swap(study=study, condition=condition, clip=clip, attribute=attribute, seed=seed)
        else:
            variant, change = _semantic_generate(study=study, condition=condition, clip=clip, attribute=attribute, seed=seed, arena_system=arena_system)
    except semantic.SemanticError as exc:
        raise ServiceError(f"{attribute}: {exc}.", code="bad_semantic") from None
    spec = {"kind": "semantic", "mode": mode, **change}
    pair, _ = pair_get_or_create(
        study=study, condition=condition, clip_a=clip, clip_b=variant, kind=Pair.Kind.CATCH, expected_alignment=clip, overlap=1, catch_spec=spec
    )
    return variant, pair


def _semantic_swap(*, study: Study, condition: Condition, clip: Clip, attribute: str, seed: int) -> tuple[Clip, dict]:
    from . import semantic

    others = list(Condition.objects.filter(pairs__study=study).exclude(pk=condition.pk).distinct().order_by("pk"))
    for other in semantic.swap_candidates(attribute=attribute, condition=condition, others=others):
        answers = Clip.objects.filter(Q(pairs_as_a__condition=other, pairs_as_a__study=study) | Q(pairs_as_b__condition=other, pairs_as_b__study=study))
        answers = answers.exclude(pk=clip.pk).exclude(kind=Clip.Kind.DERIVED).distinct().order_by("pk")
        # The same system's answer, where there is one: the pair then differs in what was asked, not in who made it.
        same = [c for c in answers if c.system_id == clip.system_id and clip.system_id is not None]
        pool = same or list(answers)
        if not pool:
            continue
        variant = pool[seed % len(pool)]
        change = {"attribute": attribute, "source_condition": other.pk}
        if attribute in semantic.TEXT_ATTRIBUTES:
            change["from"] = semantic.value_name(attribute, semantic.prompt_attributes(condition.prompt)[attribute])
            change["to"] = semantic.value_name(attribute, semantic.prompt_attributes(other.prompt)[attribute])
        return variant, change
    raise semantic.SemanticError(f"no other condition of {study.name} differs in it and has an answer to swap in")


def _semantic_generate(*, study: Study, condition: Condition, clip: Clip, attribute: str, seed: int, arena_system) -> tuple[Clip, dict]:
    from arena.adapters import GenerationError, GenerationRequest
    from arena.adapters import adapter_for as arena_adapter_for
    from arena.models import ArenaSystem

    from . import semantic

    if attribute == "reference":
        raise semantic.SemanticError("a reference cannot be generated from a rewritten prompt; use --mode swap")
    if arena_system is None:
        arena_system = ArenaSystem.objects.filter(system_id=clip.system_id).select_related("system").first() if clip.system_id else None
        if arena_system is None:
            raise semantic.SemanticError("the clip's system is not in the arena, so nothing can generate the variant: name an arena system")
    others = list(Condition.objects.filter(pairs__study=study).exclude(pk=condition.pk).exclude(lyrics="").distinct().values_list("lyrics", flat=True))
    rewritten = semantic.rewrite(prompt=condition.prompt, lyrics=condition.lyrics, attribute=attribute, seed=seed, other_lyrics=others)
    request = GenerationRequest(
        prompt=rewritten.prompt,
        lyrics=rewritten.lyrics,
        instrumental=not rewritten.lyrics.strip(),
        seconds=min(float(clip.duration), float(arena_system.max_duration_seconds)),
        seed=seed,
        sample_rate=clip.sample_rate,
    )
    try:
        generated = arena_adapter_for(arena_system).generate(request)
    except GenerationError as exc:
        raise ServiceError(f"{arena_system.system.name} could not generate the variant: {exc}", code="generation_failed") from None
    change = {**rewritten.change, "prompt": rewritten.prompt, "system": arena_system.system.name}
    if rewritten.lyrics != condition.lyrics:
        change["lyrics"] = rewritten.lyrics
    if generated.clip_id is not None:
        variant = Clip.objects.get(pk=generated.clip_id)
    else:
        variant, _ = clip_ingest_array(
            audio=generated.audio,
            sample_rate=generated.sample_rate,
            system=arena_system.system,
            kind=Clip.Kind.DERIVED,
            fmt="WAV",
            derived_from=clip,
            degradation=change | {"kind": "semantic"},
            original_name=f"derived/{clip.sha256[:12]}-semantic-{attribute}",
        )
    if variant.pk == clip.pk:
        raise semantic.SemanticError("the system gave the same audio for the rewritten prompt")
    return variant, change
