"""The vote's rules stated once (services.vote_rules_check): the fast path (vote_fast) and the full path (vote_submit)
refuse a vote over the daily cap or with too little heard alike, store nothing, and encode votes one way for the boards."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from arena.leaderboard import VOTES, VoteRow, counts_from_votes, votes_encode
from arena.models import Battle, RejectedVote, Vote
from arena.services import ArenaError, vote_fast, vote_submit

from .conftest import arena_system, listen, ready_battle, visitor_with_terms


def _cast(path: str, battle: Battle, visitor):
    if path == "fast":
        result = vote_fast(public_id=battle.public_id, visitor=visitor, choice="tie")
        assert result is not None, "a plain vote takes the fast path"
        return result[0]
    return vote_submit(battle=battle, visitor=visitor, choice="tie")


@pytest.mark.parametrize("path", ["fast", "full"])
def test_both_paths_refuse_an_unheard_vote_alike(db, path):
    visitor, _ = visitor_with_terms()
    battle = ready_battle(visitor, arena_system("s1"), arena_system("s2"), ready_ago=60)
    listen(battle, visitor, side="a", seconds=6, start=timezone.now() - timedelta(seconds=50))
    with pytest.raises(ArenaError) as refused:
        _cast(path, battle, visitor)
    assert (refused.value.code, refused.value.status) == ("listen_required", 403)
    assert "B" in refused.value.message and refused.value.extra["min_listen_seconds"] > 0
    battle.refresh_from_db()
    assert battle.status == Battle.Status.READY and not Vote.objects.exists()
    assert RejectedVote.objects.filter(reason="listen_required").count() == 1


@pytest.mark.parametrize("path", ["fast", "full"])
def test_both_paths_refuse_over_the_daily_cap_alike(settings, db, path):
    settings.ARENA_DAILY_VOTE_CAP = 1
    visitor, _ = visitor_with_terms()
    s1, s2 = arena_system("s1"), arena_system("s2")
    battles = []
    for _ in range(2):
        battle = ready_battle(visitor, s1, s2, ready_ago=60)
        t0 = timezone.now() - timedelta(seconds=50)
        listen(battle, visitor, side="a", seconds=6, start=t0)
        listen(battle, visitor, side="b", seconds=6, start=t0 + timedelta(seconds=10))
        battles.append(battle)
    _cast(path, battles[0], visitor)
    with pytest.raises(ArenaError) as refused:
        _cast(path, battles[1], visitor)
    assert (refused.value.code, refused.value.status) == ("daily_cap", 429)
    assert 86000 < refused.value.retry_after <= 86401
    battles[1].refresh_from_db()
    assert battles[1].status == Battle.Status.READY and Vote.objects.count() == 1


def test_the_board_encoding_knows_every_stored_choice_and_nothing_else():
    assert set(VOTES) == set(Vote.Choice.values)
    names, a, b, codes = votes_encode([VoteRow("x", "y", "a"), VoteRow("y", "z", "both_bad")])
    assert names == ["x", "y", "z"] and list(a) == [0, 1] and list(b) == [1, 2] and [VOTES[c] for c in codes] == ["a", "both_bad"]
    with pytest.raises(ValueError, match="unknown vote 'maybe'"):
        counts_from_votes([VoteRow("x", "y", "maybe")])
