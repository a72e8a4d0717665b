"""Rating studies: configuring them, adding items, the assignment engine, listening and submits.

The engine keeps, for every item,

    ratings stored + active locks  <=  item.overlap

as the pairwise engine does (annotation/services/assignment.py): a new lock is taken only on an
item row this request holds (SELECT ... FOR UPDATE SKIP LOCKED on PostgreSQL; SQLite's IMMEDIATE
transactions let one writer in at a time) and whose counters, read from that locked row, leave
room. The counters move in the same transaction as the lock, submit, skip or expiry that moves
them, and a database constraint refuses any write that would over-fill an item. An annotator's
concurrent requests take turns on their membership row, so the second finds the first's lock.
"""

from __future__ import annotations

import math
import random
import re
from collections import Counter
from datetime import timedelta

from django.db import IntegrityError, connection, transaction
from django.db.models import BigIntegerField, Case, Exists, F, OuterRef, Q, Value, When
from django.db.models.functions import Mod
from django.utils import timezone

from annotation import cached
from annotation.models import ORDER_PRIME, AnnotatorProfile, AudioFetch, AudioReceipt, ChosenBy, Clip, Condition, Dimension, Study, StudyAnnotator
from annotation.services import audio_fetch_record  # noqa: F401  (the audio view records through it)
from common import audio_proof, audio_render, listening
from common.deferred import deferred_rows
from common.errors import ServiceError

from .models import LABELS, MAX_MULTI_CLIPS, Rating, RatingAssignment, RatingItem, RatingItemClip, RatingListeningEvent, RatingSubmission, RatingTask, TaskType, task_scale

State = RatingAssignment.State
SPECIAL = (RatingItem.Kind.GOLD, RatingItem.Kind.TRAP)
MAX_EVENTS_PER_ASSIGNMENT = 5000
DIMENSIONS = tuple(Dimension.values)


# --- Configuration ---------------------------------------------------------------------------


@transaction.atomic
def rating_task_set(*, study: Study, task: str, dimensions: list[str]) -> RatingTask:
    """Make `study` a rating study (acr or multi) asking these dimensions; refused once it holds pairs or ratings."""
    if task not in (TaskType.ACR, TaskType.MULTI):
        raise ServiceError(f"Task type must be acr or multi (pairwise studies need no rating task), not {task!r}.", code="bad_task")
    dims = list(dict.fromkeys(dimensions or []))
    if not dims or any(d not in DIMENSIONS for d in dims):
        raise ServiceError(f"Ask at least one dimension, each one of: {', '.join(DIMENSIONS)}.", code="bad_dimensions")
    if study.pairs.exists():
        raise ServiceError("This study already holds pairs: a study collects either pairwise votes or ratings.", code="has_pairs", status=409)
    existing = RatingTask.objects.filter(study=study).first()
    if existing is not None and existing.task != task and study.rating_items.exists():
        raise ServiceError("This study already holds rating items of another task type.", code="has_items", status=409)
    config, _ = RatingTask.objects.update_or_create(study=study, defaults={"task": task, "dimensions": dims})
    return config


CLIP_SETS_HELP = (
    "One item per line: the clips' sha256 (or their first 12 or more characters) separated by spaces; in a multi study "
    "ref=<clip> and anchor=<clip> add the hidden reference and low anchor. The prompt follows a | sign; without one the "
    "item takes the condition of the first clip's earliest pair or rating item. A line that starts with gold (a clip of "
    "known quality) or trap (a clip whose audio asks for a given answer) is a check item: after a clip, "
    "<dimension>=<low>-<high> gives the range its rating must fall in (e.g. gold 3f2a9c4e1b7d musicality=4-5)."
)
_HEX = frozenset("0123456789abcdef")
_RANGE = re.compile(r"^(?P<low>\d+(?:\.\d+)?)-(?P<high>\d+(?:\.\d+)?)$")
_KINDS = {"gold": RatingItem.Kind.GOLD, "trap": RatingItem.Kind.TRAP}


def _clip_named(token: str, *, line: int) -> Clip:
    key = token.strip().lower()
    if len(key) < 12 or len(key) > 64 or not set(key) <= _HEX:
        raise ServiceError(f"Line {line}: {token[:70]!r} is not a clip's sha256 (12 to 64 hex characters).", code="bad_clip_sets")
    found = list(Clip.objects.filter(sha256__startswith=key)[:2])
    if len(found) != 1:
        raise ServiceError(f"Line {line}: {'no clip' if not found else 'more than one clip'} starts with {key}.", code="bad_clip_sets")
    return found[0]


def _range_of(key: str, value: str, *, line: int, task: str, dimensions, last: Clip | None, expected: dict) -> None:
    """`dimension=low-high` after a clip: the range that clip's rating must fall in (gold and trap items)."""
    low_high = _RANGE.match(value)
    if key not in dimensions:
        asked = ", ".join(dimensions) or "none yet"
        raise ServiceError(f"Line {line}: {key}= is neither ref=, anchor= nor a dimension this study asks ({asked}).", code="bad_clip_sets")
    if last is None:
        raise ServiceError(f"Line {line}: the range {key}={value} follows no clip; write it after the clip it is for.", code="bad_clip_sets")
    scale = task_scale(task)
    if low_high is None or not scale[0] <= float(low_high["low"]) <= float(low_high["high"]) <= scale[1]:
        raise ServiceError(
            f"Line {line}: {key}={value} is not a range low-high within the scale {scale[0]}-{scale[1]} (e.g. {key}={scale[1] - 1}-{scale[1]}).",
            code="bad_clip_sets",
        )
    expected.setdefault(last.pk, {})[key] = [float(low_high["low"]), float(low_high["high"])]


def clip_sets_parse(text: str, *, task: str, dimensions=DIMENSIONS) -> list[dict]:
    """The items a study form's clip-set box names (CLIP_SETS_HELP): [{"clips", "reference", "anchor", "prompt", "kind",
    "expected"}], each checked against the task (acr: exactly one clip; multi: 2 to MAX_MULTI_CLIPS, reference and anchor
    included) and the dimensions asked (a gold or trap line gives at least one range, and only a check line gives any)."""
    items = []
    for line, raw in enumerate((text or "").splitlines(), start=1):
        body, _, prompt = raw.partition("|")
        if not body.strip() or body.lstrip().startswith("#"):
            continue
        tokens = body.split()
        kind = _KINDS.get(tokens[0].lower(), RatingItem.Kind.REGULAR)
        entry: dict = {"clips": [], "reference": None, "anchor": None, "prompt": prompt.strip(), "kind": kind, "expected": {}}
        last = None
        for token in tokens[1:] if kind != RatingItem.Kind.REGULAR else tokens:
            role, _, name = token.partition("=") if "=" in token else ("", "", token)
            if role not in ("", "ref", "anchor"):
                _range_of(role, name, line=line, task=task, dimensions=dimensions, last=last, expected=entry["expected"])
                continue
            if role and task != TaskType.MULTI:
                raise ServiceError(f"Line {line}: a reference or anchor belongs to a multi-stimulus item.", code="bad_clip_sets")
            last = clip = _clip_named(name, line=line)
            if role:
                entry["reference" if role == "ref" else "anchor"] = clip
            else:
                entry["clips"].append(clip)
        shown = [c for c in (*entry["clips"], entry["reference"], entry["anchor"]) if c is not None]
        if len({c.pk for c in shown}) != len(shown):
            raise ServiceError(f"Line {line}: a clip is named twice.", code="bad_clip_sets")
        if task == TaskType.ACR and len(entry["clips"]) != 1:
            raise ServiceError(f"Line {line}: an acr item is exactly one clip.", code="bad_clip_sets")
        if task == TaskType.MULTI and not (1 <= len(entry["clips"]) and 2 <= len(shown) <= MAX_MULTI_CLIPS):
            raise ServiceError(f"Line {line}: a multi-stimulus item shows 2 to {MAX_MULTI_CLIPS} clips, reference and anchor included.", code="bad_clip_sets")
        if kind != RatingItem.Kind.REGULAR and not entry["expected"]:
            raise ServiceError(f"Line {line}: a {kind} item needs the range of at least one clip, e.g. musicality=4-5 after it.", code="bad_clip_sets")
        if kind == RatingItem.Kind.REGULAR and entry["expected"]:
            raise ServiceError(f"Line {line}: only a gold or trap item has expected ranges; start the line with gold or trap.", code="bad_clip_sets")
        if not entry["prompt"]:
            entry["condition"] = _condition_of(entry["clips"][0])
            if entry["condition"] is None:
                raise ServiceError(f"Line {line}: the clip belongs to no pair or item yet; give its prompt after a | sign.", code="bad_clip_sets")
        items.append(entry)
    return items


def _condition_of(clip: Clip) -> Condition | None:
    """The condition a clip was already given under (its first pair or rating item), for a clip set named without a prompt."""
    from annotation.models import Pair

    pair = Pair.objects.filter(Q(clip_a=clip) | Q(clip_b=clip)).select_related("condition").order_by("id").first()
    if pair is not None:
        return pair.condition
    member = RatingItemClip.objects.filter(clip=clip).select_related("item__condition").order_by("id").first()
    return member.item.condition if member is not None else None


@transaction.atomic
def rating_study_create(*, owner=None, task_type: str = TaskType.PAIRWISE, rating_dimensions=(), clip_sets: list[dict] | None = None, **parameters) -> Study:
    """A new study (annotation.services.study_create) with its task type: a pairwise study as before, or a rating study
    with its dimensions and the items of `clip_sets` (clip_sets_parse) added. All of it, or (one refusal) none."""
    from annotation.services import study_create

    if task_type == TaskType.PAIRWISE:
        if rating_dimensions or clip_sets:
            message = "Rating dimensions and clip sets belong to an acr or multi study; pick one of those task types."
            raise ServiceError(message, code="bad_task", extra={"errors": {"task_type": [message]}})
        return study_create(owner=owner, **parameters)
    study = study_create(owner=owner, **parameters)
    try:
        rating_task_set(study=study, task=task_type, dimensions=list(rating_dimensions))
    except ServiceError as exc:
        raise ServiceError(exc.message, code=exc.code, extra={"errors": {"rating_dimensions": [exc.message]}}) from None
    _items_add(study=study, clip_sets=clip_sets or [])
    return study


@transaction.atomic
def rating_study_update(*, study: Study, clip_sets: list[dict] | None = None, **parameters) -> Study:
    """A study's parameters saved (annotation.services.study_update), with the items of `clip_sets` (clip_sets_parse)
    added to a rating study. The task type and dimensions stay as made; all of it, or (one refusal) none."""
    from annotation.services import study_update

    if clip_sets and not RatingTask.objects.filter(study=study).exists():
        message = "This study collects pairwise votes; rating items belong to an acr or multi study."
        raise ServiceError(message, code="not_rating_study", status=409, extra={"errors": {"clip_sets": [message]}})
    study = study_update(study=study, **parameters)
    _items_add(study=study, clip_sets=clip_sets or [])
    return study


def _items_add(*, study: Study, clip_sets: list[dict]) -> None:
    from annotation.services import condition_get_or_create

    for line, entry in enumerate(clip_sets, start=1):
        condition = entry.get("condition") or condition_get_or_create(prompt=entry["prompt"])[0]
        try:
            rating_item_add(
                study=study,
                condition=condition,
                clips=entry["clips"],
                reference=entry["reference"],
                anchor=entry["anchor"],
                kind=entry.get("kind", RatingItem.Kind.REGULAR),
                expected=entry.get("expected"),
            )
        except ServiceError as exc:
            # The form shows the refusal beside the box it came from, and which item it was.
            message = f"Item {line}: {exc.message}"
            raise ServiceError(message, code=exc.code, status=exc.status, extra={"errors": {"clip_sets": [message]}}) from None


def _expected_clean(expected, *, clip_ids: list[int], dimensions: list[str], scale: tuple[int, int]) -> dict:
    clean = {}
    for key, ranges in (expected or {}).items():
        clip_id = int(key)
        if clip_id not in clip_ids:
            raise ServiceError(f"The expected range names clip {key}, which is not on this item.", code="bad_expected")
        clean[str(clip_id)] = {}
        for dim, bounds in ranges.items():
            if dim not in dimensions or not isinstance(bounds, (list, tuple)) or len(bounds) != 2:
                raise ServiceError(f"Expected ranges are [low, high] per dimension the study asks ({', '.join(dimensions)}).", code="bad_expected")
            low, high = float(bounds[0]), float(bounds[1])
            if not scale[0] <= low <= high <= scale[1]:
                raise ServiceError(f"An expected range must lie within the scale {scale[0]}-{scale[1]} with low <= high.", code="bad_expected")
            clean[str(clip_id)][dim] = [low, high]
    return clean


@transaction.atomic
def rating_item_add(
    *,
    study: Study,
    condition: Condition,
    clips: list[Clip],
    reference: Clip | None = None,
    anchor: Clip | None = None,
    kind: str = RatingItem.Kind.REGULAR,
    expected: dict | None = None,
    overlap: int | None = None,
) -> RatingItem:
    """One item: a clip (acr) or a condition's clips with an optional hidden reference and low anchor (multi)."""
    config = RatingTask.objects.filter(study=study).first()
    if config is None:
        raise ServiceError("This study has no rating task; set one (acr or multi) first.", code="not_rating_study", status=409)
    members = [(clip, RatingItemClip.Role.TEST) for clip in clips]
    if config.task == TaskType.ACR:
        if len(clips) != 1 or reference is not None or anchor is not None:
            raise ServiceError("An acr item is exactly one clip (no reference or anchor).", code="bad_item")
    else:
        members += [(c, role) for c, role in ((reference, RatingItemClip.Role.REFERENCE), (anchor, RatingItemClip.Role.ANCHOR)) if c is not None]
        if not 2 <= len(members) <= MAX_MULTI_CLIPS:
            raise ServiceError(f"A multi-stimulus item shows 2 to {MAX_MULTI_CLIPS} clips, reference and anchor included.", code="bad_item")
    ids = [clip.pk for clip, _ in members]
    if len(set(ids)) != len(ids):
        raise ServiceError("A clip appears twice on this item.", code="bad_item")
    if kind not in RatingItem.Kind.values:
        raise ServiceError(f"Item kind must be one of {', '.join(RatingItem.Kind.values)}.", code="bad_kind")
    expected = _expected_clean(expected, clip_ids=ids, dimensions=config.dimensions, scale=config.scale)
    if kind != RatingItem.Kind.REGULAR and not expected:
        raise ServiceError("A gold or trap item needs the expected rating range of at least one clip.", code="bad_expected")
    overlap = overlap if overlap is not None else (study.overlap_target if kind == RatingItem.Kind.REGULAR else 50)
    key = "-".join(str(i) for i in sorted(ids))
    if RatingItem.objects.filter(study=study, condition=condition, clip_key=key).exists():
        raise ServiceError("This study already rates these clips under this condition.", code="duplicate_item", status=409)
    item = RatingItem.objects.create(study=study, condition=condition, kind=kind, expected=expected, overlap=overlap, clip_key=key)
    RatingItemClip.objects.bulk_create([RatingItemClip(item=item, clip=clip, role=role) for clip, role in members])
    return item


# --- The engine ------------------------------------------------------------------------------


def _membership(*, study: Study, annotator) -> StudyAnnotator | None:
    # The row lock makes one annotator's concurrent requests take turns.
    return StudyAnnotator.objects.select_for_update().filter(study=study, annotator=annotator, is_active=True).first()


def _live(*, study: Study, annotator, now) -> RatingAssignment | None:
    return (
        RatingAssignment.objects.filter(annotator=annotator, item__study=study, state=State.ACTIVE, lock_expires_at__gt=now)
        .select_related("item__condition__reference")
        .order_by("served_at")
        .first()
    )


def _pick(*, study: Study, annotator, seed: int, draw: int, special_first: bool) -> RatingItem | None:
    """Lock the best item with room that this annotator has not had; one query.

    Special items (gold, trap) or regular ones first as the draw says; within a pool, items that
    hold ratings or locks first (overlap fills early), then the annotator's own permutation of
    the order_key circle, so concurrent annotators start far apart.
    """
    own = RatingAssignment.objects.filter(annotator=annotator, item=OuterRef("pk")).exclude(state=State.EXPIRED)
    multiplier = Value(1 + seed % (ORDER_PRIME - 1), output_field=BigIntegerField())
    offset = Value((random.Random(f"{seed}:rating-start:{draw}").randrange(ORDER_PRIME)), output_field=BigIntegerField())
    special = Q(kind__in=SPECIAL)
    query = (
        RatingItem.objects.filter(study=study, n_ratings__lt=F("overlap") - F("n_live"))
        .exclude(Exists(own))
        .annotate(
            pool=Case(When(special, then=Value(0 if special_first else 1)), default=Value(1 if special_first else 0)),
            fresh=Case(When(Q(n_ratings__gt=0) | Q(n_live__gt=0), then=Value(0)), default=Value(1)),
            position=Mod(F("order_key") * multiplier + offset, Value(ORDER_PRIME, output_field=BigIntegerField())),
        )
        .order_by("pool", "fresh", "position", "id")
    )
    if connection.features.has_select_for_update_skip_locked:
        query = query.select_for_update(skip_locked=True, of=("self",))
    item = query.first()
    if item is not None and item.n_ratings + item.n_live >= item.overlap:
        return None  # filled while this request looked
    return item


def _expired_release(*, study: Study, now) -> int:
    """Mark the study's lapsed locks expired and give their slots back, in one transaction."""
    lapsed = list(RatingAssignment.objects.select_for_update().filter(item__study=study, state=State.ACTIVE, lock_expires_at__lte=now).values_list("pk", "item_id"))
    if not lapsed:
        return 0
    RatingAssignment.objects.filter(pk__in=[pk for pk, _ in lapsed]).update(state=State.EXPIRED)
    for item_id, count in Counter(item_id for _, item_id in lapsed).items():
        RatingItem.objects.filter(pk=item_id).update(n_live=F("n_live") - count)
    return len(lapsed)


def _take(*, item: RatingItem, annotator, study: Study, seed: int, now) -> RatingAssignment:
    clip_ids = list(item.item_clips.order_by("id").values_list("clip_id", flat=True))
    # Blind labels: the order is the annotator's own (seeded), so no letter means "reference".
    random.Random(f"{seed}:rating-order:{item.pk}").shuffle(clip_ids)
    fields = {
        "state": State.ACTIVE,
        "served_at": now,
        "lock_expires_at": now + timedelta(seconds=study.lock_ttl_seconds),
        "order": clip_ids,
        "skip_reason": "",
        "selection": ChosenBy.GOLD if item.kind in SPECIAL else ChosenBy.RANDOM,
    }
    assignment, _ = RatingAssignment.objects.update_or_create(annotator=annotator, item=item, defaults=fields)
    RatingItem.objects.filter(pk=item.pk).update(n_live=F("n_live") + 1)
    assignment.item = item
    return assignment


@transaction.atomic
def rating_next(*, study: Study, annotator, now=None) -> RatingAssignment | None:
    """The annotator's live lock in this rating study, else a fresh lock on an item with room, else None."""
    now = now or timezone.now()
    membership = _membership(study=study, annotator=annotator)
    if membership is None:
        raise ServiceError("You are not an annotator of this study.", code="not_member", status=403)
    if not cached.has_consented(annotator.pk):
        raise ServiceError("Consent is needed before the first task.", code="consent_required", status=403)
    if not RatingTask.objects.filter(study=study).exists():
        raise ServiceError("This study collects pairwise votes, not ratings.", code="not_rating_study", status=409)
    if not study.is_active:
        return None
    current = _live(study=study, annotator=annotator, now=now)
    if current is not None:
        return current
    if study.annotator_target and RatingSubmission.objects.filter(item__study=study, annotator=annotator).count() >= study.annotator_target:
        return None
    draw = RatingAssignment.objects.filter(annotator=annotator, item__study=study).count()
    special_first = random.Random(f"{membership.seed}:rating:{draw}").random() < study.gold_rate
    pick = {"study": study, "annotator": annotator, "seed": membership.seed, "draw": draw, "special_first": special_first}
    item = _pick(**pick)
    if item is None:
        _expired_release(study=study, now=now)
        item = _pick(**pick)
    if item is None:
        return None
    return _take(item=item, annotator=annotator, study=study, seed=membership.seed, now=now)


@transaction.atomic
def rating_skip(*, assignment_id: int, annotator, reason: str) -> RatingAssignment:
    reason = (reason or "").strip()
    if not reason:
        raise ServiceError("Say why you skip this task (for example: audio does not play).", code="reason_required")
    if len(reason) > 1000:
        raise ServiceError("Keep the skip reason under 1000 characters.", code="too_long")
    locked = RatingAssignment.objects.select_for_update().filter(pk=assignment_id, annotator=annotator).first()
    if locked is None:
        raise ServiceError("No such task for you.", code="not_found", status=404)
    if locked.state != State.ACTIVE:
        raise ServiceError(f"This task is {locked.state}; it cannot be skipped.", code="not_active", status=409)
    locked.state, locked.skip_reason = State.SKIPPED, reason
    locked.save(update_fields=["state", "skip_reason"])
    RatingItem.objects.filter(pk=locked.item_id).update(n_live=F("n_live") - 1)
    return locked


# --- Listening ---------------------------------------------------------------------------------


def _record_for(assignment: RatingAssignment) -> dict:
    """The listening record per label, by the shared rules (common.listening.evidence).

    Credit is per letter URL (AudioFetch.served_as): bytes sent under the open reference's URL, or under the clip's
    own, count for no letter, even when the clip is a letter's too (a hidden reference). On a multi-stimulus page
    every letter is the page's one length (selectors.page_shape), and that is the duration its bytes stand for."""
    from .selectors import page_clips, page_shape, served_name

    deferred_rows.flush()  # this process's queued audio notes (common/deferred.py)
    labels = assignment.labels
    clips = page_clips(assignment)
    shape = page_shape(assignment, clips)
    durations = {label: (shape.duration if shape is not None else clips[label].duration) if label in clips else 0.0 for label in labels}
    label_of = {served_name(assignment_id=assignment.pk, label=label): label for label in labels}
    events = [
        listening.Event(seq=seq, side=side, kind=kind, at=at)
        for seq, side, kind, at in assignment.listening_events.values_list("seq", "side", "kind", "server_time")
    ]
    # Only fetches the listener proved receiving (an AudioReceipt for the same range) count (common/audio_proof.py).
    receipt = AudioReceipt.objects.filter(user_id=OuterRef("user_id"), clip_id=OuterRef("clip_id"), first_byte=OuterRef("first_byte"), last_byte=OuterRef("last_byte"))
    fetches = [
        listening.Fetch(side=label_of[name], first_byte=first, last_byte=last, total_bytes=total, at=at, proven=proven)
        for name, first, last, total, at, proven in AudioFetch.objects.filter(user_id=assignment.annotator_id, served_as__in=label_of)
        .annotate(proven=Exists(receipt))
        .values_list("served_as", "first_byte", "last_byte", "total_bytes", "served_at", "proven")
    ]
    return listening.evidence(events=events, fetches=fetches, durations=durations)


def page_audio_render(*, audio) -> tuple:
    """The file a multi-stimulus page's letter (or open reference) is served from: the clip rendered in the page's
    shape with its gain in the samples (common.audio_render, cached under MEDIA_ROOT/blind-pages/); (path, content key).
    A source that cannot be read raises audio_render.RenderError."""
    return audio_render.render(source=audio.clip.file.path, content_hash=audio.clip.sha256, shape=audio.shape, gain_db=audio.gain_db)


def _require_consent(annotator) -> None:
    profile = AnnotatorProfile.objects.filter(user=annotator).only("consented_at", "withdrawn_at").first()
    if profile is None or not profile.has_consented:
        raise ServiceError("Your consent is withdrawn (or was never given), so nothing more is recorded for you.", code="consent_withdrawn", status=403)


def _receipts_record(assignment: RatingAssignment, *, annotator, receipts, now) -> int:
    """The post's receipts for the task's clips, by the pairwise page's rule (annotation.services.listening): each
    label's token must name the URL the page plays that label from."""
    from annotation.services.listening import audio_receipts_record

    from .selectors import audio_letter

    labels = assignment.labels
    clips = Clip.objects.only("id", "public_id", "file").in_bulk(labels.values())
    return audio_receipts_record(
        user=annotator, receipts=receipts, clips={label: clips[cid] for label, cid in labels.items()},
        serves=lambda label, path: audio_letter(path) == (assignment.pk, label), now=now,
    )


def rating_listening_record(*, assignment_id: int, annotator, events, receipts=None, now=None) -> dict:
    """Store a batch of the page's events (stamped now) and its receipts (proof of the audio received); replayed
    numbers are ignored. Returns seconds heard per label."""
    # The audio notes this process queued before now (a batch being written included) are in the database first.
    deferred_rows.flush()
    with transaction.atomic():
        assignment = RatingAssignment.objects.select_for_update(of=("self",)).select_related("item__study").filter(pk=assignment_id, annotator=annotator).first()
        if assignment is None:
            raise ServiceError("No such task for you.", code="not_found", status=404)
        if assignment.state in (State.SUBMITTED, State.SKIPPED):
            raise ServiceError(f"This task is already {assignment.state}; listening to it is no longer recorded.", code="not_listening", status=409)
        _require_consent(annotator)
        sides = tuple(assignment.labels)
        fresh, ignored = listening.events_clean(events, sides=sides, last_seq=assignment.listening_seq) if events else ([], 0)
        proven = _receipts_record(assignment, annotator=annotator, receipts=receipts, now=now) if receipts else 0
        listening.events_append(
            assignment, fresh, event_model=RatingListeningEvent, owner_field="assignment", seq_field="listening_seq", record=_record_for, limit=MAX_EVENTS_PER_ASSIGNMENT, now=now,
            full=lambda: ServiceError("This task has recorded as many listening events as it can.", code="too_many_events", status=429, retry_after=60),
        )
        if proven and not fresh:
            assignment.listening = _record_for(assignment)
            assignment.save(update_fields=["listening"])
    return {
        "accepted": len(fresh),
        "ignored": ignored,
        "last_seq": assignment.listening_seq,
        "heard": listening.heard(assignment.listening, sides),
        "min_listen_seconds": assignment.item.study.min_listen_seconds,
    }


# --- Submit -------------------------------------------------------------------------------------


def _value(raw, *, label: str, dimension: str, task: str) -> float:
    low, high = task_scale(task)
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not math.isfinite(raw):
        raise ServiceError(f"Clip {label}, {dimension}: give a number from {low} to {high}.", code="bad_rating")
    if not low <= raw <= high or (task == TaskType.ACR and raw != int(raw)):
        whole = "a whole number " if task == TaskType.ACR else "a number "
        raise ServiceError(f"Clip {label}, {dimension}: {raw} is not allowed; give {whole}from {low} to {high}.", code="bad_rating")
    return float(raw)


def rating_submit(
    *,
    assignment_id: int,
    annotator,
    ratings: dict,
    idempotency_key: str,
    rationale: str = "",
    listening_log: dict | None = None,
    time_on_page_ms: int | None = None,
    now=None,
) -> tuple[dict, bool]:
    """Store the ratings of a locked item: every clip heard for the study's minimum (server's record), every dimension rated.

    `ratings`: {label: {dimension: value}}. Returns (answer, created); the same idempotency key
    gives back the stored answer instead of a second one.
    """
    try:
        with transaction.atomic():
            return _submit(
                assignment_id=assignment_id, annotator=annotator, ratings=ratings, key=idempotency_key,
                rationale=(rationale or "").strip(), listening_log=listening_log, time_on_page_ms=time_on_page_ms, now=now or timezone.now(),
            )
    except IntegrityError:
        # A concurrent retry with the same key stored it first.
        existing = RatingSubmission.objects.filter(idempotency_key=idempotency_key, annotator=annotator).first()
        if existing is None:
            raise
        return _answer(existing), False


def _answer(submission: RatingSubmission) -> dict:
    return {"submission": submission.pk, "item": submission.item_id, "created_at": submission.created_at.isoformat()}


def _submit(*, assignment_id, annotator, ratings, key, rationale, listening_log, time_on_page_ms, now) -> tuple[dict, bool]:
    previous = RatingSubmission.objects.filter(idempotency_key=key).first()
    if previous is not None:
        if previous.annotator_id != annotator.pk or previous.assignment_id != assignment_id:
            raise ServiceError("This submission key was used for another task.", code="key_reused", status=409)
        return _answer(previous), False
    assignment = RatingAssignment.objects.select_for_update(of=("self",)).select_related("item__study__rating_task").filter(pk=assignment_id, annotator=annotator).first()
    if assignment is None:
        raise ServiceError("No such task for you.", code="not_found", status=404)
    if assignment.state != State.ACTIVE:
        raise ServiceError(f"This task is {assignment.state}; ask for the next one.", code="not_active", status=409)
    _require_consent(annotator)
    study = assignment.item.study
    config = study.rating_task
    labels = assignment.labels
    short = listening.shortfalls(assignment.listening, sides=tuple(labels), minimum=study.min_listen_seconds)
    if short:
        # A clip sent but never proven received was fetched: the proof sentence says what is missing.
        unproven = [label for label, _, _ in short if label in assignment.listening.get("unproven", [])]
        short = [(label, seconds, fetched or label in unproven) for label, seconds, fetched in short]
        raise ServiceError(
            listening.shortfall_message(short, minimum=study.min_listen_seconds, label="clip", action="rating") + audio_proof.unproven_sentence(unproven),
            code="listening_too_short",
            extra={"heard": listening.heard(assignment.listening, tuple(labels)), "min_listen_seconds": study.min_listen_seconds},
        )
    if not isinstance(ratings, dict) or set(ratings) != set(labels):
        raise ServiceError(f"Rate every clip on the page: {', '.join(labels)}.", code="bad_rating")
    rows = []
    for position, (label, clip_id) in enumerate(labels.items()):
        given = ratings[label]
        if not isinstance(given, dict) or set(given) != set(config.dimensions):
            raise ServiceError(f"Clip {label}: rate {', '.join(config.dimensions)}.", code="bad_rating")
        for dim in config.dimensions:
            rows.append(Rating(clip_id=clip_id, dimension=dim, value=_value(given[dim], label=label, dimension=dim, task=config.task), position=position))
    if len(rationale) < study.rationale_min_length:
        raise ServiceError(f"Write at least {study.rationale_min_length} characters on what you heard.", code="rationale_too_short")
    if len(rationale) > 5000:
        raise ServiceError("Keep the rationale under 5000 characters.", code="too_long")
    submission = RatingSubmission.objects.create(
        annotator=annotator, item_id=assignment.item_id, assignment=assignment, rationale=rationale,
        listening_log={"source": "server", **assignment.listening, "client": listening_log or {}},
        time_on_page_ms=time_on_page_ms, idempotency_key=key,
    )
    for row in rows:
        row.submission = submission
    Rating.objects.bulk_create(rows)
    assignment.state = State.SUBMITTED
    assignment.save(update_fields=["state"])
    RatingItem.objects.filter(pk=assignment.item_id).update(n_live=F("n_live") - 1, n_ratings=F("n_ratings") + 1)
    return _answer(submission), True


__all__ = [
    "LABELS",
    "clip_sets_parse",
    "rating_study_create",
    "rating_study_update",
    "rating_item_add",
    "rating_listening_record",
    "rating_next",
    "rating_skip",
    "rating_submit",
    "rating_task_set",
]
