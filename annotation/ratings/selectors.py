"""Reads for rating studies: what the rating page may know, who may hear a clip, progress."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from django.db.models import F, Q
from django.urls import Resolver404, resolve, reverse

from annotation.models import Clip, Study
from common.audio_render import Shape, shape_of
from common.blind import letter_of, letter_token

from .models import ACR_LABELS, MULTI_BANDS, RatingAssignment, RatingItemClip, RatingTask, TaskType

# What each dimension asks, in the page's words; keys match the submit's ratings.
QUESTIONS = {
    "musicality": {
        "title": "How good is this as music?",
        "hint": "Forget the instruction: melody, structure, steady rhythm, clean production without artifacts, natural vocals.",
    },
    "alignment": {
        "title": "How well does it follow the instruction?",
        "hint": "Instruments, mood, genre and era, rhythm and tempo; the lyrics and the reference when given. Judge the fit, not the sound quality.",
    },
}


def rating_task_of(study: Study) -> RatingTask | None:
    return RatingTask.objects.filter(study=study).first()


def study_task_type(study: Study) -> str:
    """pairwise, acr or multi: what the study's annotators are asked to do."""
    task = rating_task_of(study)
    return task.task if task is not None else TaskType.PAIRWISE


AUDIO_SALT = "ratings.audio"
REFERENCE = "ref"


def served_name(*, assignment_id: int, label: str) -> str:
    """What a letter's (or the open reference's) fetches are recorded under (AudioFetch.served_as): credit is per
    letter URL, so the open reference's URL, or the clip's own, credits no letter even when the clip is the same."""
    return f"rating:{assignment_id}:{label}"


def page_clips(assignment: RatingAssignment) -> dict[str, Clip]:
    """Every clip the assignment's page plays, by letter, and the open reference under REFERENCE when there is one."""
    condition = assignment.item.condition
    ids = [*assignment.order, *([condition.reference_id] if condition.reference_id else [])]
    found = Clip.objects.in_bulk(ids)
    clips = {label: found[clip_id] for label, clip_id in assignment.labels.items() if clip_id in found}
    if condition.reference_id in found:
        clips[REFERENCE] = found[condition.reference_id]
    return clips


def page_shape(assignment: RatingAssignment, clips: dict[str, Clip]) -> Shape | None:
    """The one shape every clip of a page is served in (common.audio_render), letters and open reference alike, so that
    no size, length or gain tells a hidden reference from the other letters: every multi-stimulus page, and the acr
    pages of a study that rates an open reference as an item (ACR-HR). Otherwise None: an acr page's clip is served
    as stored (no padding where there is nothing to hide)."""
    if not clips:
        return None
    task = assignment.item.study.rating_task.task
    if task == TaskType.MULTI or (task == TaskType.ACR and REFERENCE in clips and _rates_a_reference(assignment.item.study_id)):
        return shape_of(clips.values())
    return None


def _rates_a_reference(study_id: int) -> bool:
    """Whether any item of the study rates its condition's open reference: then every acr page of it is rendered in one
    shape, a study-wide choice that tells nothing about any one page."""
    return RatingItemClip.objects.filter(item__study_id=study_id, clip_id=F("item__condition__reference_id")).exists()


@dataclass(frozen=True)
class PageAudio:
    """What one audio URL of a rating page serves: the clip, the name its fetches are recorded under, and, on a
    multi-stimulus page, the shape and gain its copy is rendered in."""

    clip: Clip
    served_as: str = ""
    shape: Shape | None = None
    gain_db: float = 0.0


def _audio(assignment: RatingAssignment, label: str, clip: Clip | None, *, study: Study, shape: Shape | None) -> dict | None:
    """A clip as the page gets it: a URL naming only the assignment and the letter (common.blind), so a hidden
    reference and its open twin, or one clip in two items, share nothing a script could compare but their audio.
    On a multi-stimulus page every clip has the page's one duration and plays at 0 dB, its loudness gain being in its
    samples (page_shape); elsewhere, its own duration and the gain it plays at (Study.clip_gain_db)."""
    if clip is None:
        return None
    url = audio_url(assignment, label)
    if shape is not None:
        return {"url": url, "duration": round(shape.duration, 3), "gain_db": 0.0}
    return {"url": url, "duration": round(clip.duration, 3), "gain_db": study.clip_gain_db(clip)}


def audio_url(assignment: RatingAssignment, label: str) -> str:
    """The URL the page plays a letter (or the open reference) of this assignment from; a receipt for it names it."""
    return reverse("ratings:audio", kwargs={"token": letter_token(salt=AUDIO_SALT, assignment_id=assignment.pk, label=label)})


def audio_letter(path: str) -> tuple[int, str] | None:
    """(assignment id, label) of a rating audio URL (audio_url's), or None for any other path."""
    try:
        match = resolve(path)
    except Resolver404:
        return None
    if match.view_name != "ratings:audio":
        return None
    return letter_of(salt=AUDIO_SALT, token=match.kwargs["token"])


def audio_of_token(token: str) -> PageAudio | None:
    """What an audio URL names: a letter of an assignment (or its open reference), or a clip's public id. Who may
    hear it is the clip rule's (annotation.access.clip_audible_by), asked by the view."""
    letter = letter_of(salt=AUDIO_SALT, token=token)
    if letter is None:
        try:
            clip = Clip.objects.filter(public_id=uuid.UUID(token)).first()
        except ValueError:
            return None
        return PageAudio(clip=clip) if clip is not None else None
    assignment = RatingAssignment.objects.filter(pk=letter[0]).select_related("item__condition", "item__study__rating_task").first()
    if assignment is None:
        return None
    clips = page_clips(assignment)
    clip = clips.get(letter[1])
    if clip is None:
        return None
    shape = page_shape(assignment, clips)
    gain = assignment.item.study.clip_gain_db(clip) if shape is not None else 0.0
    return PageAudio(clip=clip, served_as=served_name(assignment_id=assignment.pk, label=letter[1]), shape=shape, gain_db=gain)


def clip_of_token(token: str) -> Clip | None:
    audio = audio_of_token(token)
    return audio.clip if audio is not None else None


def scale_of(task: str) -> dict:
    if task == TaskType.ACR:
        return {"kind": "acr", "min": 1, "max": 5, "labels": [{"value": v, "label": label} for v, label in ACR_LABELS.items()]}
    return {"kind": "multi", "min": 0, "max": 100, "bands": [{"from": low, "label": label} for low, label in MULTI_BANDS]}


def assignment_payload(assignment: RatingAssignment, *, progress: dict) -> dict:
    """What the page may know: never system names, file names, the item's kind or a clip's role."""
    item = assignment.item
    study = item.study
    config = study.rating_task
    page = page_clips(assignment)
    shape = page_shape(assignment, page)
    condition = item.condition
    return {
        "id": assignment.pk,
        "task": config.task,
        "served_at": assignment.served_at.isoformat(),
        "lock_expires_at": assignment.lock_expires_at.isoformat(),
        "instructions": study.instructions,
        "condition": {"prompt": condition.prompt, "lyrics": condition.lyrics, "reference": _audio(assignment, REFERENCE, page.get(REFERENCE), study=study, shape=shape)},
        "clips": [{"label": label, **_audio(assignment, label, page[label], study=study, shape=shape)} for label in assignment.labels],
        "dimensions": [{"key": dim, **QUESTIONS[dim]} for dim in config.dimensions],
        "scale": scale_of(config.task),
        "rules": {"min_listen_seconds": study.min_listen_seconds, "rationale_min_length": study.rationale_min_length},
        "listening": {
            "next_seq": assignment.listening_seq + 1,
            "heard": {label: float((assignment.listening.get(label) or {}).get("seconds", 0.0)) for label in assignment.labels},
        },
        "progress": progress,
    }


def rating_progress(*, study: Study, annotator, now=None) -> dict:
    """The annotator's progress in a rating study, in the shape of annotation.selectors.pair_progress (home page, API), counted in `unit`."""
    from django.db.models import Exists, F, OuterRef
    from django.utils import timezone

    from .models import RatingItem, RatingSubmission

    now = now or timezone.now()
    done = RatingSubmission.objects.filter(item__study=study, annotator=annotator).count()
    planned = study.annotator_target or RatingItem.objects.filter(study=study).count()
    own = RatingAssignment.objects.filter(annotator=annotator, item=OuterRef("pk")).exclude(state=RatingAssignment.State.EXPIRED)
    live = RatingAssignment.objects.filter(annotator=annotator, item=OuterRef("pk"), state=RatingAssignment.State.ACTIVE, lock_expires_at__gt=now)
    items = RatingItem.objects.filter(study=study)
    left = items.filter(Q(n_ratings__lt=F("overlap") - F("n_live")) & ~Q(Exists(own))).count() + items.filter(Exists(live)).count()
    if study.annotator_target:
        left = min(left, max(0, study.annotator_target - done))
    target = max(done, min(planned, done + left))
    state = "closed" if not study.is_active else ("open" if left > 0 else "finished")
    # An ACR item is one clip; a multi-stimulus item is a condition's set of clips on one page.
    unit = "clips" if study.rating_task.task == TaskType.ACR else "sets"
    return {"done": done, "target": target, "planned": max(planned, done), "left": left, "state": state, "unit": unit}
