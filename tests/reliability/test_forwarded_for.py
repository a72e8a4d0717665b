"""A forged X-Forwarded-For picks no new rate-limit or sign-in-lock bucket, on the server as every launch path runs it."""

from __future__ import annotations

import copy
import uuid
from pathlib import Path

import pytest
import requests
from django.test import RequestFactory
from django.urls import reverse

from common.proxy import client_address
from tests.arena.conftest import arena_system, ready_battle, visitor_with_terms
from tests.factories import UserFactory
from tests.live_uvicorn import serving

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "t" * 32  # an unmasked CSRF secret: the cookie and the field/header carry the same value


@pytest.fixture(autouse=True)
def own_cache(settings):
    caches = copy.deepcopy(settings.CACHES)
    caches["default"]["KEY_PREFIX"] = f"xff-test-{uuid.uuid4().hex}"
    settings.CACHES = caches


@pytest.mark.engine
@pytest.mark.django_db(transaction=True)
def test_a_forged_forwarded_address_does_not_bypass_the_login_address_lock(settings):
    settings.AUDITORIUM_LOGIN_ACCOUNT_RATE = "0/900"
    settings.AUDITORIUM_LOGIN_IP_RATE = "5/900"
    UserFactory(username="victim", password="right-password")
    with serving() as (port, _):
        url = f"http://127.0.0.1:{port}/accounts/login/"
        cookies = {"csrftoken": TOKEN}
        for i in range(8):
            forged = {"X-Forwarded-For": f"198.51.100.{i + 1}"}
            requests.post(url, data={"username": f"guess{i}", "password": "x", "csrfmiddlewaretoken": TOKEN}, cookies=cookies, headers=forged, allow_redirects=False, timeout=10)
        right = requests.post(
            url, data={"username": "victim", "password": "right-password", "csrfmiddlewaretoken": TOKEN},
            cookies=cookies, headers={"X-Forwarded-For": "203.0.113.250"}, allow_redirects=False, timeout=10,
        )
    assert right.status_code == 200 and "Too many failed sign-ins for this network" in right.text


@pytest.mark.engine
@pytest.mark.django_db(transaction=True)
def test_a_forged_forwarded_address_does_not_bypass_the_arena_daily_vote_cap(settings):
    settings.ARENA_IP_DAILY_VOTE_RATE = "2/86400"
    settings.ARENA_VOTE_RATE = settings.ARENA_IP_VOTE_RATE = "1000/60"
    s1, s2 = arena_system("s1"), arena_system("s2")
    statuses = []
    with serving() as (port, _):
        for i in range(4):
            visitor, cookie = visitor_with_terms()
            battle = ready_battle(visitor, s1, s2)
            url = f"http://127.0.0.1:{port}" + reverse("arena:api-battle-vote", kwargs={"public_id": battle.public_id})
            response = requests.post(
                url, json={"vote": "a"}, timeout=10,
                cookies={settings.ARENA_VISITOR_COOKIE: cookie, "csrftoken": TOKEN},
                headers={"X-CSRFToken": TOKEN, "X-Forwarded-For": f"198.51.100.{i + 1}"},
            )
            statuses.append(response.status_code)
    # The first two are refused for not listening (and counted); the network's daily cap then answers, whatever the header says.
    assert statuses == [403, 403, 429, 429]


def test_the_forwarded_address_counts_only_behind_a_trusted_proxy(settings):
    factory = RequestFactory()
    forged = factory.get("/", REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="10.0.0.1, 198.51.100.7")
    settings.AUDITORIUM_BEHIND_PROXY = False
    assert client_address(forged) == "127.0.0.1"
    settings.AUDITORIUM_BEHIND_PROXY = True
    settings.AUDITORIUM_TRUSTED_PROXIES = ["127.0.0.1"]
    # The proxy appended what it saw; whatever the client wrote to the left of it is ignored.
    assert client_address(forged) == "198.51.100.7"
    direct = factory.get("/", REMOTE_ADDR="203.0.113.9", HTTP_X_FORWARDED_FOR="198.51.100.7")
    assert client_address(direct) == "203.0.113.9"  # not from the proxy: the header is the client's own
    settings.AUDITORIUM_TRUSTED_PROXIES = ["10.1.0.0/16"]
    assert client_address(factory.get("/", REMOTE_ADDR="10.1.2.3", HTTP_X_FORWARDED_FOR="198.51.100.8, 10.1.9.9")) == "198.51.100.8"


def test_every_launch_path_turns_the_servers_own_forwarded_handling_off():
    from auditorium.serve import UvicornWorker, uvicorn_options

    assert uvicorn_options()["proxy_headers"] is False and UvicornWorker.CONFIG_KWARGS["proxy_headers"] is False
    assert "-m auditorium.serve" in (ROOT / "auditorium").read_text()
    assert "-m uvicorn" not in (ROOT / "auditorium").read_text()
    deploy = ROOT / "platform" / "deploy"
    for name in ("Procfile", "docker-compose.yml", "systemd/auditorium-web.service"):
        text = (deploy / name).read_text()
        assert "-k auditorium.serve.UvicornWorker" in text and "uvicorn_worker.UvicornWorker" not in text, name
