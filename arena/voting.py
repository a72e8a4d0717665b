"""The vote's fast path: one statement claims the battle and reads everything the vote and its answer need.

A plain vote (the visitor's own battle, ready, not voted yet) is one transaction of two
statements: `UPDATE battle SET status = 'voted' WHERE ... AND status = 'ready' RETURNING`
the battle's row with the listening record, the day's vote count for the cap and what
the reveal shows (system names, clip lengths), then the INSERT of the vote. Any refusal
raised after the claim rolls it back. The row lock the UPDATE takes orders concurrent
votes on one battle: the second finds it no longer ready and takes the full path
(services.vote_submit), which tells a retry (same idempotency key) from a re-vote.
"""

from __future__ import annotations

from datetime import timedelta

from django.db import connection, transaction
from django.utils import timezone

from annotation.models import Clip, System
from common.precompiled import PrecompiledInsert, PreparedSQL

from .models import ArenaSystem, Battle, Visitor, Vote
from .selectors import SIDES, listen_seconds


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


def vote_cast(*, public_id, visitor: Visitor, choice: str, feedback: str, ip_hash: str, idempotency_key: str, check, on_commit, now=None):
    """(vote, battle) for a plain vote, or None when the battle is not the visitor's, not ready or already voted.

    `check(battle=, visitor=, recent_votes=, now=)` is the vote's rules (services.vote_rules_check): what it raises
    rolls the claim back; `on_commit` runs after the commit (the leaderboard refresh).
    """
    now = now or timezone.now()
    with transaction.atomic():
        battle = battle_claim(public_id=public_id, visitor=visitor, now=now)
        if battle is None:
            return None
        check(battle=battle, visitor=visitor, recent_votes=battle.recent_votes, now=now)
        vote = vote_insert(battle=battle, visitor=visitor, choice=choice, feedback=feedback, ip_hash=ip_hash, idempotency_key=idempotency_key)
        battle.status = Battle.Status.VOTED
        # robust: with the broker or cache down the vote still stands; the board catches up on the next vote.
        transaction.on_commit(on_commit, robust=True)
    return vote, battle


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
