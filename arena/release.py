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

from .boards import boards_all
from .history import month_bounds
from .leaderboard import AUDITORIUM, MUSIC_ARENA, vote_row_of
from .models import ArenaSystem, Vote
from .selectors import system_metadata

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
    ("audio_a", "string", BOTH, "Path of clip A in the release; null when the system's audio is withheld from releases (the row stays)."),
    ("audio_b", "string", BOTH, "Path of clip B in the release; null when withheld."),
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
    ("loudness_lufs_a", "float64", OURS, "Integrated loudness of clip A as the system generated it (BS.1770-4, LUFS), before the arena levelled it; null when unmeasured (silence, or a battle from before it was measured)."),
    ("loudness_lufs_b", "float64", OURS, "The same for clip B."),
    ("true_peak_a", "float64", OURS, "True peak of clip A as generated (4x oversampled, dBTP), before the arena levelled it; null when unmeasured."),
    ("true_peak_b", "float64", OURS, "The same for clip B."),
    ("vocals_a", "bool", OURS, "Clip A has vocals (the system's report, else a vocal battle sung by a system that sings); null when unknown."),
    ("vocals_b", "bool", OURS, "The same for clip B."),
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
WEIGHTS = {True: "open", False: "closed", None: "unknown"}
PREFERENCE = {Vote.Choice.A: "A", Vote.Choice.B: "B", Vote.Choice.TIE: "TIE", Vote.Choice.BOTH_BAD: "BOTH_BAD"}
# Music Arena's listening sum closes a play span on PAUSE, STOP or TICK; `ended` is its STOP.
LISTEN_ACTION = {"ended": "STOP"}


def _iso(value) -> str:
    return value.astimezone(dt_timezone.utc).isoformat().replace("+00:00", "Z")


def _listen_data(events) -> str | None:
    if not events:
        return None
    return json.dumps([{"action": LISTEN_ACTION.get(e.kind, e.kind.upper()), "time": e.server_time.timestamp()} for e in events])


def _votes(include_seeded: bool, month: str | None = None):
    votes = Vote.objects.all()
    if month is not None:
        start, end = month_bounds(month)
        votes = votes.filter(created_at__gte=start, created_at__lt=end)
    return votes if include_seeded else votes.exclude(source=SEEDED)


def release_rows(*, audio_prefix: str = "audio", include_seeded: bool = False, month: str | None = None) -> list[dict]:
    """Every voted battle (voted in `month`, YYYY-MM UTC, when given) as a release row, oldest first; seeded demo votes only when asked for."""
    votes = (
        _votes(include_seeded, month)
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
                    # A system whose audio is withheld keeps its rows; the clip is not published.
                    f"audio_{side}": None if system.withhold_audio else f"{audio_prefix}/{battle.public_id}-{side}{clip.extension}",
                    f"listen_seconds_{side}": heard,
                    f"total_listening_time_{side}": heard,
                    f"listen_events_{side}": [
                        {"t": _iso(e.server_time), "event": e.kind, "client_time": e.client_time, "position": e.position} for e in events[side]
                    ],
                    f"listen_data_{side}": _listen_data(events[side]),
                    f"generation_seconds_{side}": waited,
                    f"gateway_time_{side}": waited,
                    f"duration_{side}": clip.duration,
                    f"loudness_lufs_{side}": getattr(battle, f"loudness_lufs_{side}"),
                    f"true_peak_{side}": getattr(battle, f"true_peak_{side}"),
                    f"vocals_{side}": getattr(battle, f"vocals_{side}"),
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


def systems_of_release(rows: list[dict]) -> list[dict]:
    """The release's systems with their metadata and the real-time factor measured on the release's own battles (none for catalog systems)."""
    timings: dict[str, list] = {}
    for r in rows:
        for side in ("a", "b"):
            timings.setdefault(r[f"system_{side}"], []).append((r[f"generation_seconds_{side}"], r[f"duration_{side}"]))
    out = []
    for system in ArenaSystem.objects.select_related("system").filter(system__name__in=set(timings)).order_by("system__name"):
        metadata = system_metadata(system, timings[system.name])
        # The release's column order: the name and its vocal capability first.
        out.append({"name": system.name, "organisation": metadata.pop("organisation"), "supports_vocals": system.supports_vocals, **metadata})
    return out


def _yaml(value) -> str:
    # JSON scalars are valid YAML, so no YAML writer is needed.
    return "null" if value is None else json.dumps(value)


def _registry_yaml(systems: list[dict]) -> str:
    """Music Arena's registry shape for our systems, with our metadata beside its keys."""
    lines = [
        "# Systems of this release in Music Arena's registry shape (systems/registry.yaml there).",
        "# supports_lyrics is the capability its boards are split by; access and training_data are its keys too.",
        "# license, open_weights, real_time_factor (median generation seconds / clip seconds over this release's",
        "# battles: under 1 is faster than real time; Music Arena's 'Generation Speed (RTF)' is its inverse) and",
        "# audio_withheld are ours.",
    ]
    for s in systems:
        lines += [
            f"{json.dumps(s['name'])}:",
            f"  display_name: {json.dumps(s['name'])}",
            f"  organization: {json.dumps(s['organisation'] or 'Unknown')}",
            f"  supports_lyrics: {'true' if s['supports_vocals'] else 'false'}",
            f"  license: {_yaml(s['licence'] or None)}",
            f"  open_weights: {_yaml(s['open_weights'])}",
            f"  real_time_factor: {_yaml(s['real_time_factor'])}",
            f"  audio_withheld: {_yaml(s['audio_withheld'])}",
        ]
        # Music Arena's own keys for the same facts: access OPEN / PROPRIETARY, and training_data a mapping.
        if s["open_weights"] is not None:
            lines.append(f"  access: {json.dumps('OPEN' if s['open_weights'] else 'PROPRIETARY')}")
        if s["training_data"]:
            lines += ["  training_data:", f"    description: {json.dumps(s['training_data'])}"]
    return "\n".join(lines) + "\n"


def release_stats(rows: list[dict], *, month: str | None = None) -> dict:
    """The release's figures: battles, votes by choice, instrumental and vocal battles, visitors, each system's clip appearances."""
    votes = Counter(r["vote"] for r in rows)
    appearances = Counter(r["system_a"] for r in rows) + Counter(r["system_b"] for r in rows)
    return {
        "month": month,
        "battles": len(rows),
        "votes": {choice: votes[choice] for choice in PREFERENCE},
        "instrumental": sum(1 for r in rows if r["is_instrumental"]),
        "vocal": sum(1 for r in rows if not r["is_instrumental"]),
        "prebaked": sum(1 for r in rows if r["is_prebaked"]),
        "visitors": len({r["user_id"] for r in rows}),
        "seeded": sum(1 for r in rows if r["source"] == SEEDED),
        "system_appearances": dict(sorted(appearances.items())),
        "first_vote": min((r["date"] for r in rows), default=None),
        "last_vote": max((r["date"] for r in rows), default=None),
    }


def _datasheet(rows: list[dict], *, parquet: bool, audio: bool, seeded_left_out: int, stats: dict, systems: list[dict]) -> str:
    votes = Counter(r["vote"] for r in rows)
    seeded = sum(1 for r in rows if r["source"] == SEEDED)
    if seeded:
        demo = f"{seeded} of these rows are seeded demo votes (`source` = seeded): cast by seed_arena from the demo systems' known ranks, no one listened. Leave them out for any analysis of human preference."
    elif seeded_left_out:
        demo = f"{seeded_left_out} seeded demo votes (no one listened) are in the database and left out of this release."
    else:
        demo = "No seeded demo votes."
    appearances = Counter(r["system_a"] for r in rows) + Counter(r["system_b"] for r in rows)
    private = sorted({r["system_a"] for r in rows if r["private_a"]} | {r["system_b"] for r in rows if r["private_b"]})
    dates = sorted(r["date"][:10] for r in rows)
    files = ["`battles.jsonl`: one JSON object per voted battle, oldest battle first."]
    if parquet:
        files.append("`battles.parquet`: the same rows and columns, typed.")
    if audio:
        files.append("`audio/`: both clips of every battle, named `<battle_id>-<a|b><extension>` (nothing in a name identifies the system).")
    files.append("`registry.yaml`: the systems in Music Arena's registry shape (`supports_lyrics` per system).")
    files.append("`stats.json`: the statistics below, as numbers.")
    lines = [
        "# Arena battle log" + (f", {stats['month']}" if stats["month"] else ""),
        "",
        (f"The battles voted in {stats['month']} (UTC): " if stats["month"] else "")
        + f"{len(rows)} voted battles"
        + (f", {dates[0]} to {dates[-1]} (UTC)." if dates else "."),
        "Votes: " + ", ".join(f"{votes[c]} {c}" for c in PREFERENCE) + ".",
        demo,
        "",
        "## Statistics",
        "",
        "(Also in `stats.json`.)",
        "",
        "| | |",
        "|---|---|",
        f"| battles | {stats['battles']} |",
        *(f"| votes {c} | {stats['votes'][c]} |" for c in PREFERENCE),
        f"| instrumental battles | {stats['instrumental']} |",
        f"| vocal battles | {stats['vocal']} |",
        f"| prebaked prompts | {stats['prebaked']} |",
        f"| visitors | {stats['visitors']} |",
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
        "| system | organisation | licence | weights | training data | real-time factor | clip appearances |",
        "|---|---|---|---|---|---|---|",
        *(
            f"| {s['name']} | {s['organisation'] or '–'} | {s['licence'] or '–'} | {WEIGHTS[s['open_weights']]} | {s['training_data'] or '–'} | "
            f"{'–' if s['real_time_factor'] is None else s['real_time_factor']} | {appearances[s['name']]}{' (audio withheld)' if s['audio_withheld'] else ''} |"
            for s in systems
        ),
        "",
        "The real-time factor is the median over this release's battles of the seconds the arena waited for a clip over its length",
        "(under 1: faster than real time); catalog systems serve stored clips and have none. A system marked \"audio withheld\" has",
        "its battles and votes here and no audio file (`audio_a`/`audio_b` are null).",
        "",
        "Pre-release systems (left off the public board, their votes published): " + (", ".join(private) if private else "none") + ".",
        "",
        "## Privacy",
        "",
        "Visitors appear only as salted hashes of their cookie; no IP address or raw cookie is published.",
    ]
    return "\n".join(lines) + "\n"


def release_export(
    *, out_dir: Path | str, audio: bool = True, parquet: bool = True, include_seeded: bool = False, month: str | None = None, progress=None
) -> dict:
    """Write battles.jsonl (+ battles.parquet), the audio, README.md, stats.json and registry.yaml under out_dir; return counts.

    Seeded demo votes (Vote.Source.SEEDED) are left out unless include_seeded; `month` (YYYY-MM, UTC)
    keeps the battles voted in that month.
    progress(stage, done, total), when given, hears each stage and every copied clip (the release page shows it).
    """
    if month is not None:
        month_bounds(month)  # a clear error before anything is written
    progress = progress or (lambda stage, done, total: None)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    progress("rows", 0, 1)
    rows = release_rows(include_seeded=include_seeded, month=month)
    stats = release_stats(rows, month=month)
    (out / "stats.json").write_text(json.dumps(stats, indent=2) + "\n", encoding="utf-8")
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
        battles = {str(v.battle.public_id): v.battle for v in _votes(include_seeded, month).select_related("battle__clip_a", "battle__clip_b")}
        for row in rows:
            battle = battles[row["battle_id"]]
            for side in ("a", "b"):
                if row[f"audio_{side}"] is None:
                    continue
                target = out / row[f"audio_{side}"]
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(battle.clip_for(side).file.path, target)
                copied += 1
                progress("audio", copied, sum(1 for r in rows for side in "ab" if r[f"audio_{side}"] is not None))
    progress("files", 0, 1)
    systems = systems_of_release(rows)
    (out / "registry.yaml").write_text(_registry_yaml(systems), encoding="utf-8")
    left_out = 0 if include_seeded else _votes(True, month).filter(source=SEEDED).count()
    (out / "README.md").write_text(_datasheet(rows, parquet=parquet, audio=audio, seeded_left_out=left_out, stats=stats, systems=systems), encoding="utf-8")
    return {"stats": stats, "battles": len(rows), "audio_files": copied, "seeded": sum(1 for r in rows if r["source"] == SEEDED), "seeded_left_out": left_out, "path": str(out)}


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
    votes = [vote_row_of(r) for r in rows]
    hidden = {r["system_a"] for r in rows if r.get("private_a")} | {r["system_b"] for r in rows if r.get("private_b")}
    vocal = {r["system_a"] for r in rows if r.get("supports_vocals_a")} | {r["system_b"] for r in rows if r.get("supports_vocals_b")}
    return boards_all(votes, method=method, hidden=hidden, vocal=vocal, **options)
