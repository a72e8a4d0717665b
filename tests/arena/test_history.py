"""Monthly and on-demand snapshots of every board, each system's rating over time, and a month's release with its statistics."""

from __future__ import annotations

import io
import json
from collections import Counter
from datetime import datetime
from datetime import timezone as dt_timezone

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from arena.history import board_snapshot_take, board_snapshots_fill, month_bounds
from arena.models import BoardSnapshot, Vote
from arena.selectors import rating_history
from arena.services import leaderboard_payload

from .helpers import styled_arena

UTC = dt_timezone.utc
APRIL = datetime(2026, 4, 10, 12, tzinfo=UTC)


@pytest.fixture
def three_months(db):
    """The style arena's votes spread over January to March 2026."""
    styled_arena(n_battles=300)
    for k, vote in enumerate(Vote.objects.order_by("id")):
        month = 1 + k % 3
        Vote.objects.filter(pk=vote.pk).update(created_at=datetime(2026, month, 1 + k % 27, 10, tzinfo=UTC))
    return Vote.objects.count()


def test_month_bounds_are_utc_months_and_bad_months_are_refused():
    assert month_bounds("2026-12") == (datetime(2026, 12, 1, tzinfo=UTC), datetime(2027, 1, 1, tzinfo=UTC))
    for bad in ("2026-13", "26-01", "2026/01", ""):
        with pytest.raises(Exception, match="is not a month: write it YYYY-MM"):
            month_bounds(bad)


def test_every_ended_month_gets_its_snapshot_once(three_months):
    assert board_snapshots_fill(now=APRIL) == ["2026-01", "2026-02", "2026-03"]
    assert board_snapshots_fill(now=APRIL) == []
    february = BoardSnapshot.objects.get(kind="monthly", period="2026-02")
    assert february.cutoff == datetime(2026, 3, 1, tzinfo=UTC)
    assert february.votes == Vote.objects.filter(created_at__lt=february.cutoff).count() == 200
    expected, _ = leaderboard_payload(until=february.cutoff)
    assert json.loads(json.dumps(february.payload["boards"])) == json.loads(json.dumps(expected["boards"]))
    assert "style" in february.payload["boards"]["instrumental"] and "categories" in february.payload and "screen" in february.payload
    # Taken again, a month's snapshot is replaced, not doubled.
    board_snapshot_take(month="2026-02", now=APRIL)
    assert BoardSnapshot.objects.filter(period="2026-02").count() == 1
    with pytest.raises(Exception, match="has not ended yet"):
        board_snapshot_take(month="2026-04", now=APRIL)


def test_rating_over_time_per_system_in_the_api_and_the_page(three_months, client):
    board_snapshots_fill(now=APRIL)
    board_snapshot_take(now=APRIL)
    history = rating_history()
    assert [p["period"] for p in history["snapshots"]] == ["2026-01", "2026-02", "2026-03", ""]
    ash = history["boards"]["instrumental"]["ash"]
    assert len(ash) == 4 and [p["votes"] for p in ash] == sorted(p["votes"] for p in ash)
    march = BoardSnapshot.objects.get(period="2026-03").payload["boards"]["instrumental"]
    row = next(r for r in march["rows"] if r["system"] == "ash")
    styled = next(r for r in march["style"]["rows"] if r["system"] == "ash")
    assert ash[2]["rating"] == row["rating"] and ash[2]["style_rating"] == styled["rating"] and ash[2]["style_interval"] == styled["interval"]
    answer = client.get("/arena/api/leaderboard/history/?system=ash").json()
    assert set(answer["boards"]["instrumental"]) == {"ash"} and answer["boards"]["instrumental"]["ash"] == ash
    page = client.get("/arena/leaderboard/history/?system=ash")
    assert page.status_code == 200 and b'id="history-data"' in page.content and b'data-system="ash"' in page.content


def test_the_snapshot_command_takes_now_a_month_or_the_missing_ones(three_months):
    out = io.StringIO()
    call_command("arena_snapshot", "--month", "2026-01", stdout=out)
    assert "end of 2026-01" in out.getvalue() and "100 votes" in out.getvalue()
    with pytest.raises(CommandError, match="is not a month"):
        call_command("arena_snapshot", "--month", "January")
    call_command("arena_snapshot", stdout=out)
    assert BoardSnapshot.objects.filter(kind="on_demand").count() == 1


def test_a_months_release_has_that_months_battles_and_its_statistics(three_months, tmp_path):
    out = io.StringIO()
    call_command("arena_release", str(tmp_path), "--month", "2026-02", "--no-audio", stdout=out)
    start, end = month_bounds("2026-02")
    votes = Vote.objects.filter(created_at__gte=start, created_at__lt=end).select_related("battle__system_a__system", "battle__system_b__system", "visitor")
    rows = [json.loads(line) for line in (tmp_path / "battles.jsonl").read_text().splitlines()]
    assert {r["battle_id"] for r in rows} == {str(v.battle.public_id) for v in votes} and len(rows) == 100
    stats = json.loads((tmp_path / "stats.json").read_text())
    assert stats["month"] == "2026-02" and stats["battles"] == 100
    assert stats["votes"] == {c: sum(1 for v in votes if v.choice == c) for c in ("a", "b", "tie", "both_bad")}
    assert stats["instrumental"] == sum(1 for v in votes if v.battle.is_instrumental) and stats["vocal"] == 100 - stats["instrumental"]
    assert stats["visitors"] == len({v.visitor_id for v in votes})
    appearances = Counter(v.battle.system_a.system.name for v in votes) + Counter(v.battle.system_b.system.name for v in votes)
    assert stats["system_appearances"] == dict(appearances)
    readme = (tmp_path / "README.md").read_text()
    assert readme.startswith("# Arena battle log, 2026-02") and "## Statistics" in readme and f"| visitors | {stats['visitors']} |" in readme
    assert "2026-02: 100 battles" in out.getvalue()
    with pytest.raises(CommandError, match="is not a month"):
        call_command("arena_release", str(tmp_path / "x"), "--month", "2026-2")
    assert not (tmp_path / "x").exists()
