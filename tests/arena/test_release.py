"""The public battle log: exact keys, JSONL + Parquet + audio, and the board rebuilt from it is the live board."""

from __future__ import annotations

import io
import json
import random
from datetime import timedelta
from datetime import timezone as dt_timezone

import pyarrow.parquet as pq
import pytest
from django.core.management import call_command
from django.utils import timezone

from arena.models import Battle, ListenEvent, Visitor, Vote
from arena.release import FIELDS, release_export

from .conftest import arena_system, ready_battle, visitor_with_terms

FORMAT_KEYS = [
    "battle_id", "timestamp", "prompt", "is_prebaked", "is_instrumental", "lyrics", "user_id", "system_a", "system_b",
    "audio_a", "audio_b", "vote", "listen_seconds_a", "listen_seconds_b", "listen_events_a", "listen_events_b", "feedback",
    "generation_seconds_a", "generation_seconds_b", "duration_a", "duration_b", "sample_rate_a", "sample_rate_b",
]


def voted_battles(n=40, seed=0):
    rng = random.Random(seed)
    systems = [arena_system(name) for name in ("alpha", "beta", "gamma", "delta")]
    systems[3].is_private = True
    systems[3].save()
    strength = {"alpha": 2.0, "beta": 1.0, "gamma": 0.5, "delta": 1.5}
    visitors = [visitor_with_terms()[0] for _ in range(3)]
    # Real clips for a few battles (the audio copy is checked); the rest reuse them.
    base = ready_battle(visitors[0], systems[0], systems[1])
    for k in range(n):
        a, b = rng.sample(systems, 2)
        battle = base if k == 0 else Battle.objects.create(
            visitor=visitors[k % 3], prompt=f"prompt {k}", lyrics="la la" if k % 5 == 0 else "", is_instrumental=k % 5 != 0,
            duration_requested=8.0, seed=k, system_a=a, system_b=b, clip_a=base.clip_a, clip_b=base.clip_b,
            generation_seconds_a=0.3, generation_seconds_b=0.7, status=Battle.Status.READY, ready_at=timezone.now() - timedelta(seconds=60),
        )
        a, b = battle.system_a, battle.system_b
        ListenEvent.objects.create(battle=battle, side="a", kind="play", server_time=timezone.now(), client_time=10.0, position=0.0)
        p_a = strength[a.name] / (strength[a.name] + strength[b.name])
        choice = rng.choices(["a", "b", "tie", "both_bad"], weights=[p_a * 0.8, (1 - p_a) * 0.8, 0.12, 0.08])[0]
        Vote.objects.create(battle=battle, visitor=battle.visitor, choice=choice, listen_seconds_a=6.0, listen_seconds_b=5.5, feedback="ok")
        battle.status = Battle.Status.VOTED
        battle.save(update_fields=["status"])


def test_release_has_the_documented_keys_and_audio(db, tmp_path):
    voted_battles(10)
    result = release_export(out_dir=tmp_path)
    assert result["battles"] == 10 and result["audio_files"] == 20
    lines = (tmp_path / "battles.jsonl").read_text().splitlines()
    row = json.loads(lines[0])
    assert list(row)[: len(FORMAT_KEYS)] == FORMAT_KEYS
    vote = Vote.objects.get(battle__public_id=row["battle_id"])
    assert row["timestamp"] == vote.created_at.timestamp() and row["date"] == vote.created_at.astimezone(dt_timezone.utc).isoformat().replace("+00:00", "Z")
    assert row["vote"] in {"a", "b", "tie", "both_bad"} and row["preference"] == row["vote"].upper()
    assert row["user_id"] == Visitor.objects.get(battles__public_id=row["battle_id"]).pseudonym
    assert row["listen_events_a"][0]["event"] == "play" and row["listen_events_b"] == []
    assert json.loads(row["listen_data_a"]) == [{"action": "PLAY", "time": ListenEvent.objects.get(battle=vote.battle).server_time.timestamp()}]
    assert row["listen_data_b"] is None and row["total_listening_time_a"] == row["listen_seconds_a"] == 6.0
    assert row["gateway_time_b"] == row["generation_seconds_b"] and row["battle_uuid"] == row["battle_id"] and row["user_pseudonym"] == row["user_id"]
    assert (tmp_path / row["audio_a"]).is_file() and row["audio_a"] == f"audio/{row['battle_id']}-a{Battle.objects.get(public_id=row['battle_id']).clip_a.extension}"
    assert "system" not in row["audio_a"] and row["system_a"] not in row["audio_a"]
    table = pq.read_table(tmp_path / "battles.parquet")
    assert table.column_names == FIELDS and table.num_rows == 10
    assert table.to_pylist()[0] == row
    # Every column is documented in the release's own datasheet.
    readme = (tmp_path / "README.md").read_text()
    assert all(f"| `{name}` |" in readme for name in FIELDS)


@pytest.mark.parametrize("filename", ["battles.jsonl", "battles.parquet"])
def test_leaderboard_rebuilds_identically_from_the_release(db, tmp_path, settings, filename):
    voted_battles(60)
    release_export(out_dir=tmp_path, audio=False)
    live, rebuilt = io.StringIO(), io.StringIO()
    call_command("leaderboard", "--json", "--rounds", "200", "--seed", "3", "--min-votes", "5", stdout=live)
    call_command("leaderboard", "--json", "--rounds", "200", "--seed", "3", "--min-votes", "5", "--from-release", str(tmp_path / filename), stdout=rebuilt)
    assert live.getvalue() == rebuilt.getvalue()
    board = json.loads(live.getvalue())["boards"]["instrumental"]
    assert board["rows"] and {"system", "rating", "lower", "upper", "rank", "votes"} <= set(board["rows"][0])
    # The private system is fitted but not listed, in both.
    assert "delta" not in {r["system"] for r in board["rows"]}


def test_leaderboard_command_refuses_a_file_that_is_not_a_battle_log(db, tmp_path):
    from django.core.management.base import CommandError

    bad = tmp_path / "x.jsonl"
    bad.write_text(json.dumps({"audio-path": "a.wav"}) + "\n")
    with pytest.raises(CommandError, match="not an arena battle log"):
        call_command("leaderboard", "--json", "--from-release", str(bad))
