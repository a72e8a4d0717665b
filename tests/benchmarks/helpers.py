"""A study with a known truth, and prediction files of known accuracy on it."""

from __future__ import annotations

import json
from decimal import Decimal

import numpy as np

from annotation.models import Condition, Judgment, Pair, Study, modality_for
from annotation.services import condition_content_key
from scoring.benchmarks.models import Benchmark
from tests.factories import AnnotatorFactory, ClipFactory, StudyFactory


def known_study(*, n_pairs: int = 40, votes: int = 3, seed: int = 7, name: str = "known", split: str = Pair.Split.TEST, study: Study | None = None, clips: list | None = None) -> tuple[Study, dict]:
    """Pairs of one split (test unless told) whose majority per dimension is drawn from a seeded coin; added to
    `study` when given, on `clips` (four) when given.

    Each pair gets `votes` votes: all but one agree with the truth, so every pair has a strict
    majority equal to the truth. Returns the study and {pair_id: {"alignment": "a"|"b", ...}}.
    Four clips are shared by all pairs (distinct conditions keep the pairs distinct).
    """
    rng = np.random.default_rng(seed)
    study = study or StudyFactory(name=name)
    clips = clips or [ClipFactory() for _ in range(4)]
    reference = ClipFactory()
    annotators = [AnnotatorFactory() for _ in range(votes)]
    truth = {}
    for n in range(n_pairs):
        lyrics = "la la" if n % 2 else ""
        ref = reference if n % 4 >= 2 else None
        prompt = f"known prompt {study.name} {split} {n}"
        condition = Condition.objects.create(
            prompt=prompt,
            lyrics=lyrics,
            reference=ref,
            content_key=condition_content_key(prompt=prompt, lyrics=lyrics, reference=ref),
            modality=modality_for(has_lyrics=bool(lyrics), has_reference=ref is not None),
        )
        a, b = clips[n % 4], clips[(n + 1) % 4]
        pair = Pair.objects.create(study=study, condition=condition, clip_a=a, clip_b=b, clip_key=Pair.key_for(a.id, b.id), split=split, overlap=votes)
        sides = {dim: ("a" if rng.random() < 0.5 else "b") for dim in ("alignment", "musicality")}
        truth[pair.pk] = sides
        for v, annotator in enumerate(annotators):
            choice = {}
            for dim, side in sides.items():
                # The last annotator disagrees on odd pairs: votes are not unanimous, the majority still is the truth.
                flip = v == votes - 1 and n % 2 == 1 and votes > 2
                chosen = (a if side == "a" else b) if not flip else (b if side == "a" else a)
                choice[dim] = chosen
            Judgment.objects.create(
                annotator=annotator,
                pair=pair,
                a_clip=a,
                alignment_choice=choice["alignment"],
                musicality_choice=choice["musicality"],
                alignment_confidence=Decimal("4.0") if n % 3 else Decimal("2.0"),
                musicality_confidence=Decimal("3.0"),
            )
    return study, truth


def item_truth(benchmark: Benchmark) -> dict:
    """{item_id: {"alignment": "A"|"B", "musicality": ...}} from the server-side labels."""
    letters = {0: "A", 1: "B"}
    return {i.item_id: {d: letters[i.labels[d]["truth"]] for d in ("alignment", "musicality")} for i in benchmark.items.all()}


def predictions_with_accuracy(truth: dict, *, correct: dict, seed: int = 0) -> tuple[list[dict], dict]:
    """MIREX-layout rows right on exactly correct[dim] items per dimension (a seeded choice of which)."""
    rng = np.random.default_rng(seed)
    ids = sorted(truth)
    rows = {i: {"id": i} for i in ids}
    for dim, k in correct.items():
        right = set(rng.choice(len(ids), size=k, replace=False).tolist())
        for n, i in enumerate(ids):
            t = truth[i][dim]
            rows[i][f"preferred_{dim}"] = t if n in right else ("B" if t == "A" else "A")
    return [rows[i] for i in ids], {dim: k / len(ids) for dim, k in correct.items()}


def jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode()


def rated_study(*, n_clips: int = 40, raters: int = 3, seed: int = 7, name: str = "rated", noise: float = 0.6) -> tuple[Study, dict]:
    """An acr rating study asking both dimensions: `n_clips` items of one clip each (every other condition with lyrics),
    each rated by the same `raters` annotators around a seeded true quality. Returns the study and {clip_id: {dim: MOS}}."""
    from annotation.ratings import services as rating_services
    from annotation.ratings.models import Rating, RatingItem, RatingSubmission
    from tests.factories import ConditionFactory

    rng = np.random.default_rng(seed)
    study = StudyFactory(name=name)
    rating_services.rating_task_set(study=study, task="acr", dimensions=["musicality", "alignment"])
    annotators = [AnnotatorFactory() for _ in range(raters)]
    mos = {}
    for n in range(n_clips):
        clip = ClipFactory()
        condition = ConditionFactory(lyrics="la la" if n % 2 else "")
        item = rating_services.rating_item_add(study=study, condition=condition, clips=[clip], overlap=raters)
        quality = {dim: rng.uniform(1.0, 5.0) for dim in ("musicality", "alignment")}
        given = {dim: [] for dim in quality}
        for annotator in annotators:
            submission = RatingSubmission.objects.create(annotator=annotator, item=item)
            for dim, q in quality.items():
                value = float(np.clip(np.rint(q + rng.normal(0, noise)), 1, 5))
                given[dim].append(value)
                Rating.objects.create(submission=submission, clip=clip, dimension=dim, value=value)
        RatingItem.objects.filter(pk=item.pk).update(n_ratings=raters)
        mos[clip.pk] = {dim: float(np.mean(values)) for dim, values in given.items()}
    return study, mos
