"""Reads for the arena: eligible systems, heard seconds, what a visitor may see, vote rows for the board."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.urls import reverse
from django.utils import timezone

from common import listening
from common.deferred import deferred_rows

from .adapters import adapter_for
from .leaderboard import VoteRow
from .models import ArenaSystem, Battle, BattleAudioFetch, Health, LeaderboardSnapshot, ListenEvent, ReleaseBuild, Vote

SIDES = ("a", "b")
PRIVATE_LABEL = "Pre-release system (named in the next data release)"


def systems_eligible(*, is_instrumental: bool, seconds: float, key: str) -> list[ArenaSystem]:
    """Active, not unhealthy, capable of this kind of prompt and length; catalog systems only for prompts they hold."""
    query = ArenaSystem.objects.select_related("system").filter(is_active=True, max_duration_seconds__gte=seconds).exclude(health=Health.UNHEALTHY)
    query = query.filter(supports_instrumental=True) if is_instrumental else query.filter(supports_vocals=True)
    return [s for s in query.order_by("pk") if adapter_for(s).can_serve(prompt_key=key)]


def listening_record(battle: Battle) -> dict:
    """The battle's listening record from its stored events and audio fetches (common.listening.evidence)."""
    deferred_rows.flush()  # this process's queued audio notes first (common/deferred.py)
    events = [
        listening.Event(seq=seq or 0, side=side, kind=kind, at=at)
        for seq, side, kind, at in ListenEvent.objects.filter(battle=battle).values_list("seq", "side", "kind", "server_time")
    ]
    fetches = [
        listening.Fetch(side=side, first_byte=first, last_byte=last, total_bytes=total, at=at)
        for side, first, last, total, at in BattleAudioFetch.objects.filter(battle=battle).values_list("side", "first_byte", "last_byte", "total_bytes", "served_at")
    ]
    return listening.evidence(events=events, fetches=fetches, durations=dict.fromkeys(SIDES, battle.duration_requested))


def listen_seconds(battle: Battle) -> dict[str, float]:
    """Seconds each side was heard, as the server counted them at the last events post (kept on the battle)."""
    return listening.heard(battle.listening, SIDES)


def battle_audio_url(battle: Battle, side: str) -> str:
    return reverse("arena:audio", kwargs={"public_id": battle.public_id, "side": side})


def battle_state(battle: Battle, *, now=None, vote: Vote | None = None) -> dict:
    """What the visitor may see. Before the vote: no system name, no timing, opaque audio URLs; the same keys for every system.

    `vote`: the battle's vote when the caller has it in hand (the vote's own answer).
    """
    ready = battle.status in (Battle.Status.READY, Battle.Status.VOTED)
    if vote is None and battle.status == Battle.Status.VOTED:
        vote = Vote.objects.filter(battle=battle).first()
    state = {
        "id": str(battle.public_id),
        "status": battle.status,
        "prompt": battle.prompt,
        "lyrics": battle.lyrics,
        "is_instrumental": battle.is_instrumental,
        "progress": {"ready": int(battle.clip_a_id is not None) + int(battle.clip_b_id is not None), "total": 2},
        "audio": {side: battle_audio_url(battle, side) for side in ("a", "b")} if ready else None,
        "min_listen_seconds": float(settings.ARENA_MIN_LISTEN_SECONDS),
        "heard": listen_seconds(battle),
        "listen_seq": battle.listen_seq,
        "vote": None,
        "reveal": None,
        "message": "",
    }
    if battle.status == Battle.Status.FAILED:
        state["message"] = "One of the two systems could not finish this time. Please start a new battle."
    if vote is not None:
        state["vote"] = vote.choice
        state["reveal"] = {
            side: {
                # Pre-release systems stay unnamed until the data release discloses them.
                "system": PRIVATE_LABEL if battle.system_for(side).is_private else battle.system_for(side).system.name,
                "organisation": "" if battle.system_for(side).is_private else battle.system_for(side).system.organisation,
                "generation_seconds": getattr(battle, f"generation_seconds_{side}"),
                "duration": battle.clip_for(side).duration,
            }
            for side in ("a", "b")
        }
    return state


RESUME_WITHIN = timedelta(hours=2)


def battle_to_resume(visitor, *, now=None) -> Battle | None:
    """The visitor's latest battle still waiting for their vote, so a reload picks it up again."""
    if visitor is None:
        return None
    now = now or timezone.now()
    return (
        Battle.objects.filter(visitor=visitor, status__in=(Battle.Status.GENERATING, Battle.Status.READY), created_at__gte=now - RESUME_WITHIN)
        .order_by("-created_at", "-id")
        .first()
    )


def vote_rows(*, since=None) -> tuple[list[VoteRow], set[str]]:
    """Every stored vote as (system_a, system_b, vote, instrumental, seeded), and the names of private systems."""
    query = Vote.objects.order_by("id").values_list(
        "battle__system_a__system__name", "battle__system_b__system__name", "choice", "battle__is_instrumental", "source"
    )
    if since is not None:
        query = query.filter(created_at__gte=since)
    rows = [VoteRow(a, b, choice, instrumental, source == Vote.Source.SEEDED) for a, b, choice, instrumental, source in query]
    hidden = set(ArenaSystem.objects.filter(is_private=True).values_list("system__name", flat=True))
    return rows, hidden


def voter_vote_rows() -> list[tuple[str, str, str, str, bool]]:
    """(voter pseudonym, system A, system B, vote, instrumental) for every stored vote."""
    return list(
        Vote.objects.order_by("id").values_list(
            "visitor__pseudonym", "battle__system_a__system__name", "battle__system_b__system__name", "choice", "battle__is_instrumental"
        )
    )


def vocal_systems() -> set[str]:
    """Names of the systems that can sing lyrics (Music Arena's boards are split by this capability)."""
    return set(ArenaSystem.objects.filter(supports_vocals=True).values_list("system__name", flat=True))


def leaderboard_latest() -> dict | None:
    snapshot = LeaderboardSnapshot.objects.order_by("-id").first()
    return None if snapshot is None else snapshot.payload


def board_intervals(*, board: str) -> dict[str, tuple[float, float]]:
    """System name -> (lower, upper) rating interval on the latest snapshot's board; empty before the first fit."""
    payload = leaderboard_latest() or {}
    rows = ((payload.get("boards") or {}).get(board) or {}).get("rows") or []
    return {r["system"]: (float(r["lower"]), float(r["upper"])) for r in rows if r.get("lower") is not None and r.get("upper") is not None}


def votes_today(visitor) -> int:
    return Vote.objects.filter(visitor=visitor, created_at__gte=timezone.now() - timedelta(days=1)).count()


# --- Release builds (the release page) ---------------------------------------------------------


def release_builds(*, everyone: bool, limit: int = 20) -> list[ReleaseBuild]:
    """Builds newest first; the public sees finished ones only (no failures, no names)."""
    query = ReleaseBuild.objects.select_related("created_by")
    if everyone:
        query = query.filter(state=ReleaseBuild.State.DONE)
    return list(query[:limit])


def release_build_status(build: ReleaseBuild) -> dict:
    return {
        "id": build.pk,
        "state": build.state,
        "stage": build.stage,
        "done": build.done,
        "total": build.total,
        "battles": build.battles,
        "audio_files": build.audio_files,
        "include_seeded": build.include_seeded,
        "size_bytes": build.size_bytes,
        "error": build.error,
    }


def voted_battles() -> dict[str, int]:
    """Voted battles by where the vote came from: visitors, and the seeded demo votes a release leaves out unless asked."""
    seeded = Vote.objects.filter(source=Vote.Source.SEEDED).count()
    return {"visitor": Vote.objects.count() - seeded, "seeded": seeded}
