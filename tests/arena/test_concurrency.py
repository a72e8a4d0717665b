"""Two submits of the same vote at the same moment store one vote; the other is refused and logged."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from arena.models import RejectedVote, Vote
from arena.services import ArenaError, vote_submit

from .conftest import arena_system, listen, ready_battle, visitor_with_terms


@pytest.mark.engine
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("attempt", range(3))
def test_concurrent_double_submit_stores_one_vote(attempt):
    visitor, _ = visitor_with_terms()
    battle = ready_battle(visitor, arena_system(f"s1-{attempt}"), arena_system(f"s2-{attempt}"), ready_ago=60)
    t0 = timezone.now() - timedelta(seconds=50)
    for side, offset in (("a", 0), ("b", 10)):
        listen(battle, visitor, side=side, seconds=6, start=t0 + timedelta(seconds=offset))

    barrier = threading.Barrier(4, timeout=60)
    outcomes: list[str] = []

    def submit(choice):
        try:
            barrier.wait()
            vote_submit(battle=battle, visitor=visitor, choice=choice)
            outcomes.append("stored")
        except ArenaError as exc:
            outcomes.append(exc.code)
        finally:
            connection.close()

    threads = [threading.Thread(target=submit, args=(choice,)) for choice in ("a", "b", "a", "tie")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(outcomes) == ["already_voted", "already_voted", "already_voted", "stored"]
    assert Vote.objects.filter(battle=battle).count() == 1
    assert RejectedVote.objects.filter(battle=battle, reason="already_voted").count() == 3
