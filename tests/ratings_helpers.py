"""Rating studies for tests: a configured study with items, and listening as the server records it."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from annotation.ratings import services
from annotation.ratings.models import RatingAssignment
from annotation.ratings.selectors import served_name
from annotation.services import audio_fetch_record
from tests.factories import ClipFactory, ConditionFactory, StudyAnnotatorFactory, StudyFactory


def rating_study(*, task: str = "acr", items: int = 3, clips_per_item: int = 3, dimensions=("musicality", "alignment"), reference=False, anchor=False, **study_fields):
    """A rating study with `items` regular items (acr: one clip each; multi: `clips_per_item` plus reference/anchor)."""
    fields = {"overlap_target": 2, "min_listen_seconds": 1.0, "lock_ttl_seconds": 600, **study_fields}
    study = StudyFactory(**fields)
    services.rating_task_set(study=study, task=task, dimensions=list(dimensions))
    for _ in range(items):
        condition = ConditionFactory()
        if task == "acr":
            services.rating_item_add(study=study, condition=condition, clips=[ClipFactory()])
        else:
            services.rating_item_add(
                study=study, condition=condition, clips=[ClipFactory() for _ in range(clips_per_item)],
                reference=ClipFactory() if reference else None, anchor=ClipFactory() if anchor else None,
            )
    return study


def member(study):
    return StudyAnnotatorFactory(study=study).annotator


def listen_all(assignment: RatingAssignment, *, seconds: float = 1.0, start=None, skip: tuple[str, ...] = ()) -> dict:
    """Fetch every clip whole, then play each label for `seconds` (ticking each second), switching between them."""
    start = start or timezone.now() - timedelta(seconds=len(assignment.order) * (seconds + 2) + 10)
    labels = [label for label in assignment.labels if label not in skip]
    from annotation.models import Clip

    clips = Clip.objects.in_bulk([assignment.labels[label] for label in labels])
    for label in labels:
        # Under the letter's own name, as the letter's URL records it: credit is per URL (selectors.served_name).
        clip = clips[assignment.labels[label]]
        size = clip.file.size
        served_as = served_name(assignment_id=assignment.pk, label=label)
        audio_fetch_record(user=assignment.annotator, clip=clip, served=(0, size - 1, size), now=start, served_as=served_as)
        services.rating_listening_record(assignment_id=assignment.pk, annotator=assignment.annotator, events=[], receipts=[receipt(assignment, label, at=start)], now=start)
    events, t = [], 1.0
    for n, label in enumerate(labels):
        events.append((t, "play" if n == 0 else "switch", label))
        for k in range(1, int(seconds) + 1):
            events.append((t + k, "tick", label))
        t += seconds
    if labels:
        events.append((t + 0.01, "pause", labels[-1]))
    seq = RatingAssignment.objects.get(pk=assignment.pk).listening_seq
    result = {}
    for offset, kind, side in events:
        seq += 1
        result = services.rating_listening_record(
            assignment_id=assignment.pk, annotator=assignment.annotator, events=[{"seq": seq, "side": side, "kind": kind}], now=start + timedelta(seconds=offset)
        )
    return result


def receipt(assignment: RatingAssignment, label: str, *, at, first: int = 0, last: int | None = None) -> dict:
    """What a client holding the bytes of one response of `label`'s audio answers to its Audio-Proof header."""
    from annotation.models import Clip
    from annotation.ratings.selectors import audio_url
    from common import audio_proof

    clip = Clip.objects.get(pk=assignment.labels[label])
    last = clip.file.size - 1 if last is None else last
    token = audio_proof.challenge_token(path=audio_url(assignment, label), first=first, last=last, issued=at, ranges=audio_proof.challenge_ranges(first, last), source=clip.file.path)
    with open(clip.file.path, "rb") as handle:
        data = handle.read()
    return {"side": label, "token": token, "bytes": audio_proof.answer_for(data, token)}


def answer_for(assignment: RatingAssignment, value=3) -> dict:
    dims = assignment.item.study.rating_task.dimensions
    return {label: dict.fromkeys(dims, value) for label in assignment.labels}
