"""The public battle log: JSONL + Parquet, one row per voted battle, with the audio, a datasheet and a registry.

Two vocabularies side by side in every row:

- ours (docs/formats.md "Arena battle log"), which `boards_from_release` reads to rebuild our
  board exactly: `vote` a/b/tie/both_bad, `listen_seconds_*`, `listen_events_*`, `private_*`...;
- Music Arena's public battle schema (the Hugging Face dataset its leaderboard code reads):
  `preference` A/B/TIE/BOTH_BAD, `timestamp` Unix seconds and `date` ISO 8601,
  `gateway_time_*`, `total_listening_time_*`, `listen_data_*` (a JSON string of
  {"action", "time"} events), `battle_uuid`, `user_pseudonym`. Columns both schemas name the
  same way (`prompt`, `system_a`, `duration_a`...) mean the same thing in both.

Music Arena splits its boards by system capability, which it reads from a registry of systems
(`supports_lyrics`), not from the battles; `registry.yaml` in the release is that registry for
our systems. Every column is described once, in COLUMNS, and the release's README.md is written
from it.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from datetime import timezone as dt_timezone
from pathlib import Path

from .leaderboard import AUDITORIUM, MUSIC_ARENA, VoteRow, boards_for_method
from .models import ArenaSystem, Vote

OURS, THEIRS, BOTH = "ours", "Music Arena", "both"

# (name, parquet type, whose vocabulary, meaning). Order: docs/formats.md's keys first.
COLUMNS = [
    ("battle_id", "string", OURS, "Battle id (UUID); the audio file names start with it."),
    ("timestamp", "float64", BOTH, "When the vote was cast, Unix seconds (UTC)."),
    ("prompt", "string", BOTH, "The text prompt the visitor typed or drew."),
    ("is_prebaked", "bool", BOTH, "True when the prompt came from the prebaked pool."),
    ("is_instrumental", "bool", BOTH, "The battle was routed as instrumental (no lyrics sung)."),
    ("lyrics", "string", BOTH, "Lyrics given with the prompt; empty for instrumental battles."),
    ("user_id", "string", OURS, "Salted hash of the visitor cookie (never an IP); the same visitor has the same id throughout the release."),
    ("system_a", "string", BOTH, "System that generated clip A (disclosed in the release only, never to a visitor before the vote)."),
    ("system_b", "string", BOTH, "System that generated clip B."),
    ("audio_a", "string", BOTH, "Path of clip A in the release."),
    ("audio_b", "string", BOTH, "Path of clip B in the release."),
    ("vote", "string", OURS, "The vote: a, b, tie or both_bad."),
    ("listen_seconds_a", "float64", OURS, "Seconds clip A was heard, measured on the server's clock as checked before the vote was accepted."),
    ("listen_seconds_b", "float64", OURS, "Seconds clip B was heard, as above."),
    ("listen_events_a", "events", OURS, "Clip A's player events: list of {t (server time, ISO 8601), event (play/pause/seek/tick/ended), client_time (ms since page load), position (s)}."),
    ("listen_events_b", "events", OURS, "Clip B's player events, as above."),
    ("feedback", "string", BOTH, "The visitor's free-text comment (may be empty)."),
    ("generation_seconds_a", "float64", OURS, "Seconds the arena waited for clip A, request to audio."),
    ("generation_seconds_b", "float64", OURS, "Seconds the arena waited for clip B."),
    ("duration_a", "float64", BOTH, "Length of clip A in seconds."),
    ("duration_b", "float64", BOTH, "Length of clip B in seconds."),
    ("sample_rate_a", "int64", BOTH, "Sample rate of clip A (Hz)."),
    ("sample_rate_b", "int64", BOTH, "Sample rate of clip B (Hz)."),
    ("private_a", "bool", OURS, "System A is a pre-release system: its votes are published, it is left off the public board."),
    ("private_b", "bool", OURS, "System B is a pre-release system."),
    ("battle_uuid", "string", THEIRS, "The same as battle_id."),
    ("date", "string", THEIRS, "When the vote was cast, ISO 8601 in UTC (the instant `timestamp` gives)."),
    ("user_pseudonym", "string", THEIRS, "The same as user_id."),
    ("preference", "string", THEIRS, "The vote in Music Arena's vocabulary: A, B, TIE or BOTH_BAD."),
    ("total_listening_time_a", "float64", THEIRS, "The same as listen_seconds_a (our server-measured seconds)."),
    ("total_listening_time_b", "float64", THEIRS, "The same as listen_seconds_b."),
    ("listen_data_a", "string", THEIRS, "Clip A's events as a JSON string: a list of {\"action\": PLAY/PAUSE/SEEK/TICK/STOP, \"time\": Unix seconds (server arrival)}; null when there were none."),
    ("listen_data_b", "string", THEIRS, "Clip B's events, as above."),
    ("gateway_time_a", "float64", THEIRS, "The same as generation_seconds_a (the time the serving side waited for the clip)."),
    ("gateway_time_b", "float64", THEIRS, "The same as generation_seconds_b."),
    ("supports_vocals_a", "bool", OURS, "System A can sing lyrics (`supports_lyrics` in registry.yaml): Music Arena's boards are split by this."),
    ("supports_vocals_b", "bool", OURS, "System B can sing lyrics."),
    ("created_at", "string", OURS, "When the battle was created, ISO 8601 in UTC."),
    ("sampling_policy", "string", OURS, "How the two systems were drawn: weighted (by system weight) or informative (where the board's intervals overlap most; arena/sampling.py)."),
    ("sampling_probability", "float64", OURS, "Probability of drawing this pair of systems; weight the vote by its inverse to refit the board without the sampling's bias."),
    ("source", "string", OURS, "visitor: a visitor's vote. seeded: demo data cast by seed_arena, no one listened; in a release only when it was built with seeded votes."),
]
FIELDS = [name for name, *_ in COLUMNS]

SEEDED = Vote.Source.SEEDED
PREFERENCE = {Vote.Choice.A: "A", Vote.Choice.B: "B", Vote.Choice.TIE: "TIE", Vote.Choice.BOTH_BAD: "BOTH_BAD"}
# Music Arena's listening sum closes a play span on PAUSE, STOP or TICK; `ended` is its STOP.
LISTEN_ACTION = {"ended": "STOP"}


def _iso(value) -> str:
    return value.astimezone(dt_timezone.utc).isoformat().replace("+00:00", "Z")


def _listen_data(events) -> str | None:
    if not events:
        return None
    return json.dumps([{"action": LISTEN_ACTION.get(e.kind, e.kind.upper()), "time": e.server_time.timestamp()} for e in events])


def _votes(include_seeded: bool):
    votes = Vote.objects.all()
    return votes if include_seeded else votes.exclude(source=SEEDED)


def release_rows(*, audio_prefix: str = "audio", include_seeded: bool = False) -> list[dict]:
    """Every voted battle as a release row, oldest first; seeded demo votes only when asked for."""
    votes = (
        _votes(include_seeded)
        .select_related("battle__system_a__system", "battle__system_b__system", "battle__clip_a", "battle__clip_b", "visitor")
        .prefetch_related("battle__listen_events")
        .order_by("battle__created_at", "battle__id")
    )
    rows = []
    for vote in votes:
        battle = vote.battle
        events = {"a": [], "b": []}
        for event in sorted(battle.listen_events.all(), key=lambda e: (e.server_time, e.id)):
            events[event.side].append(event)
        row = {
            "battle_id": str(battle.public_id),
            "battle_uuid": str(battle.public_id),
            "timestamp": vote.created_at.timestamp(),
            "date": _iso(vote.created_at),
            "created_at": _iso(battle.created_at),
            "prompt": battle.prompt,
            "is_prebaked": battle.is_prebaked,
            "is_instrumental": battle.is_instrumental,
            "lyrics": battle.lyrics,
            "user_id": vote.visitor.pseudonym,
            "user_pseudonym": vote.visitor.pseudonym,
            "vote": vote.choice,
            "preference": PREFERENCE[vote.choice],
            "feedback": vote.feedback,
            "source": vote.source,
            # The drawn pair's probability (arena.sampling): weight a vote by 1 / it to refit without the sampling's bias.
            "sampling_policy": battle.sampling_policy,
            "sampling_probability": battle.sampling_probability,
        }
        for side in ("a", "b"):
            system, clip = battle.system_for(side), battle.clip_for(side)
            heard = getattr(vote, f"listen_seconds_{side}")
            waited = getattr(battle, f"generation_seconds_{side}")
            row.update(
                {
                    f"system_{side}": system.system.name,
                    f"audio_{side}": f"{audio_prefix}/{battle.public_id}-{side}{clip.extension}",
                    f"listen_seconds_{side}": heard,
                    f"total_listening_time_{side}": heard,
                    f"listen_events_{side}": [
                        {"t": _iso(e.server_time), "event": e.kind, "client_time": e.client_time, "position": e.position} for e in events[side]
                    ],
                    f"listen_data_{side}": _listen_data(events[side]),
                    f"generation_seconds_{side}": waited,
                    f"gateway_time_{side}": waited,
                    f"duration_{side}": clip.duration,
                    f"sample_rate_{side}": clip.sample_rate,
                    f"private_{side}": system.is_private,
                    f"supports_vocals_{side}": system.supports_vocals,
                }
            )
        rows.append({key: row[key] for key in FIELDS})
    return rows


def _parquet_schema():
    import pyarrow as pa

    event = pa.struct([("t", pa.string()), ("event", pa.string()), ("client_time", pa.float64()), ("position", pa.float64())])
    types = {"string": pa.string(), "float64": pa.float64(), "int64": pa.int64(), "bool": pa.bool_(), "events": pa.list_(event)}
    return pa.schema([(name, types[kind]) for name, kind, *_ in COLUMNS])


def _registry_yaml(names: set[str]) -> str:
    """Music Arena's registry shape for our systems; JSON strings are valid YAML scalars, so no YAML writer is needed."""
    lines = [
        "# Systems of this release in Music Arena's registry shape (systems/registry.yaml there).",
        "# supports_lyrics is the capability its boards are split by.",
    ]
    for system in ArenaSystem.objects.select_related("system").filter(system__name__in=names).order_by("system__name"):
        lines += [
            f"{json.dumps(system.name)}:",
            f"  display_name: {json.dumps(system.name)}",
            f"  organization: {json.dumps(system.system.organisation or 'Unknown')}",
            f"  supports_lyrics: {'true' if system.supports_vocals else 'false'}",
        ]
    return "\n".join(lines) + "\n"


def _datasheet(rows: list[dict], *, parquet: bool, audio: bool, seeded_left_out: int) -> str:
    votes = Counter(r["vote"] for r in rows)
    seeded = sum(1 for r in rows if r["source"] == SEEDED)
    if seeded:
        demo = f"{seeded} of these rows are seeded demo votes (`source` = seeded): cast by seed_arena from the demo systems' known ranks, no one listened. Leave them out for any analysis of human preference."
    elif seeded_left_out:
        demo = f"{seeded_left_out} seeded demo votes (no one listened) are in the database and left out of this release."
    else:
        demo = "No seeded demo votes."
    systems = Counter(r["system_a"] for r in rows) + Counter(r["system_b"] for r in rows)
    private = sorted({r["system_a"] for r in rows if r["private_a"]} | {r["system_b"] for r in rows if r["private_b"]})
    dates = sorted(r["date"][:10] for r in rows)
    files = ["`battles.jsonl`: one JSON object per voted battle, oldest battle first."]
    if parquet:
        files.append("`battles.parquet`: the same rows and columns, typed.")
    if audio:
        files.append("`audio/`: both clips of every battle, named `<battle_id>-<a|b><extension>` (nothing in a name identifies the system).")
    files.append("`registry.yaml`: the systems in Music Arena's registry shape (`supports_lyrics` per system).")
    lines = [
        "# Arena battle log",
        "",
        f"{len(rows)} voted battles" + (f", {dates[0]} to {dates[-1]} (UTC)." if dates else "."),
        "Votes: " + ", ".join(f"{votes[c]} {c}" for c in PREFERENCE) + ".",
        demo,
        "",
        "## Files",
        "",
        *(f"- {line}" for line in files),
        "",
        "## Columns",
        "",
        "Each row carries our columns and, beside them, the columns of Music Arena's public battle schema",
        "(the Hugging Face dataset its leaderboard code reads), so that code reads this file unchanged.",
        "\"both\" marks a column both schemas name the same way with the same meaning.",
        "",
        "| column | type | schema | meaning |",
        "|---|---|---|---|",
        *(f"| `{name}` | {kind} | {whose} | {meaning} |" for name, kind, whose, meaning in COLUMNS),
        "",
        "## Rebuilding the boards",
        "",
        "- `manage.py leaderboard --from-release battles.jsonl` (or `.parquet`) rebuilds our board from our",
        "  columns (`vote`, `is_instrumental`, `private_*`); it equals the live board on the same votes and options.",
        "- `manage.py leaderboard --method music-arena --from-release battles.parquet` gives Music Arena's board",
        "  (penalised logistic regression, C = 1; interval ± 1.96 bootstrap sd; rank by rating; both_bad",
        "  dropped; boards split by battle flag and `supports_vocals_*`).",
        "- Music Arena's own leaderboard code reads `system_a`, `system_b`, `is_instrumental`, `preference`,",
        "  `date`, `duration_*` and `gateway_time_*`, and takes system capabilities from its registry: point",
        "  `MUSIC_ARENA_REGISTRY` at this folder to use `registry.yaml`.",
        "",
        "## Systems",
        "",
        "| system | clip appearances |",
        "|---|---|",
        *(f"| {name} | {n} |" for name, n in sorted(systems.items())),
        "",
        "Pre-release systems (left off the public board, their votes published): " + (", ".join(private) if private else "none") + ".",
        "",
        "## Privacy",
        "",
        "Visitors appear only as salted hashes of their cookie; no IP address or raw cookie is published.",
    ]
    return "\n".join(lines) + "\n"


def release_export(*, out_dir: Path | str, audio: bool = True, parquet: bool = True, include_seeded: bool = False, progress=None) -> dict:
    """Write battles.jsonl (+ battles.parquet), the audio, README.md and registry.yaml under out_dir; return counts.

    Seeded demo votes (Vote.Source.SEEDED) are left out unless include_seeded.
    progress(stage, done, total), when given, hears each stage and every copied clip (the release page shows it).
    """
    progress = progress or (lambda stage, done, total: None)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    progress("rows", 0, 1)
    rows = release_rows(include_seeded=include_seeded)
    with open(out / "battles.jsonl", "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    if parquet:
        import pyarrow as pa
        import pyarrow.parquet as pq

        progress("parquet", 0, 1)
        pq.write_table(pa.Table.from_pylist(rows, schema=_parquet_schema()), out / "battles.parquet")
    copied = 0
    if audio:
        battles = {str(v.battle.public_id): v.battle for v in _votes(include_seeded).select_related("battle__clip_a", "battle__clip_b")}
        for row in rows:
            battle = battles[row["battle_id"]]
            for side in ("a", "b"):
                target = out / row[f"audio_{side}"]
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(battle.clip_for(side).file.path, target)
                copied += 1
                progress("audio", copied, 2 * len(rows))
    progress("files", 0, 1)
    names = {r["system_a"] for r in rows} | {r["system_b"] for r in rows}
    (out / "registry.yaml").write_text(_registry_yaml(names), encoding="utf-8")
    left_out = 0 if include_seeded else Vote.objects.filter(source=SEEDED).count()
    (out / "README.md").write_text(_datasheet(rows, parquet=parquet, audio=audio, seeded_left_out=left_out), encoding="utf-8")
    return {"battles": len(rows), "audio_files": copied, "seeded": sum(1 for r in rows if r["source"] == SEEDED), "seeded_left_out": left_out, "path": str(out)}


def release_read(path: Path | str) -> list[dict]:
    path = Path(path)
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        return pq.read_table(path).to_pylist()
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def boards_from_release(path: Path | str, *, method: str = AUDITORIUM, **options) -> dict:
    """The leaderboard rebuilt from a release file alone (JSONL or Parquet), from our columns."""
    rows = release_read(path)
    needed = ["system_a", "system_b", "vote", "is_instrumental"]
    if method == MUSIC_ARENA:
        needed += ["supports_vocals_a", "supports_vocals_b"]
    missing = [key for key in needed if rows and key not in rows[0]]
    if missing:
        raise ValueError(f"{path} is not an arena battle log{' this method can read' if method == MUSIC_ARENA else ''}: missing {', '.join(missing)}")
    votes = [VoteRow(r["system_a"], r["system_b"], r["vote"], bool(r["is_instrumental"]), r.get("source") == SEEDED) for r in rows]
    hidden = {r["system_a"] for r in rows if r.get("private_a")} | {r["system_b"] for r in rows if r.get("private_b")}
    vocal = {r["system_a"] for r in rows if r.get("supports_vocals_a")} | {r["system_b"] for r in rows if r.get("supports_vocals_b")}
    return boards_for_method(votes, method=method, hidden=hidden, vocal=vocal, **options)
