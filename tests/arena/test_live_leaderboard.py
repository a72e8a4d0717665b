"""Votes queue a debounced refit after commit; the refit is stored and pushed to open pages over the websocket."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator
from django.core.management import call_command

from arena.consumers import leaderboard_broadcast
from arena.models import ArenaPrompt, ArenaSystem, LeaderboardSnapshot
from arena.seed import PREBAKED_PROMPTS, arena_seed
from tests.arena.helpers import voted

from .conftest import arena_system, visitor_with_terms


def test_votes_refit_the_board_once_per_debounce_window(db, django_capture_on_commit_callbacks, settings):
    visitor, _ = visitor_with_terms()
    a, b = arena_system("s1"), arena_system("s2")
    with django_capture_on_commit_callbacks(execute=True):
        voted(visitor, a, b, "a")
    first = LeaderboardSnapshot.objects.get()
    assert first.votes == 1 and [r["system"] for r in first.payload["boards"]["instrumental"]["rows"]][0] == "s1"
    # Debounce: the task of the first vote has run and cleared the flag, so the next vote refits again...
    with django_capture_on_commit_callbacks(execute=True):
        voted(visitor, a, b, "b")
    assert LeaderboardSnapshot.objects.count() == 2
    # ...but while a refit is pending, further votes do not queue another.
    from django.core.cache import cache

    cache.add("arena:leaderboard:pending", 1, 60)
    with django_capture_on_commit_callbacks(execute=True):
        voted(visitor, a, b, "b")
    assert LeaderboardSnapshot.objects.count() == 2


@pytest.mark.engine
@pytest.mark.django_db(transaction=True)
def test_open_leaderboard_pages_receive_refits():
    from auditorium.asgi import application

    async def scenario():
        communicator = WebsocketCommunicator(application, "/ws/arena/leaderboard/", headers=[(b"origin", b"http://localhost"), (b"host", b"localhost")])
        connected, _ = await communicator.connect()
        assert connected
        from channels.db import database_sync_to_async

        await database_sync_to_async(leaderboard_broadcast)({"boards": {"instrumental": {"rows": [{"system": "x"}]}}})
        message = await communicator.receive_json_from(timeout=5)
        await communicator.disconnect()
        return message

    message = async_to_sync(scenario)()
    assert message["type"] == "leaderboard" and message["payload"]["boards"]["instrumental"]["rows"][0]["system"] == "x"


def test_seed_arena_is_idempotent(db):
    call_command("seed_arena", verbosity=0)
    call_command("seed_arena", verbosity=0)
    assert ArenaSystem.objects.count() == 6
    assert ArenaPrompt.objects.filter(is_prebaked=True).count() == len(PREBAKED_PROMPTS) >= 30
    assert arena_seed()["systems_created"] == 0
    assert ArenaPrompt.objects.exclude(lyrics="").count() >= 5


def test_leaderboard_refresh_command_stores_and_pushes_the_board_it_prints(db, monkeypatch):
    import io
    import json

    from arena import consumers

    pushed = []
    monkeypatch.setattr(consumers, "leaderboard_broadcast", lambda payload: pushed.append(payload))
    visitor, _ = visitor_with_terms()
    a, b = arena_system("s1"), arena_system("s2")
    voted(visitor, a, b, "a")
    out = io.StringIO()
    call_command("leaderboard", "--json", "--refresh", "--min-votes", "1", "--rounds", "30", stdout=out)
    printed = json.loads(out.getvalue())
    stored = LeaderboardSnapshot.objects.latest().payload
    assert stored["boards"] == printed["boards"] and pushed and pushed[0]["boards"] == printed["boards"]
    assert stored["boards"]["instrumental"]["rounds"] == 30
