"""A network's daily caps hold whatever cookies it sends: a new visitor per battle does not reset them."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from arena.models import Battle, RejectedVote

from .conftest import arena_system, ready_battle, visitor_client, visitor_with_terms

CREATE = reverse("arena:api-battle-create")


def post(client, url, body):
    return client.post(url, data=json.dumps(body), content_type="application/json")


def test_new_cookies_do_not_bypass_the_daily_battle_cap_per_ip_hash(settings, db):
    settings.ARENA_IP_DAILY_BATTLE_RATE = "3/86400"
    arena_system("s1")
    arena_system("s2")
    statuses, last = [], None
    for _ in range(5):
        _, cookie = visitor_with_terms()  # a fresh visitor every time, as a bypassing script would
        last = post(visitor_client(cookie), CREATE, {"prompt": "calm ambient pads"})
        statuses.append(last.status_code)
    assert statuses == [201, 201, 201, 429, 429]
    assert last.json()["code"] == "rate_limited" and "today's limit of battles" in last.json()["detail"]
    assert 1 <= int(last["Retry-After"]) <= 86400
    assert Battle.objects.count() == 3
    # Another network is not affected.
    _, cookie = visitor_with_terms()
    other = visitor_client(cookie)
    other.defaults["REMOTE_ADDR"] = "198.51.100.20"
    assert post(other, CREATE, {"prompt": "calm ambient pads"}).status_code == 201


def test_new_cookies_do_not_bypass_the_daily_vote_cap_per_ip_hash(settings, db):
    settings.ARENA_IP_DAILY_VOTE_RATE = "2/86400"
    s1, s2 = arena_system("s1"), arena_system("s2")
    statuses, last = [], None
    for _ in range(4):
        visitor, cookie = visitor_with_terms()
        battle = ready_battle(visitor, s1, s2)
        last = post(visitor_client(cookie), reverse("arena:api-battle-vote", kwargs={"public_id": battle.public_id}), {"vote": "a"})
        statuses.append(last.status_code)
    # Not listened yet, so the first two are refused for that, but counted; then the network's cap answers.
    assert statuses[:2] == [403, 403] and statuses[2:] == [429, 429]
    assert last.json()["code"] == "rate_limited" and int(last["Retry-After"]) >= 1
    assert RejectedVote.objects.filter(reason="rate_limited").count() == 2


@pytest.mark.engine
@pytest.mark.parametrize("name", ["ARENA_IP_DAILY_BATTLE_RATE", "ARENA_IP_DAILY_VOTE_RATE"])
def test_a_malformed_daily_cap_stops_start_up(name):
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "ARENA_"))}
    env.update({"DJANGO_DEBUG": "true", "DJANGO_SECRET_KEY": "test-only-key-0123456789abcdef", name: "lots", "DJANGO_SETTINGS_MODULE": "auditorium.settings"})
    result = subprocess.run([sys.executable, "manage.py", "check"], cwd=root, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode != 0 and name in result.stderr
