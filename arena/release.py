"""The public battle log: JSONL + Parquet, one row per voted battle, with the audio.

Keys follow docs/formats.md ("Arena battle log"); `private_a` / `private_b`
follow them so the board rebuilt from the file hides the same systems as the
live board. `boards_from_release` rebuilds the leaderboard from the file alone.
"""

from __future__ import annotations

import json
import shutil
from datetime import timezone as dt_timezone
from pathlib import Path

from .leaderboard import VoteRow, boards_compute
from .models import Vote

FIELDS = [
    "battle_id", "timestamp", "prompt", "is_prebaked", "is_instrumental", "lyrics", "user_id", "system_a", "system_b",
    "audio_a", "audio_b", "vote", "listen_seconds_a", "listen_seconds_b", "listen_events_a", "listen_events_b", "feedback",
    "generation_seconds_a", "generation_seconds_b", "duration_a", "duration_b", "sample_rate_a", "sample_rate_b",
    "private_a", "private_b", "sampling_policy", "sampling_probability",
]


def _iso(value) -> str:
    return value.astimezone(dt_timezone.utc).isoformat().replace("+00:00", "Z")


def release_rows(*, audio_prefix: str = "audio") -> list[dict]:
    """Every voted battle as a release row, oldest first."""
    votes = (
        Vote.objects.select_related("battle__system_a__system", "battle__system_b__system", "battle__clip_a", "battle__clip_b", "visitor")
        .prefetch_related("battle__listen_events")
        .order_by("battle__created_at", "battle__id")
    )
    rows = []
    for vote in votes:
        battle = vote.battle
        events = {"a": [], "b": []}
        for event in sorted(battle.listen_events.all(), key=lambda e: (e.server_time, e.id)):
            events[event.side].append({"t": _iso(event.server_time), "event": event.kind, "client_time": event.client_time, "position": event.position})
        row = {
            "battle_id": str(battle.public_id),
            "timestamp": _iso(battle.created_at),
            "prompt": battle.prompt,
            "is_prebaked": battle.is_prebaked,
            "is_instrumental": battle.is_instrumental,
            "lyrics": battle.lyrics,
            "user_id": vote.visitor.pseudonym,
            "vote": vote.choice,
            "listen_seconds_a": vote.listen_seconds_a,
            "listen_seconds_b": vote.listen_seconds_b,
            "feedback": vote.feedback,
            # The drawn pair's probability (arena.sampling): weight a vote by 1 / it to refit without the sampling's bias.
            "sampling_policy": battle.sampling_policy,
            "sampling_probability": battle.sampling_probability,
        }
        for side in ("a", "b"):
            system, clip = battle.system_for(side), battle.clip_for(side)
            row[f"system_{side}"] = system.system.name
            row[f"audio_{side}"] = f"{audio_prefix}/{battle.public_id}-{side}{clip.extension}"
            row[f"listen_events_{side}"] = events[side]
            row[f"generation_seconds_{side}"] = getattr(battle, f"generation_seconds_{side}")
            row[f"duration_{side}"] = clip.duration
            row[f"sample_rate_{side}"] = clip.sample_rate
            row[f"private_{side}"] = system.is_private
        rows.append({key: row[key] for key in FIELDS})
    return rows


def release_export(*, out_dir: Path | str, audio: bool = True, parquet: bool = True) -> dict:
    """Write battles.jsonl (+ battles.parquet) and the audio under out_dir; return counts."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows = release_rows()
    with open(out / "battles.jsonl", "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    if parquet:
        import pyarrow as pa
        import pyarrow.parquet as pq

        event = pa.struct([("t", pa.string()), ("event", pa.string()), ("client_time", pa.float64()), ("position", pa.float64())])
        types = {
            "listen_events_a": pa.list_(event),
            "listen_events_b": pa.list_(event),
            "is_prebaked": pa.bool_(),
            "is_instrumental": pa.bool_(),
            "private_a": pa.bool_(),
            "private_b": pa.bool_(),
            "generation_seconds_a": pa.float64(),
            "generation_seconds_b": pa.float64(),
            "duration_a": pa.float64(),
            "duration_b": pa.float64(),
            "listen_seconds_a": pa.float64(),
            "listen_seconds_b": pa.float64(),
            "sample_rate_a": pa.int64(),
            "sample_rate_b": pa.int64(),
            "sampling_probability": pa.float64(),
        }
        schema = pa.schema([(name, types.get(name, pa.string())) for name in FIELDS])
        pq.write_table(pa.Table.from_pylist(rows, schema=schema), out / "battles.parquet")
    copied = 0
    if audio:
        battles = {str(v.battle.public_id): v.battle for v in Vote.objects.select_related("battle__clip_a", "battle__clip_b")}
        for row in rows:
            battle = battles[row["battle_id"]]
            for side in ("a", "b"):
                target = out / row[f"audio_{side}"]
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(battle.clip_for(side).file.path, target)
                copied += 1
    return {"battles": len(rows), "audio_files": copied, "path": str(out)}


def release_read(path: Path | str) -> list[dict]:
    path = Path(path)
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        return pq.read_table(path).to_pylist()
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def boards_from_release(path: Path | str, **options) -> dict:
    """The leaderboard rebuilt from a release file alone (JSONL or Parquet)."""
    rows = release_read(path)
    missing = [key for key in ("system_a", "system_b", "vote", "is_instrumental") if rows and key not in rows[0]]
    if missing:
        raise ValueError(f"{path} is not an arena battle log: missing {', '.join(missing)}")
    votes = [VoteRow(r["system_a"], r["system_b"], r["vote"], bool(r["is_instrumental"])) for r in rows]
    hidden = {r["system_a"] for r in rows if r.get("private_a")} | {r["system_b"] for r in rows if r.get("private_b")}
    return boards_compute(votes, hidden=hidden, **options)
