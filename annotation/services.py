"""Writes for the annotation app: clips, conditions, pairs, assignments, judgments, consent.

Every function takes keyword-only arguments and runs in a transaction where it
writes more than one row. The assignment engine's invariant, for every pair:

    judgments + live locks of annotators without a judgment  <=  pair.overlap

holds because every write that can change either side locks the pair row
first (SELECT ... FOR UPDATE on PostgreSQL; SQLite serialises writers through
its IMMEDIATE transactions, see settings).
"""

from __future__ import annotations

import hashlib
import random
import secrets
import tempfile
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal, InvalidOperation
from pathlib import Path

import numpy as np
import soundfile as sf
from django.core.files import File
from django.db import IntegrityError, connection, transaction
from django.db.models import BigIntegerField, CharField, Count, Exists, ExpressionWrapper, F, OuterRef, Q, Value
from django.db.models.functions import Cast, Concat, Mod
from django.utils import timezone

from auditorium.errors import ServiceError

from .models import (
    ORDER_PRIME,
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

SUPPORTED_AUDIO = {".wav": "WAV", ".flac": "FLAC", ".ogg": "OGG", ".mp3": "MP3", ".aiff": "AIFF", ".aif": "AIFF"}
CONSENT_VERSION = "1"


class AudioError(ServiceError):
    pass


# --- Audio ----------------------------------------------------------------------


@dataclass(frozen=True)
class AudioInfo:
    duration: float
    sample_rate: int
    channels: int
    frames: int
    extension: str


def audio_probe(path: Path | str) -> AudioInfo:
    """Open and fully decode an audio file; raise AudioError with a readable reason if it is unusable."""
    path = Path(path)
    ext = path.suffix.lower()
    if ext not in SUPPORTED_AUDIO:
        raise AudioError(f"unsupported audio format {ext or '(no extension)'!r}; use one of {', '.join(sorted(SUPPORTED_AUDIO))}", code="unsupported_format")
    if not path.is_file():
        raise AudioError(f"audio file not found: {path.name}", code="missing_file")
    if path.stat().st_size == 0:
        raise AudioError(f"audio file is empty (0 bytes): {path.name}", code="empty_audio")
    try:
        with sf.SoundFile(str(path)) as handle:
            sample_rate, channels = handle.samplerate, handle.channels
            frames = 0
            # Decode everything: a truncated or corrupt body fails here, not at play time.
            for block in handle.blocks(blocksize=65536, dtype="float32", always_2d=True):
                if not np.isfinite(block).all():
                    raise AudioError(f"audio contains NaN or infinite samples: {path.name}", code="corrupt_audio")
                frames += len(block)
    except AudioError:
        raise
    except Exception as exc:  # soundfile raises LibsndfileError / RuntimeError / ValueError
        raise AudioError(f"audio cannot be decoded ({exc}): {path.name}", code="unreadable_audio") from None
    if frames == 0 or sample_rate <= 0:
        raise AudioError(f"audio has no samples: {path.name}", code="empty_audio")
    return AudioInfo(duration=frames / sample_rate, sample_rate=sample_rate, channels=channels, frames=frames, extension=ext)


def file_sha256(path: Path | str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def clip_ingest(
    *,
    path: Path | str,
    system: System | None = None,
    kind: str = Clip.Kind.GENERATED,
    original_name: str = "",
    derived_from: Clip | None = None,
    degradation: dict | None = None,
    info: AudioInfo | None = None,
) -> tuple[Clip, bool]:
    """Store an audio file as a clip, deduplicated by content hash. Returns (clip, created)."""
    path = Path(path)
    info = info or audio_probe(path)
    sha = file_sha256(path)
    existing = Clip.objects.filter(sha256=sha).first()
    if existing is not None:
        return existing, False
    clip = Clip(
        sha256=sha,
        extension=info.extension,
        kind=kind,
        system=system,
        duration=info.duration,
        sample_rate=info.sample_rate,
        channels=info.channels,
        original_name=original_name[:500],
        derived_from=derived_from,
        degradation=degradation or {},
    )
    with open(path, "rb") as handle:
        clip.file.save(f"{sha}{info.extension}", File(handle), save=False)
    try:
        with transaction.atomic():
            clip.save()
    except IntegrityError:
        # Another process stored the same content meanwhile: one clip, not two.
        clip.file.delete(save=False)
        return Clip.objects.get(sha256=sha), False
    return clip, True


def clip_ingest_array(
    *, audio: np.ndarray, sample_rate: int, system: System | None = None, kind: str = Clip.Kind.GENERATED, fmt: str = "FLAC", **extra
) -> tuple[Clip, bool]:
    """Store a float waveform (frames[, channels]) as a clip."""
    suffix = {"FLAC": ".flac", "WAV": ".wav"}[fmt]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"clip{suffix}"
        sf.write(str(path), np.asarray(audio, dtype=np.float32), sample_rate, format=fmt, subtype="PCM_16")
        return clip_ingest(path=path, system=system, kind=kind, **extra)


def system_get_or_create(*, name: str, organisation: str = "") -> System:
    system, _ = System.objects.get_or_create(name=name.strip(), defaults={"organisation": organisation})
    return system


# --- Conditions and pairs --------------------------------------------------------


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
        overlap=overlap or pair_overlap_for(study=study, clip_key=key, condition_id=condition.pk),
    )
    pair.full_clean(exclude=["study", "condition", "clip_a", "clip_b"], validate_unique=False, validate_constraints=False)
    try:
        with transaction.atomic():
            pair.save()
    except IntegrityError:
        return Pair.objects.get(study=study, condition=condition, clip_key=key), False
    return pair, True


# --- People -----------------------------------------------------------------------


def profile_ensure(*, user, pseudonym: str | None = None, is_imported: bool = False) -> AnnotatorProfile:
    """Every annotator gets a pseudonym; exports and reports use only that."""
    profile = AnnotatorProfile.objects.filter(user=user).first()
    if profile is not None:
        return profile
    pseudonym = pseudonym or f"a-{secrets.token_hex(5)}"
    profile, _ = AnnotatorProfile.objects.get_or_create(user=user, defaults={"pseudonym": pseudonym, "is_imported": is_imported})
    return profile


def study_annotator_add(*, study: Study, user) -> StudyAnnotator:
    from django.contrib.auth.models import Group

    user.groups.add(Group.objects.get_or_create(name="annotator")[0])
    profile_ensure(user=user)
    membership, _ = StudyAnnotator.objects.get_or_create(study=study, annotator=user, defaults={"seed": secrets.randbits(62)})
    if not membership.is_active:
        membership.is_active = True
        membership.save(update_fields=["is_active"])
    return membership


def consent_give(*, user, version: str = CONSENT_VERSION) -> AnnotatorProfile:
    profile = profile_ensure(user=user)
    profile.consented_at, profile.consent_version, profile.withdrawn_at = timezone.now(), version, None
    profile.save(update_fields=["consented_at", "consent_version", "withdrawn_at"])
    return profile


@transaction.atomic
def consent_withdraw(*, user) -> int:
    """Withdraw: judgments stay stored (audit) but leave every later export and analysis; live locks are released.

    Returns how many judgments are now excluded.
    """
    profile = profile_ensure(user=user)
    profile.withdrawn_at = timezone.now()
    profile.save(update_fields=["withdrawn_at"])
    Assignment.objects.filter(annotator=user, state=Assignment.State.ACTIVE).update(state=Assignment.State.EXPIRED, lock_expires_at=timezone.now())
    StudyAnnotator.objects.filter(annotator=user).update(is_active=False)
    return Judgment.objects.filter(annotator=user).count()


# --- Assignment engine ------------------------------------------------------------


def planner_stats_refresh(*models) -> None:
    """Refresh the database planner's statistics for these tables after a bulk load.

    Studies are annotated right after their pairs are imported, before autovacuum has
    looked at them; without statistics PostgreSQL plans the per-annotator counts as nested
    loops over the whole study (measured on 300 pairs: 12 ms instead of 0.3 ms a query).
    """
    with connection.cursor() as cursor:
        for model in models:
            cursor.execute(f"ANALYZE {connection.ops.quote_name(model._meta.db_table)}")


def _live_load(pair_ids, now) -> dict[int, int]:
    """Judgments + live locks without a judgment, per pair."""
    judged = dict(Judgment.objects.filter(pair_id__in=pair_ids).values_list("pair_id").annotate(n=Count("id")))
    locked = dict(
        Assignment.objects.filter(pair_id__in=pair_ids, state=Assignment.State.ACTIVE, lock_expires_at__gt=now)
        .values_list("pair_id")
        .annotate(n=Count("id"))
    )
    return {pid: judged.get(pid, 0) + locked.get(pid, 0) for pid in pair_ids}


def annotator_progress(*, study: Study, annotator) -> dict:
    done = Judgment.objects.filter(pair__study=study, annotator=annotator).count()
    target = study.annotator_target or study.pairs.count()
    return {"done": done, "target": max(target, done)}


def assignment_next(*, study: Study, annotator, now=None) -> Assignment | None:
    """The annotator's next pair: their live lock if any, else a fresh lock on a pair with room, else None."""
    now = now or timezone.now()
    membership = StudyAnnotator.objects.filter(study=study, annotator=annotator, is_active=True).first()
    if membership is None:
        raise ServiceError("You are not an annotator of this study.", code="not_member", status=403)
    profile = AnnotatorProfile.objects.filter(user=annotator).first()
    if profile is None or not profile.has_consented:
        raise ServiceError("Consent is needed before the first task.", code="consent_required", status=403)
    if not study.is_active:
        return None

    current = (
        Assignment.objects.select_related("pair")
        .filter(annotator=annotator, pair__study=study, state=Assignment.State.ACTIVE, lock_expires_at__gt=now)
        .order_by("served_at")
        .first()
    )
    if current is not None:
        return current
    if study.annotator_target and Judgment.objects.filter(pair__study=study, annotator=annotator).count() >= study.annotator_target:
        return None

    special_kinds = [Pair.Kind.GOLD, Pair.Kind.CATCH]
    draw = Assignment.objects.filter(annotator=annotator, pair__study=study).count()
    rng = random.Random(f"{membership.seed}:{draw}")
    # Gold and catch pairs come at the study's rate; either pool stands in when the other is empty.
    pools = [Q(kind__in=special_kinds), ~Q(kind__in=special_kinds)]
    if not rng.random() < study.gold_rate:
        pools.reverse()
    for pool in pools:
        tried: set[int] = set()
        # A short list first; under contention every one of them may be taken, then look further.
        for limit in (8, 200):
            for pair_id in _candidates(study=study, annotator=annotator, seed=membership.seed, draw=draw, now=now, pool=pool, limit=limit):
                if pair_id in tried:
                    continue
                tried.add(pair_id)
                assignment = _try_lock(pair_id=pair_id, annotator=annotator, study=study, seed=membership.seed, now=now)
                if assignment is not None:
                    return assignment
            if len(tried) < limit:
                break
    return None


def _candidates(*, study: Study, annotator, seed: int, draw: int, now, pool: Q, limit: int = 8) -> list[int]:
    """Pairs with room left that this annotator may get, best first.

    Order: pairs that already hold votes first (breadth-first fills overlap pairs
    so agreement data arrives early), in the annotator's own permutation; then
    untouched pairs from a point on the order_key circle drawn from the
    annotator's seed and draw number, so concurrent annotators start far apart
    and the lookup is an index range scan, not a pass over the whole study.
    """
    own = Assignment.objects.filter(annotator=annotator, pair__study=study).exclude(state=Assignment.State.EXPIRED).values("pair_id")
    # The same two clips under the same condition judged anywhere (either order, any study).
    # One combined key lets the database hash the annotator's judged set once
    # instead of joining it against every candidate pair.
    content_key = Concat(Cast("condition_id", CharField()), Value("/"), "clip_key", output_field=CharField())
    judged_content = (
        Judgment.objects.filter(annotator=annotator)
        .annotate(content=Concat(Cast("pair__condition_id", CharField()), Value("/"), "pair__clip_key", output_field=CharField()))
        .values("content")
    )
    base = Pair.objects.filter(pool, study=study).exclude(id__in=own).annotate(content=content_key).exclude(content__in=judged_content)
    live = Q(state=Assignment.State.ACTIVE, lock_expires_at__gt=now)

    judged_here = Judgment.objects.filter(pair__study=study).values("pair_id")
    locked_here = Assignment.objects.filter(live, pair__study=study).values("pair_id")
    multiplier = 1 + seed % (ORDER_PRIME - 1)
    offset = (seed >> 31) % ORDER_PRIME
    partial = list(
        base.filter(overlap__gt=1)
        .filter(Q(id__in=judged_here) | Q(id__in=locked_here))
        .annotate(
            load=Count("judgments", distinct=True)
            + Count("assignments", filter=Q(assignments__state=Assignment.State.ACTIVE, assignments__lock_expires_at__gt=now), distinct=True),
            position=ExpressionWrapper(
                Mod(F("order_key") * Value(multiplier, output_field=BigIntegerField()) + Value(offset, output_field=BigIntegerField()), Value(ORDER_PRIME, output_field=BigIntegerField())),
                output_field=BigIntegerField(),
            ),
        )
        .filter(load__lt=F("overlap"))
        .order_by("position")
        .values_list("id", flat=True)[:limit]
    )
    need = limit - len(partial)
    if need <= 0:
        return partial
    fresh = base.exclude(Exists(Judgment.objects.filter(pair=OuterRef("pk")))).exclude(Exists(Assignment.objects.filter(live, pair=OuterRef("pk"))))
    start = random.Random(f"{seed}:start:{draw}").randrange(ORDER_PRIME)
    ids = list(fresh.filter(order_key__gte=start).order_by("order_key", "id").values_list("id", flat=True)[:need])
    if len(ids) < need:
        ids += fresh.filter(order_key__lt=start).order_by("order_key", "id").values_list("id", flat=True)[: need - len(ids)]
    return partial + ids


def _lock_pair(pair_id: int) -> Pair | None:
    """Row-lock the pair; on PostgreSQL skip it if another annotator's request holds it."""
    query = Pair.objects.filter(id=pair_id)
    if connection.features.has_select_for_update_skip_locked:
        query = query.select_for_update(skip_locked=True)
    return query.first()


def _try_lock(*, pair_id: int, annotator, study: Study, seed: int, now) -> Assignment | None:
    with transaction.atomic():
        pair = _lock_pair(pair_id)
        if pair is None:
            return None
        if _live_load([pair_id], now)[pair_id] >= pair.overlap:
            return None
        existing = Assignment.objects.filter(annotator=annotator, pair=pair).first()
        if existing is not None and existing.state != Assignment.State.EXPIRED:
            return None
        side = random.Random(f"{seed}:side:{pair_id}").random() < 0.5
        a_clip_id = pair.clip_a_id if side else pair.clip_b_id
        expires = now + timedelta(seconds=study.lock_ttl_seconds)
        if existing is not None:
            existing.state, existing.served_at, existing.lock_expires_at, existing.a_clip_id = Assignment.State.ACTIVE, now, expires, a_clip_id
            existing.skip_reason = ""
            existing.save(update_fields=["state", "served_at", "lock_expires_at", "a_clip", "skip_reason"])
            return existing
        return Assignment.objects.create(
            annotator=annotator, pair=pair, a_clip_id=a_clip_id, state=Assignment.State.ACTIVE, served_at=now, lock_expires_at=expires
        )


@transaction.atomic
def assignment_skip(*, assignment: Assignment, annotator, reason: str) -> Assignment:
    reason = (reason or "").strip()
    if assignment.annotator_id != annotator.pk:
        raise ServiceError("This task is not yours.", code="not_yours", status=404)
    if not reason:
        raise ServiceError("Say why you skip this pair (for example: audio does not play, offensive content).", code="reason_required")
    if len(reason) > 1000:
        raise ServiceError("Keep the skip reason under 1000 characters.", code="too_long")
    locked = Assignment.objects.select_for_update().get(pk=assignment.pk)
    if locked.state == Assignment.State.SUBMITTED:
        raise ServiceError("This pair was already judged; it cannot be skipped.", code="already_submitted", status=409)
    locked.state, locked.skip_reason = Assignment.State.SKIPPED, reason
    locked.save(update_fields=["state", "skip_reason"])
    return locked


# --- Judgments ----------------------------------------------------------------------


def _confidence(value, field: str) -> Decimal:
    try:
        number = Decimal(str(value))
    except (InvalidOperation, ValueError, TypeError):
        raise ServiceError(f"{field}: give a number from 1 to 5 (half steps allowed).", code="bad_confidence") from None
    if not number.is_finite() or number < 1 or number > 5 or (number * 2) % 1 != 0:
        raise ServiceError(f"{field}: {value} is not allowed; use 1, 1.5, 2, ... 5.", code="bad_confidence")
    return number.quantize(Decimal("0.1"))


LOG_FIELDS = ("plays", "seconds", "seeks", "loops")


def listening_log_clean(raw) -> dict:
    """Normalise the page's listening log; reject shapes a real page cannot produce."""
    if not isinstance(raw, dict):
        raise ServiceError("listening_log must be an object with A and B entries.", code="bad_log")
    log: dict = {}
    for side in ("A", "B"):
        entry = raw.get(side)
        if not isinstance(entry, dict):
            raise ServiceError(f"listening_log.{side} is missing.", code="bad_log")
        clean = {}
        for key in LOG_FIELDS:
            value = entry.get(key, 0)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value) or value < 0:
                raise ServiceError(f"listening_log.{side}.{key} must be a non-negative number.", code="bad_log")
            clean[key] = round(float(value), 3) if key == "seconds" else int(value)
        log[side] = clean
    switches = raw.get("switches", 0)
    if isinstance(switches, bool) or not isinstance(switches, (int, float)) or switches < 0:
        raise ServiceError("listening_log.switches must be a non-negative number.", code="bad_log")
    log["switches"] = int(switches)
    return log


def listening_check(*, log: dict, study: Study, served_at, now) -> None:
    """The server's own listening rule, independent of the page.

    Each clip must have been heard for the study's minimum; and since A and B
    share one transport, the seconds heard cannot add up to more than the
    wall-clock time since the pair was served (a forged log is caught here).
    """
    minimum = study.min_listen_seconds
    for side in ("A", "B"):
        heard = log[side]["seconds"]
        if heard + 1e-6 < minimum:
            raise ServiceError(
                f"Listen to clip {side} for at least {minimum:g} s before answering (heard {heard:.1f} s).", code="listening_too_short"
            )
        if log[side]["plays"] < 1 and minimum > 0:
            raise ServiceError(f"Clip {side} was never played.", code="listening_too_short")
    elapsed = (now - served_at).total_seconds()
    # 2 s slack for clock granularity and network time between the last tick and the submit.
    if log["A"]["seconds"] + log["B"]["seconds"] > elapsed + 2.0:
        raise ServiceError(
            f"The listening log claims {log['A']['seconds'] + log['B']['seconds']:.0f} s of audio within {elapsed:.0f} s of the pair being served; it was refused.",
            code="listening_log_inconsistent",
        )


def _judgment_answer(judgment: Judgment) -> dict:
    return {"judgment": judgment.pk, "pair": judgment.pair_id, "created_at": judgment.created_at.isoformat()}


def judgment_submit(
    *,
    assignment_id: int,
    annotator,
    alignment: str,
    alignment_confidence,
    musicality: str,
    musicality_confidence,
    rationale: str = "",
    listening_log=None,
    time_on_page_ms: int | None = None,
    idempotency_key: str,
    now=None,
) -> tuple[dict, bool]:
    """Store the annotator's judgment on their assignment. Returns (answer, created).

    The same idempotency key twice returns the first answer and stores nothing new.
    """
    now = now or timezone.now()
    idempotency_key = (idempotency_key or "").strip()
    if not idempotency_key or len(idempotency_key) > 100:
        raise ServiceError("idempotency_key is required (1-100 characters, e.g. a UUID made by the page).", code="bad_idempotency_key")

    replay = Judgment.objects.filter(idempotency_key=idempotency_key).first()
    if replay is not None:
        if replay.annotator_id != annotator.pk or replay.assignment_id != assignment_id:
            raise ServiceError("This idempotency key was already used for another submission.", code="key_reused", status=409)
        return _judgment_answer(replay), False

    sides = {}
    for name, value in (("alignment", alignment), ("musicality", musicality)):
        if value not in ("A", "B"):
            raise ServiceError(f"{name}: choose A or B.", code="bad_choice")
        sides[name] = value
    conf_alignment = _confidence(alignment_confidence, "alignment_confidence")
    conf_musicality = _confidence(musicality_confidence, "musicality_confidence")
    rationale = (rationale or "").strip()
    if len(rationale) > 5000:
        raise ServiceError("Keep the rationale under 5000 characters.", code="too_long")
    log = listening_log_clean(listening_log)
    if time_on_page_ms is not None and (not isinstance(time_on_page_ms, int) or isinstance(time_on_page_ms, bool) or time_on_page_ms < 0):
        raise ServiceError("time_on_page_ms must be a non-negative integer.", code="bad_time")

    try:
        with transaction.atomic():
            pair_id = Assignment.objects.filter(pk=assignment_id, annotator=annotator).values_list("pair_id", flat=True).first()
            if pair_id is None:
                raise ServiceError("No such task for you.", code="not_found", status=404)
            pair = _lock_pair_blocking(pair_id)
            # A concurrent request with the same key may have committed while this one waited for the lock.
            replay = Judgment.objects.filter(idempotency_key=idempotency_key, annotator=annotator, assignment_id=assignment_id).first()
            if replay is not None:
                return _judgment_answer(replay), False
            # Read after the lock: a concurrent submit or skip may have changed it.
            assignment = Assignment.objects.get(pk=assignment_id)
            study = pair.study
            if assignment.state == Assignment.State.SUBMITTED or Judgment.objects.filter(annotator=annotator, pair=pair).exists():
                raise ServiceError("You already judged this pair; the first answer was kept.", code="already_submitted", status=409)
            if assignment.state == Assignment.State.SKIPPED:
                raise ServiceError("You skipped this pair; it cannot be judged now.", code="skipped", status=409)
            if len(rationale) < study.rationale_min_length:
                raise ServiceError(
                    f"Write a rationale of at least {study.rationale_min_length} characters (you wrote {len(rationale)}).", code="rationale_too_short"
                )
            listening_check(log=log, study=study, served_at=assignment.served_at, now=now)
            if assignment.state != Assignment.State.ACTIVE or assignment.lock_expires_at <= now:
                # The lock lapsed: accept only if the slot was not handed to someone else.
                others = _live_load([pair.pk], now)[pair.pk]
                if others >= pair.overlap:
                    raise ServiceError("Your time on this pair ran out and it went to another annotator; please take the next pair.", code="lock_expired", status=409)
            a_clip_id = assignment.a_clip_id
            b_clip_id = pair.other_clip_id(a_clip_id)
            pick = {"A": a_clip_id, "B": b_clip_id}
            judgment = Judgment.objects.create(
                annotator=annotator,
                pair=pair,
                assignment=assignment,
                a_clip_id=a_clip_id,
                alignment_choice_id=pick[sides["alignment"]],
                alignment_confidence=conf_alignment,
                musicality_choice_id=pick[sides["musicality"]],
                musicality_confidence=conf_musicality,
                rationale=rationale,
                listening_log=log,
                time_on_page_ms=time_on_page_ms,
                idempotency_key=idempotency_key,
                source=Judgment.Source.PLATFORM,
            )
            assignment.state = Assignment.State.SUBMITTED
            assignment.save(update_fields=["state"])
    except IntegrityError:
        # A concurrent duplicate (same key or same annotator+pair) won the race.
        replay = Judgment.objects.filter(idempotency_key=idempotency_key, annotator=annotator).first()
        if replay is not None:
            return _judgment_answer(replay), False
        raise ServiceError("You already judged this pair; the first answer was kept.", code="already_submitted", status=409) from None
    _after_judgment(judgment)
    return _judgment_answer(judgment), True


def _lock_pair_blocking(pair_id: int) -> Pair:
    # of=self: locking the joined study row too would serialise every submit in the study.
    return Pair.objects.select_for_update(of=("self",)).select_related("study").get(pk=pair_id)


# Hooks other apps register (e.g. live report refresh); called after the commit.
judgment_listeners: list = []


def _after_judgment(judgment: Judgment) -> None:
    for listener in judgment_listeners:
        # robust: a failing listener is logged; the stored judgment and the answer stand.
        transaction.on_commit(lambda listener=listener: listener(judgment), robust=True)
