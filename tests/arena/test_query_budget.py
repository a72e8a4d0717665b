"""Query budget of the arena vote through the page's API: <= 4 per vote, counted with everything the request does."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from arena import services
from arena.models import Battle, RejectedVote, Vote

from .conftest import arena_system, listen, ready_battle, visitor_client, visitor_with_terms

VOTE_BUDGET = 4


def _vote_url(battle):
    return f"/arena/api/battles/{battle.public_id}/vote/"


@pytest.fixture
def queued(monkeypatch):
    """The leaderboard refits queued by votes. The refit runs in a Celery worker, not in the vote's
    request; tests run tasks eagerly, so the queueing is recorded here instead of run inline."""
    calls = []
    monkeypatch.setattr(services, "leaderboard_queue_refresh", lambda: calls.append(True))
    return calls


@pytest.fixture
def voter(transactional_db, queued):
    visitor, cookie = visitor_with_terms()
    systems = arena_system("budget-a"), arena_system("budget-b")
    battles = []
    for _ in range(2):
        battle = ready_battle(visitor, *systems, ready_ago=120)
        t0 = timezone.now() - timedelta(seconds=100)
        for side, offset in (("a", 0), ("b", 20)):
            listen(battle, visitor, side=side, seconds=settings.ARENA_MIN_LISTEN_SECONDS + 1, start=t0 + timedelta(seconds=offset))
        battles.append(battle)
    client = visitor_client(cookie)
    # The first request of a visit reads the visitor once; votes after it are the hot path.
    assert client.get(f"/arena/api/battles/{battles[0].public_id}/").status_code == 200
    return visitor, client, battles


@pytest.mark.engine
def test_a_vote_stays_within_its_query_budget(voter, queued, django_assert_max_num_queries):
    visitor, client, battles = voter
    for battle in battles:
        with django_assert_max_num_queries(VOTE_BUDGET):
            response = client.post(_vote_url(battle), {"vote": "a", "idempotency_key": f"k-{battle.pk}"}, content_type="application/json")
        assert response.status_code == 201, response.content
        assert response.json()["vote"] == "a" and response.json()["reveal"] is not None
    assert Vote.objects.filter(visitor=visitor).count() == 2
    assert len(queued) == 2  # each vote queued the board's refit after its commit
    assert set(Battle.objects.filter(pk__in=[b.pk for b in battles]).values_list("status", flat=True)) == {Battle.Status.VOTED}


@pytest.mark.engine
def test_a_retried_vote_returns_the_stored_one_and_a_revote_is_refused(voter):
    visitor, client, battles = voter
    battle = battles[0]
    first = client.post(_vote_url(battle), {"vote": "a", "idempotency_key": "same"}, content_type="application/json")
    again = client.post(_vote_url(battle), {"vote": "a", "idempotency_key": "same"}, content_type="application/json")
    other = client.post(_vote_url(battle), {"vote": "b", "idempotency_key": "other"}, content_type="application/json")
    assert (first.status_code, again.status_code, other.status_code) == (201, 200, 409)
    assert Vote.objects.filter(battle=battle).count() == 1
    assert RejectedVote.objects.filter(battle=battle, reason="already_voted").count() == 1


@pytest.mark.engine
def test_the_listening_minimum_still_holds_on_the_fast_path(voter, settings):
    visitor, client, battles = voter
    settings.ARENA_MIN_LISTEN_SECONDS = 600
    response = client.post(_vote_url(battles[1]), {"vote": "b"}, content_type="application/json")
    assert response.status_code == 403 and response.json()["code"] == "listen_required"
    assert not Vote.objects.filter(battle=battles[1]).exists()
