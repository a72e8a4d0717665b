"""Writes for the arena: visitors and terms, battles and generation, listening, votes, health, leaderboard.

Rules that protect the data live here, not in the page: prompt limits and
moderation, capability-aware sampling, the minimum listening time (measured
from events as the server received them and the audio it sent, see
common.listening), one vote per battle, rate limits and the daily cap. Raw IP addresses never reach this module: callers pass a salted hash.
"""

from __future__ import annotations

import logging
import random
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, OperationalError, connection, transaction
from django.utils import timezone
from django.utils.module_loading import import_string

from annotation.models import Clip, System
from annotation.services import clip_ingest_array
from auditorium.celery import task
from common import audio_proof, listening
from common.cache import cache_forget, cache_get, cache_set_many
from common.debounce import debounced_apply
from common.deferred import deferred_rows
from common.errors import ServiceError
from common.precompiled import PrecompiledInsert, PreparedSQL
from common.rates import hit_many, salted_hash

from . import jobs, sampling
from .adapters import GenerationError, GenerationRequest, adapter_for, prompt_key, timed_generate
from .audio import receipts_store
from .boards import boards_all
from .leaderboard import MA_MIN_VOTES, MUSIC_ARENA, noisy_boards
from .levelling import prepare_audio
from .models import ArenaPrompt, ArenaSystem, Battle, Health, LeaderboardSnapshot, ListenEvent, RejectedVote, Visitor, Vote
from .moderation import REASON_TEXT, is_instrumental, moderate
from .selectors import (
    SIDES,
    board_intervals,
    listen_seconds,
    listening_record,
    systems_eligible,
    systems_metadata,
    vocal_systems,
    vote_rows,
    voter_vote_rows,
)
from .style import covariates_check

log = logging.getLogger(__name__)


class ArenaError(ServiceError):
    """An arena refusal; extras carry moderation reasons, Retry-After and heard seconds."""


# --- Visitors ------------------------------------------------------------------------


VISITOR_CACHE_SECONDS = 300


def _visitor_key(cookie_hash: str) -> str:
    return f"arena:visitor:{cookie_hash}"


def visitor_for_cookie(cookie: str | None) -> Visitor | None:
    """The visitor of this cookie, from the cache (dropped on every save of the visitor: terms, ban)."""
    if not cookie:
        return None
    cookie_hash = salted_hash("cookie", cookie, length=64)
    visitor = cache_get(_visitor_key(cookie_hash))
    if visitor is None:
        visitor = Visitor.objects.filter(cookie_hash=cookie_hash).first()
        if visitor is not None:
            cache_set_many({_visitor_key(cookie_hash): visitor}, VISITOR_CACHE_SECONDS)
    return visitor


def visitor_forget(sender=None, instance=None, **kwargs) -> None:
    cache_forget(_visitor_key(instance.cookie_hash))


def visitor_accept_terms(*, cookie: str | None, version: str) -> tuple[Visitor, str]:
    """Record acceptance of the current terms; returns (visitor, cookie value to set)."""
    current = settings.ARENA_TERMS_VERSION
    if version != current:
        raise ArenaError(f"These terms are out of date (version {version}); reload the page to read version {current}.", code="terms_outdated", status=409)
    visitor = visitor_for_cookie(cookie)
    if visitor is None:
        cookie = secrets.token_urlsafe(24)
        visitor = Visitor.objects.create(
            cookie_hash=salted_hash("cookie", cookie, length=64), pseudonym="u-" + salted_hash("user", cookie, length=20)
        )
    visitor.terms_version, visitor.terms_accepted_at = current, timezone.now()
    visitor.save(update_fields=["terms_version", "terms_accepted_at"])
    return visitor, cookie


def _require_terms(visitor: Visitor | None) -> Visitor:
    if visitor is None or visitor.terms_version != settings.ARENA_TERMS_VERSION:
        raise ArenaError("Please read and accept the arena terms first.", code="terms_required", status=403)
    if visitor.is_banned:
        raise ArenaError("Voting is closed for this browser.", code="banned", status=403)
    return visitor


def _limits(own: tuple[str, str, str, str], *, ip_hash: str = "", network: list[tuple[str, str, str]] = ()) -> None:
    """Count the request against `own` (scope, ident, rate setting, message), then each of `network`
    (scope, rate setting, message) for the address hash when there is one; 429 at the first one over."""
    limits = [own, *((scope, ip_hash, setting, message) for scope, setting, message in network if ip_hash)]
    over, retry = hit_many([(scope, ident, getattr(settings, setting)) for scope, ident, setting, _ in limits])
    if retry:
        raise ArenaError(f"{limits[over][3]} Please try again in {retry} s.", code="rate_limited", status=429, retry_after=retry)


# --- Prompts and battles -----------------------------------------------------------------


@dataclass(frozen=True)
class Route:
    prompt: str
    lyrics: str
    is_instrumental: bool
    is_prebaked: bool
    moderation: dict


def prompt_route(*, prompt: str, lyrics: str = "") -> Route:
    """Validate, moderate and route a prompt; refusals carry machine-readable reasons."""
    prompt, lyrics = (prompt or "").strip(), (lyrics or "").strip()
    low, high = settings.ARENA_PROMPT_MIN_CHARS, settings.ARENA_PROMPT_MAX_CHARS
    if len(prompt) < low:
        raise ArenaError(f"Describe the music in at least {low} characters.", code="prompt_too_short")
    if len(prompt) > high:
        raise ArenaError(f"The prompt is {len(prompt)} characters; the limit is {high}.", code="prompt_too_long")
    if len(lyrics) > settings.ARENA_LYRICS_MAX_CHARS:
        raise ArenaError(f"The lyrics are {len(lyrics)} characters; the limit is {settings.ARENA_LYRICS_MAX_CHARS}.", code="lyrics_too_long")
    verdict = moderate(prompt, lyrics)
    if not verdict["allowed"]:
        words = " ".join(REASON_TEXT.get(r, r) for r in verdict["reasons"])
        raise ArenaError(f"This prompt cannot be used. {words}", code="moderation", status=422, extra=verdict)
    key = prompt_key(prompt, lyrics)
    prebaked = ArenaPrompt.objects.filter(prompt_key=key, is_prebaked=True).exists()
    return Route(prompt=prompt, lyrics=lyrics, is_instrumental=is_instrumental(prompt, lyrics), is_prebaked=prebaked, moderation=verdict)


def systems_sample(*, is_instrumental: bool, seconds: float, key: str, rng: random.Random | None = None) -> tuple[ArenaSystem, ArenaSystem]:
    """Two distinct systems by weight from the capable, active, healthy pool; A/B order random."""
    return systems_pick(is_instrumental=is_instrumental, seconds=seconds, key=key, rng=rng)[:2]


def systems_pick(*, is_instrumental: bool, seconds: float, key: str, rng: random.Random | None = None) -> tuple[ArenaSystem, ArenaSystem, str, float]:
    """(system A, system B, sampling policy, probability of that pair) under ARENA_SAMPLING (arena.sampling)."""
    pool = systems_eligible(is_instrumental=is_instrumental, seconds=seconds, key=key)
    if len([s for s in pool if s.weight > 0]) < 2:
        kind = "instrumental" if is_instrumental else "vocal"
        raise ArenaError(f"Not enough {kind} systems are available right now; try again later or try a different prompt.", code="no_systems", status=503)
    policy = settings.ARENA_SAMPLING
    weights = {s.pk: s.weight for s in pool}
    if policy != sampling.INFORMATIVE:
        a, b = pair_draw(pool, rng=rng)
        return a, b, sampling.WEIGHTED, sampling.weighted_pairs(weights)[sampling.pair_key(a.pk, b.pk)]
    rng = rng or random.SystemRandom()
    board = board_intervals(board="instrumental" if is_instrumental else "vocal")
    intervals = {s.pk: board.get(s.system.name) for s in pool}
    probabilities = sampling.pair_probabilities(weights, policy=policy, intervals=intervals, floor=float(settings.ARENA_SAMPLING_FLOOR))
    (i, j), probability = sampling.pair_pick(probabilities, rng=rng)
    by_pk = {s.pk: s for s in pool}
    first, second = (by_pk[i], by_pk[j]) if rng.random() < 0.5 else (by_pk[j], by_pk[i])
    return first, second, policy, probability


def pair_draw(pool: list[ArenaSystem], *, rng: random.Random | None = None) -> tuple[ArenaSystem, ArenaSystem]:
    """First system by weight, then a second by weight among the rest; then a coin decides which is A."""
    rng = rng or random.SystemRandom()
    pool = [s for s in pool if s.weight > 0]
    first = rng.choices(pool, weights=[s.weight for s in pool])[0]
    rest = [s for s in pool if s.pk != first.pk]
    second = rng.choices(rest, weights=[s.weight for s in rest])[0]
    return (first, second) if rng.random() < 0.5 else (second, first)


def battle_create(*, visitor: Visitor | None, prompt: str, lyrics: str = "", ip_hash: str = "", rng: random.Random | None = None) -> Battle:
    """Route the prompt, pick two systems and queue both generations; the battle is ready when both clips are."""
    visitor = _require_terms(visitor)
    _limits(
        ("battle-v", str(visitor.pk), "ARENA_BATTLE_RATE", "You are starting battles very quickly."),
        ip_hash=ip_hash,
        network=[
            ("battle-ip", "ARENA_IP_BATTLE_RATE", "Too many battles from this network."),
            ("battle-ip-day", "ARENA_IP_DAILY_BATTLE_RATE", "This network has reached today's limit of battles."),
        ],
    )
    route = prompt_route(prompt=prompt, lyrics=lyrics)
    seconds = float(settings.ARENA_CLIP_SECONDS)
    key = prompt_key(route.prompt, route.lyrics)
    system_a, system_b, policy, probability = systems_pick(is_instrumental=route.is_instrumental, seconds=seconds, key=key, rng=rng)
    with transaction.atomic():
        battle = Battle.objects.create(
            visitor=visitor,
            ip_hash=ip_hash,
            prompt=route.prompt,
            lyrics=route.lyrics,
            is_prebaked=route.is_prebaked,
            is_instrumental=route.is_instrumental,
            duration_requested=seconds,
            seed=secrets.randbits(31),
            system_a=system_a,
            system_b=system_b,
            moderation=route.moderation,
            sampling_policy=policy,
            sampling_probability=probability,
        )
        for side, system in (("a", system_a), ("b", system_b)):
            jobs.generate_side_on_commit(battle_id=battle.pk, side=side, queue=adapter_for(system).queue)
    return battle


def vocals_present(result, *, battle: Battle, system: ArenaSystem) -> bool:
    """Whether a side's clip has vocals: the adapter's own report when it gives one, else the battle's
    route and the system's capability (a vocal battle sung by a system that sings)."""
    if result.vocals is not None:
        return bool(result.vocals)
    return (not battle.is_instrumental) and bool(system.supports_vocals)


def battle_generate_side(*, battle_id: int, side: str) -> Battle:
    """Generate one side (idempotent: a side that has its clip is left alone); mark the battle ready when both are."""
    battle = Battle.objects.select_related("system_a__system", "system_b__system").get(pk=battle_id)
    if battle.clip_for(side) is not None or battle.status == Battle.Status.FAILED:
        return battle
    system = battle.system_for(side)
    request = GenerationRequest(
        prompt=battle.prompt,
        lyrics=battle.lyrics,
        instrumental=battle.is_instrumental,
        seconds=battle.duration_requested,
        seed=battle.seed,
        sample_rate=int(settings.ARENA_SAMPLE_RATE),
    )
    try:
        result = timed_generate(adapter_for(system), request)
        if result.clip_id is not None:
            clip_id, generated = result.clip_id, result.loudness
        else:
            audio, generated = prepare_audio(result.audio, result.sample_rate, seconds=battle.duration_requested)
            if len(audio) < int(0.5 * settings.ARENA_SAMPLE_RATE):
                raise GenerationError(f"{system}: clip shorter than half a second")
            clip, _ = clip_ingest_array(audio=audio, sample_rate=int(settings.ARENA_SAMPLE_RATE), system=system.system, fmt="FLAC")
            clip_id = clip.pk
    except OperationalError:
        raise  # the database, not the system: the task retries
    except Exception as exc:  # any adapter fault fails this battle instead of leaving it "generating" forever
        if not isinstance(exc, GenerationError):
            log.exception("arena adapter raised unexpectedly", extra={"battle": battle.pk, "side": side})
            exc = GenerationError(f"{system}: {type(exc).__name__}: {exc}")
        log.warning("arena generation failed", extra={"battle": battle.pk, "side": side, "error": str(exc)})
        system_health_set(arena_system=system, healthy=False, detail=str(exc))
        Battle.objects.filter(pk=battle.pk, status=Battle.Status.GENERATING).update(status=Battle.Status.FAILED, error=str(exc)[:500])
        battle.refresh_from_db()
        return battle

    with transaction.atomic():
        locked = Battle.objects.select_for_update(no_key=True).get(pk=battle.pk)
        if locked.clip_for(side) is None and locked.status == Battle.Status.GENERATING:
            setattr(locked, f"clip_{side}_id", clip_id)
            setattr(locked, f"generation_seconds_{side}", round(float(result.generation_seconds or 0.0), 3))
            setattr(locked, f"loudness_lufs_{side}", None if generated is None else generated.lufs)
            setattr(locked, f"true_peak_{side}", None if generated is None else generated.true_peak_dbtp)
            setattr(locked, f"vocals_{side}", vocals_present(result, battle=locked, system=system))
            fields = [f"clip_{side}", f"generation_seconds_{side}", f"loudness_lufs_{side}", f"true_peak_{side}", f"vocals_{side}"]
            # Both clips arrive together: the page is told "ready" only once the second one is stored.
            if locked.clip_a_id and locked.clip_b_id:
                locked.status, locked.ready_at = Battle.Status.READY, timezone.now()
                fields += ["status", "ready_at"]
            locked.save(update_fields=fields)
    if system.health != Health.HEALTHY:
        system_health_set(arena_system=system, healthy=True, detail="generated")
    return locked


# --- Listening --------------------------------------------------------------------------


def listen_events_record(*, battle: Battle, visitor: Visitor | None, events: list[dict], receipts=None, now=None) -> dict:
    """Store a batch of play/pause/seek/switch/tick/ended events stamped with the server's arrival time, and the
    page's receipts for the audio it received (common.audio_proof: only proven responses count as sent).

    Returns the seconds heard per side as the server counts them (common.listening),
    how many events were new and how many were ignored as already received (a replay),
    and the last event number received. A receipt that fails its check refuses the whole post, nothing stored.
    """
    visitor = _require_terms(visitor)
    if battle.visitor_id != visitor.pk:
        raise ArenaError("No such battle.", code="not_found", status=404)
    _limits(("events", str(visitor.pk), "ARENA_EVENT_RATE", "Too many listening events."))
    # The audio notes this process queued before now (a batch being written included) are in the database first.
    deferred_rows.flush()
    with transaction.atomic():
        # The row lock orders concurrent posts for one battle: numbers and times then grow together. FOR NO KEY
        # UPDATE, not FOR UPDATE: the audio notes written here (the flush) or by other processes are rows of other
        # battles, whose inserts take KEY SHARE locks that FOR UPDATE blocks, so two posts could wait on each other.
        locked = Battle.objects.select_for_update(no_key=True).get(pk=battle.pk)
        if locked.status != Battle.Status.READY:
            raise ArenaError("This battle is not open for listening.", code="not_listening", status=409)
        fresh, ignored = listening.events_clean(events, sides=SIDES, last_seq=locked.listen_seq) if events else ([], 0)
        proven = receipts_store(battle=locked, receipts=receipts, now=now)
        if proven and not fresh:
            locked.listening = listening_record(locked)
            locked.save(update_fields=["listening"])
        listening.events_append(
            locked, fresh, event_model=ListenEvent, owner_field="battle", seq_field="listen_seq", record=listening_record, limit=settings.ARENA_MAX_EVENTS_PER_BATTLE, now=now,
            full=lambda: ArenaError("This battle has recorded as many listening events as it can.", code="too_many_events", status=429, retry_after=60),
        )
    return {"heard": listen_seconds(locked), "accepted": len(fresh), "ignored": ignored, "last_seq": locked.listen_seq}


# --- Votes -------------------------------------------------------------------------------


# The fast path: a plain vote (the visitor's own battle, ready, not voted yet) is one transaction of two
# statements: `UPDATE battle SET status = 'voted' WHERE ... AND status = 'ready' RETURNING` the battle's
# row with the listening record, the day's vote count for the cap and what the reveal shows (system
# names, clip lengths), then the INSERT of the vote. Any refusal raised after the claim rolls it back.
# The row lock the UPDATE takes orders concurrent votes on one battle: the second finds it no longer
# ready and takes the full path (vote_submit), which tells a retry (same idempotency key) from a re-vote.


def _claim_sql(connection) -> str:
    qn = connection.ops.quote_name
    table = qn(Battle._meta.db_table)
    columns = ", ".join(f"{table}.{qn(field.column)}" for field in Battle._meta.concrete_fields)
    clip, arena_system, system = (qn(m._meta.db_table) for m in (Clip, ArenaSystem, System))
    per_side = []
    for side in SIDES:
        per_side += [
            f"(SELECT c.duration FROM {clip} c WHERE c.id = {table}.clip_{side}_id) AS clip_{side}_duration",
            f"(SELECT a.is_private FROM {arena_system} a WHERE a.id = {table}.system_{side}_id) AS system_{side}_private",
            f"(SELECT s.id FROM {arena_system} a JOIN {system} s ON s.id = a.system_id WHERE a.id = {table}.system_{side}_id) AS system_{side}_system_id",
            f"(SELECT s.name FROM {arena_system} a JOIN {system} s ON s.id = a.system_id WHERE a.id = {table}.system_{side}_id) AS system_{side}_name",
            f"(SELECT s.organisation FROM {arena_system} a JOIN {system} s ON s.id = a.system_id WHERE a.id = {table}.system_{side}_id) AS system_{side}_organisation",
        ]
    vote = qn(Vote._meta.db_table)
    return (
        f"UPDATE {table} SET status = %s WHERE public_id = %s AND visitor_id = %s AND status = %s "
        f"RETURNING {columns}, {', '.join(per_side)}, "
        f"(SELECT COUNT(*) FROM {vote} v WHERE v.visitor_id = %s AND v.created_at >= %s) AS recent_votes"
    )


# Built once per process and vendor; a prepared statement of the session on PostgreSQL.
CLAIM = PreparedSQL(_claim_sql)
_EXTRA = [
    f"{prefix}_{side}_{suffix}"
    for side in SIDES
    for prefix, suffix in (("clip", "duration"), ("system", "private"), ("system", "system_id"), ("system", "name"), ("system", "organisation"))
] + ["recent_votes"]


_converters: dict = {}


def _battle_from_row(row, connection) -> Battle:
    """The battle of the claim's row, its fields through the converters the ORM applies (JSON, dates, UUIDs)."""
    fields = Battle._meta.concrete_fields
    converters = _converters.get(connection.vendor)
    if converters is None:
        columns = [field.get_col(Battle._meta.db_table) for field in fields]
        converters = _converters[connection.vendor] = [
            (column, connection.ops.get_db_converters(column) + field.get_db_converters(connection)) for field, column in zip(fields, columns)
        ]
    values = []
    for (column, field_converters), value in zip(converters, row):
        if value is not None:
            for converter in field_converters:
                value = converter(value, column, connection)
        values.append(value)
    battle = Battle.from_db(connection.alias, [field.attname for field in fields], values)
    for name, value in zip(_EXTRA, row[len(fields) :]):
        setattr(battle, name, value)
    return battle


def battle_claim(*, public_id, visitor: Visitor, now) -> Battle | None:
    """Mark the visitor's ready battle voted (inside the caller's transaction) and return it, loaded for the answer; None if it is not that."""
    since = now - timedelta(days=1)
    params = [
        Battle.Status.VOTED,
        Battle._meta.get_field("public_id").get_db_prep_value(public_id, connection),
        visitor.pk,
        Battle.Status.READY,
        visitor.pk,
        connection.ops.adapt_datetimefield_value(since),
    ]
    row = CLAIM.first(connection, params)
    if row is None:
        return None
    battle = _battle_from_row(row, connection)
    battle.visitor = visitor
    for side in SIDES:
        arena_system = ArenaSystem(id=getattr(battle, f"system_{side}_id"), is_private=bool(getattr(battle, f"system_{side}_private")))
        arena_system.system = System(
            id=getattr(battle, f"system_{side}_system_id"), name=getattr(battle, f"system_{side}_name"), organisation=getattr(battle, f"system_{side}_organisation")
        )
        setattr(battle, f"system_{side}", arena_system)
        clip_id = getattr(battle, f"clip_{side}_id")
        if clip_id is not None:
            setattr(battle, f"clip_{side}", Clip.from_db(connection.alias, ["id", "duration"], [clip_id, getattr(battle, f"clip_{side}_duration")]))
    return battle


VOTE_INSERT = PrecompiledInsert(Vote)


def vote_insert(*, battle: Battle, visitor: Visitor, choice: str, feedback: str, ip_hash: str, idempotency_key: str) -> Vote:
    """The vote's row, with the heard seconds of the server's record; both paths call it inside their transaction."""
    heard = listen_seconds(battle)
    return VOTE_INSERT.create(
        battle=battle,
        visitor=visitor,
        choice=choice,
        feedback=feedback,
        listen_seconds_a=heard["a"],
        listen_seconds_b=heard["b"],
        ip_hash=ip_hash,
        idempotency_key=idempotency_key,
    )


def _reject(*, battle: Battle | None, visitor: Visitor | None, choice: str, reason: str, ip_hash: str) -> None:
    RejectedVote.objects.create(battle=battle, visitor=visitor, choice=str(choice)[:20], reason=reason, ip_hash=ip_hash)


def _vote_replay(*, battle: Battle, visitor: Visitor, idempotency_key: str) -> Vote | None:
    """The stored vote if this request is a retry of it (same visitor, battle and key)."""
    if not idempotency_key:
        return None
    vote = Vote.objects.filter(battle=battle, visitor=visitor, idempotency_key=idempotency_key).first()
    if vote is not None:
        vote.replayed = True
    return vote


def _listening_recounted(battle: Battle, need: float) -> tuple[list[tuple[str, float, bool]], dict]:
    """The shortfalls of the battle's record counted again from its rows, stored when that clears them.

    The record kept on the battle is counted at each events post. An audio note taken by another server
    process reaches the database a moment later (common deferred rows), and a vote can come before any
    event or after a fetch that followed the last one: before refusing, the same rules run once more on
    what is stored now."""
    record = listening_record(battle)
    short = listening.shortfalls(record, sides=SIDES, minimum=need)
    if not short:
        battle.listening = record
        Battle.objects.filter(pk=battle.pk).update(listening=record)
    return short, record


def _vote_input_clean(*, choice: str, feedback: str) -> str:
    """The vote's own fields: a known choice and feedback within the limit; the feedback, stripped."""
    if choice not in Vote.Choice.values:
        raise ArenaError("Vote a, b, tie or both_bad.", code="bad_vote")
    feedback = (feedback or "").strip()
    if len(feedback) > settings.ARENA_FEEDBACK_MAX_CHARS:
        raise ArenaError(f"Feedback is limited to {settings.ARENA_FEEDBACK_MAX_CHARS} characters.", code="feedback_too_long")
    return feedback


def vote_rules_check(*, battle: Battle, visitor: Visitor, recent_votes: int, now) -> None:
    """The rules a vote on a battle the visitor holds (claimed or locked) must meet: the daily cap, then enough of each clip heard.

    The one statement of them for both paths: vote_fast and vote_submit call it in their transaction.
    """
    cap = settings.ARENA_DAILY_VOTE_CAP
    if cap and recent_votes >= cap:
        oldest = Vote.objects.filter(visitor=visitor, created_at__gte=now - timedelta(days=1)).order_by("created_at").values_list("created_at", flat=True).first() or now
        retry = max(1, int((oldest + timedelta(days=1) - now).total_seconds()) + 1)
        raise ArenaError(f"You have reached today's limit of {cap} votes. Thank you!", code="daily_cap", status=429, retry_after=retry)
    need = float(settings.ARENA_MIN_LISTEN_SECONDS)
    short = listening.shortfalls(battle.listening, sides=SIDES, minimum=need)
    if short:
        short, record = _listening_recounted(battle, need)
    if short:
        # A side sent but not proven was fetched: the proof sentence says what is missing instead.
        unproven = [side for side, _, _ in short if side in record.get("unproven", [])]
        short = [(side.upper(), seconds, fetched or side in unproven) for side, seconds, fetched in short]
        raise ArenaError(
            listening.shortfall_message(short, minimum=need, label="clip", action="voting") + audio_proof.unproven_sentence([side.upper() for side in unproven]),
            code="listen_required",
            status=403,
            extra={"heard": listen_seconds(battle), "min_listen_seconds": need},
        )


def vote_fast(*, public_id, visitor: Visitor | None, choice: str, feedback: str = "", ip_hash: str = "", idempotency_key: str = "", now=None):
    """A plain vote (own battle, ready, not voted) in one transaction of two statements; (vote, battle), or None for vote_submit's full path.

    The same checks and refusals as vote_submit; the rate limits are counted here, so the
    full path after a None is told not to count them again.
    """
    visitor = _require_terms(visitor)
    idempotency_key = (idempotency_key or "").strip()[:100]
    try:
        _vote_limits(visitor=visitor, ip_hash=ip_hash)
        feedback = _vote_input_clean(choice=choice, feedback=feedback)
        deferred_rows.flush()  # the recount before a refusal reads the audio notes this process queued
        now = now or timezone.now()
        with transaction.atomic():
            battle = battle_claim(public_id=public_id, visitor=visitor, now=now)
            if battle is None:
                return None
            # What the rules raise rolls the claim back.
            vote_rules_check(battle=battle, visitor=visitor, recent_votes=battle.recent_votes, now=now)
            vote = vote_insert(battle=battle, visitor=visitor, choice=choice, feedback=feedback, ip_hash=ip_hash, idempotency_key=idempotency_key)
            battle.status = Battle.Status.VOTED
            # robust: with the broker or cache down the vote still stands; the board catches up on the next vote.
            transaction.on_commit(leaderboard_queue_refresh, robust=True)
        return vote, battle
    except ArenaError as exc:
        battle = Battle.objects.filter(public_id=public_id, visitor=visitor).first()
        _reject(battle=battle, visitor=visitor, choice=choice, reason=exc.code, ip_hash=ip_hash)
        raise


def _vote_limits(*, visitor: Visitor, ip_hash: str) -> None:
    _limits(
        ("vote-v", str(visitor.pk), "ARENA_VOTE_RATE", "You are voting very quickly."),
        ip_hash=ip_hash,
        network=[
            ("vote-ip", "ARENA_IP_VOTE_RATE", "Too many votes from this network."),
            ("vote-ip-day", "ARENA_IP_DAILY_VOTE_RATE", "This network has reached today's limit of votes."),
        ],
    )


def vote_submit(
    *, battle: Battle, visitor: Visitor | None, choice: str, feedback: str = "", ip_hash: str = "", idempotency_key: str = "", now=None, limits_counted: bool = False
) -> Vote:
    """One blind vote per battle; refused (and logged) if repeated, too early, too fast or over the daily cap.

    A retry carrying the first request's idempotency key gets the stored vote back
    (vote.replayed is True) instead of a refusal: a lost response must not look like a re-vote.
    """
    visitor = _require_terms(visitor)
    if battle.visitor_id != visitor.pk:
        raise ArenaError("No such battle.", code="not_found", status=404)
    idempotency_key = (idempotency_key or "").strip()[:100]
    replay = _vote_replay(battle=battle, visitor=visitor, idempotency_key=idempotency_key)
    if replay is not None:
        return replay
    try:
        if not limits_counted:
            _vote_limits(visitor=visitor, ip_hash=ip_hash)
        now = now or timezone.now()
        feedback = _vote_input_clean(choice=choice, feedback=feedback)
        deferred_rows.flush()
        with transaction.atomic():
            locked = Battle.objects.select_for_update(no_key=True).get(pk=battle.pk)
            replay = _vote_replay(battle=locked, visitor=visitor, idempotency_key=idempotency_key)
            if replay is not None:
                return replay
            if locked.status == Battle.Status.VOTED or Vote.objects.filter(battle=locked).exists():
                raise ArenaError("You already voted on this battle; votes cannot be changed.", code="already_voted", status=409)
            if locked.status != Battle.Status.READY:
                raise ArenaError("This battle is not ready for a vote.", code="not_ready", status=409)
            recent_votes = Vote.objects.filter(visitor=visitor, created_at__gte=now - timedelta(days=1)).count()
            vote_rules_check(battle=locked, visitor=visitor, recent_votes=recent_votes, now=now)
            vote = vote_insert(battle=locked, visitor=visitor, choice=choice, feedback=feedback, ip_hash=ip_hash, idempotency_key=idempotency_key)
            locked.status = Battle.Status.VOTED
            locked.save(update_fields=["status"])
            # robust: with the broker or cache down the vote still stands; the board catches up on the next vote.
            transaction.on_commit(leaderboard_queue_refresh, robust=True)
        return vote
    except IntegrityError:
        # A concurrent submit won the unique constraint: a retry of it, or a re-vote.
        replay = _vote_replay(battle=battle, visitor=visitor, idempotency_key=idempotency_key)
        if replay is not None:
            return replay
        _reject(battle=battle, visitor=visitor, choice=choice, reason="already_voted", ip_hash=ip_hash)
        raise ArenaError("You already voted on this battle; votes cannot be changed.", code="already_voted", status=409) from None
    except ArenaError as exc:
        _reject(battle=battle, visitor=visitor, choice=choice, reason=exc.code, ip_hash=ip_hash)
        raise


# --- Systems -----------------------------------------------------------------------------


def system_health_set(*, arena_system: ArenaSystem, healthy: bool, detail: str = "") -> None:
    state = Health.HEALTHY if healthy else Health.UNHEALTHY
    ArenaSystem.objects.filter(pk=arena_system.pk).update(health=state, health_detail=detail[:500], health_checked_at=timezone.now())
    arena_system.health, arena_system.health_detail = state, detail[:500]


def system_health_check(*, arena_system: ArenaSystem) -> bool:
    """Probe the adapter; an unhealthy system leaves the sampling pool until a later check passes."""
    try:
        ok, detail = adapter_for(arena_system).health()
    except Exception as exc:  # a broken config must not stop the other checks
        ok, detail = False, f"health check error: {exc}"
    system_health_set(arena_system=arena_system, healthy=ok, detail=detail)
    return ok


# --- Leaderboard -------------------------------------------------------------------------


def leaderboard_options(method: str | None = None) -> dict:
    """The board options from the settings, for `method` (default ARENA_LEADERBOARD_METHOD).

    Music Arena's method has its own fixed rules (both_bad dropped, no anchor, 30-vote threshold);
    only the bootstrap rounds and seed carry over to it.
    """
    method = method or settings.ARENA_LEADERBOARD_METHOD
    options = {"method": method, "rounds": int(settings.ARENA_LEADERBOARD_ROUNDS), "seed": int(settings.ARENA_LEADERBOARD_SEED)}
    if method == MUSIC_ARENA:
        return {**options, "min_votes": MA_MIN_VOTES}
    covariates = covariates_check(settings.ARENA_STYLE_COVARIATES)
    return {
        **options,
        # The live board fits style control beside the plain board unless no covariate is named.
        "style": covariates or None,
        "both_bad": settings.ARENA_LEADERBOARD_BOTH_BAD,
        "anchor": settings.ARENA_LEADERBOARD_ANCHOR,
        "anchor_rating": float(settings.ARENA_LEADERBOARD_ANCHOR_RATING),
        "min_votes": int(settings.ARENA_LEADERBOARD_MIN_VOTES),
    }


def leaderboard_extras() -> dict:
    """The category boards' and the outlier screen's options from the settings (arena/boards.py)."""
    return {
        "categories": {"tagger": import_string(settings.ARENA_PROMPT_TAGGER), "min_votes_board": int(settings.ARENA_CATEGORY_MIN_VOTES)},
        "screen": {
            "fp_rate": float(settings.ARENA_OUTLIER_FP_RATE),
            "min_votes": int(settings.ARENA_OUTLIER_MIN_VOTES),
            "simulations": int(settings.ARENA_OUTLIER_SIMULATIONS),
            "seed": int(settings.ARENA_LEADERBOARD_SEED),
        },
    }


def leaderboard_payload(*, until=None, **overrides) -> tuple[dict, int]:
    """The boards (plain and style-controlled, per category, screened) of the votes cast before `until` (all: None), and how many votes.

    Options are the live board's settings, `overrides` replacing any of them.
    """
    rows, hidden = vote_rows(until=until)
    options = {**leaderboard_options(overrides.get("method")), **overrides}
    if options["method"] != MUSIC_ARENA:
        options = {**leaderboard_extras(), **options}
    payload = boards_all(rows, hidden=hidden, vocal=vocal_systems(), **options)
    payload["systems"] = systems_metadata(until=until)
    return payload, len(rows)


def leaderboard_refresh(**overrides) -> LeaderboardSnapshot:
    """Refit the boards from every stored vote and keep the result as the latest snapshot."""
    payload, votes = leaderboard_payload(**overrides)
    options = {**leaderboard_options(overrides.get("method")), **overrides}
    # Beside the plain board: the same votes with each voter's reliability modelled.
    hidden = set(ArenaSystem.objects.filter(is_private=True).values_list("system__name", flat=True))
    payload["noisy"] = noisy_boards(voter_vote_rows(), seed=options["seed"], hidden=hidden)
    payload["computed_at"] = timezone.now().isoformat()
    snapshot = LeaderboardSnapshot.objects.create(votes=votes, payload=payload)
    # Keep a short history only; the board can always be rebuilt from the votes.
    stale = LeaderboardSnapshot.objects.order_by("-id").values_list("id", flat=True)[20:]
    LeaderboardSnapshot.objects.filter(id__in=list(stale)).delete()
    return snapshot


def leaderboard_queue_refresh() -> bool:
    """Debounce: one refit per window however many votes arrive in it; True if this call queued it."""
    return debounced_apply(task(jobs.LEADERBOARD_REFRESH), key=jobs.LEADERBOARD_PENDING_KEY, delay=int(settings.ARENA_LEADERBOARD_DEBOUNCE_SECONDS))
