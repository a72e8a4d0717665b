"""Reads for the arena: eligible systems, heard seconds, what a visitor may see, vote rows for the board."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.urls import reverse
from django.utils import timezone

from common import listening
from common.deferred import deferred_rows

from .adapters import adapter_for
from .leaderboard import BOARDS, VoteRow, vote_row_of
from .models import AdapterKind, ArenaSystem, Battle, BattleAudioFetch, BattleAudioReceipt, BoardSnapshot, Health, LeaderboardSnapshot, ListenEvent, ReleaseBuild, Vote

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
    # Only responses the visitor proved receiving (an answered Audio-Proof, BattleAudioReceipt) count as sent.
    proven = set(BattleAudioReceipt.objects.filter(battle=battle).values_list("side", "first_byte", "last_byte"))
    fetches = [
        listening.Fetch(side=side, first_byte=first, last_byte=last, total_bytes=total, at=at, proven=(side, first, last) in proven)
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


# The battle fields a board reads, as release columns (arena/release.py names them the same).
VOTE_FIELDS = {
    "system_a": "battle__system_a__system__name",
    "system_b": "battle__system_b__system__name",
    "vote": "choice",
    "is_instrumental": "battle__is_instrumental",
    "source": "source",
    "user_id": "visitor__pseudonym",
    "prompt": "battle__prompt",
    "lyrics": "battle__lyrics",
    "is_prebaked": "battle__is_prebaked",
    "duration_a": "battle__clip_a__duration",
    "duration_b": "battle__clip_b__duration",
    "loudness_lufs_a": "battle__loudness_lufs_a",
    "loudness_lufs_b": "battle__loudness_lufs_b",
    "true_peak_a": "battle__true_peak_a",
    "true_peak_b": "battle__true_peak_b",
    "vocals_a": "battle__vocals_a",
    "vocals_b": "battle__vocals_b",
    "generation_seconds_a": "battle__generation_seconds_a",
    "generation_seconds_b": "battle__generation_seconds_b",
}


def vote_rows(*, since=None, until=None) -> tuple[list[VoteRow], set[str]]:
    """Every stored vote (cast in [since, until) when given) as a board reads it, and the names of private systems."""
    query = Vote.objects.order_by("id")
    if since is not None:
        query = query.filter(created_at__gte=since)
    if until is not None:
        query = query.filter(created_at__lt=until)
    keys = list(VOTE_FIELDS)
    rows = []
    for values in query.values_list(*VOTE_FIELDS.values(), "created_at"):
        row = dict(zip(keys, values[:-1], strict=True))
        row["timestamp"] = values[-1].timestamp()
        rows.append(vote_row_of(row))
    hidden = set(ArenaSystem.objects.filter(is_private=True).values_list("system__name", flat=True))
    return rows, hidden


def voter_vote_rows() -> list[tuple[str, str, str, str, bool]]:
    """(voter pseudonym, system A, system B, vote, instrumental) for every stored vote."""
    return list(
        Vote.objects.order_by("id").values_list(
            "visitor__pseudonym", "battle__system_a__system__name", "battle__system_b__system__name", "choice", "battle__is_instrumental"
        )
    )


def rating_history(*, system: str | None = None) -> dict:
    """Per board, per system: its ratings at each snapshot, oldest first (plain, with interval and rank; and style-controlled when fitted).

    `system` narrows it to one system; the systems a snapshot lists are its public, ranked ones.
    """
    snapshots = list(BoardSnapshot.objects.order_by("cutoff", "id"))
    points = [
        {"id": s.pk, "kind": s.kind, "period": s.period, "cutoff": s.cutoff.isoformat(), "votes": s.votes}
        for s in snapshots
    ]
    series: dict[str, dict[str, list[dict]]] = {board: {} for board in BOARDS}
    for s in snapshots:
        for board in BOARDS:
            data = (s.payload.get("boards") or {}).get(board) or {}
            styled = {r["system"]: r for r in (data.get("style") or {}).get("rows") or []}
            for row in data.get("rows") or []:
                if system is not None and row["system"] != system:
                    continue
                style = styled.get(row["system"])
                series[board].setdefault(row["system"], []).append(
                    {
                        "snapshot": s.pk,
                        "period": s.period,
                        "cutoff": s.cutoff.isoformat(),
                        "rating": row["rating"],
                        "lower": row["lower"],
                        "upper": row["upper"],
                        "rank": row["rank"],
                        "votes": row["votes"],
                        "style_rating": None if style is None else style["rating"],
                        "style_interval": None if style is None else style["interval"],
                        "style_rank": None if style is None else style["rank"],
                    }
                )
    return {"snapshots": points, "boards": series}


def median_real_time_factor(pairs) -> tuple[float | None, int]:
    """The median of generation seconds / clip seconds over (generation seconds, duration) pairs with both, and how many there were."""
    factors = sorted(g / d for g, d in pairs if g is not None and d)
    if not factors:
        return None, 0
    mid = len(factors) // 2
    value = factors[mid] if len(factors) % 2 else (factors[mid - 1] + factors[mid]) / 2
    return round(value, 4), len(factors)


def systems_metadata(*, until=None) -> dict[str, dict]:
    """The public systems' organisation, licence, training data, open weights and measured real-time factor.

    The real-time factor is the median over the system's generated clips (battles created before `until`,
    when given) of the seconds the arena waited for a clip over the clip's length: under 1 is faster
    than real time. Catalog systems serve stored clips, so theirs is not measured (None).
    """
    battles = Battle.objects.exclude(status=Battle.Status.FAILED)
    if until is not None:
        battles = battles.filter(created_at__lt=until)
    timings: dict[int, list] = {}
    for side in SIDES:
        for system_id, waited, duration in battles.filter(**{f"clip_{side}__isnull": False}).values_list(f"system_{side}_id", f"generation_seconds_{side}", f"clip_{side}__duration"):
            timings.setdefault(system_id, []).append((waited, duration))
    systems = ArenaSystem.objects.select_related("system").filter(is_private=False).order_by("system__name")
    return {system.name: system_metadata(system, timings.get(system.pk, [])) for system in systems}


def system_metadata(system: ArenaSystem, timings: list) -> dict:
    """One system's metadata as the board and the release give it, with the real-time factor of these
    (generation seconds, clip seconds) timings (none for catalog systems, which do not generate)."""
    rtf, clips = (None, 0) if system.adapter_kind == AdapterKind.CATALOG else median_real_time_factor(timings)
    return {
        "organisation": system.system.organisation,
        "licence": system.licence,
        "training_data": system.training_data,
        "open_weights": system.open_weights,
        "real_time_factor": rtf,
        "real_time_factor_clips": clips,
        "audio_withheld": system.withhold_audio,
    }


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
