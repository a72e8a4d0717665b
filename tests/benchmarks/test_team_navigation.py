"""Benchmark team members who are not researchers find their way in: a nav link to the benchmarks and their teams on
the home page; other users see neither, and the lookup costs one query on pages that show it and none on the API."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from scoring.benchmarks import services
from scoring.benchmarks.models import Team
from tests.benchmarks.helpers import known_study
from tests.factories import AnnotatorFactory, UserFactory

pytestmark = pytest.mark.django_db

NAV_LINK = re.compile(r'<nav aria-label="Main">.*?<a href="/benchmarks/"[^>]*>Judge benchmarks</a>.*?</nav>', re.S)


def login(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def team_queries(queries) -> list[str]:
    return [q["sql"] for q in queries if "team" in q["sql"].lower()]


@pytest.fixture
def world():
    study, _ = known_study(n_pairs=4, name="nav-study")
    bench = services.benchmark_create(name="nav-bench", study=study, bootstrap_rounds=100)
    member = UserFactory(username="nav-member")
    loose = Team.objects.create(name="nav-loose")
    loose.members.add(member)
    bound = Team.objects.create(name="nav-bound", benchmark=bench)
    bound.members.add(member)
    return {"member": member, "bench": bench, "outsider": AnnotatorFactory(username="nav-outsider")}


def test_a_team_member_who_is_no_researcher_gets_a_nav_link_and_their_teams_on_the_home_page(world):
    client = login(world["member"])
    with CaptureQueriesContext(connection) as queries:
        home = client.get("/")
    page = home.content.decode()
    assert home.status_code == 200
    assert NAV_LINK.search(page), "no Judge benchmarks link in the main navigation"
    assert "Your judge benchmark teams" in page
    assert 'href="/benchmarks/teams/nav-bound/"' in page and 'href="/benchmarks/teams/nav-loose/"' in page
    assert 'href="/benchmarks/nav-bench/"' in page
    # nav and home page share one lookup
    assert len(team_queries(queries)) == 1
    # the links lead somewhere the member may go
    assert client.get("/benchmarks/").status_code == 200
    assert client.get("/benchmarks/teams/nav-bound/").status_code == 200
    assert client.get("/benchmarks/nav-bench/").status_code == 200
    listing = client.get("/benchmarks/").content.decode()
    assert 'aria-current="page">Judge benchmarks</a>' in listing


def test_users_in_no_team_see_no_benchmark_link_or_section(world):
    page = login(world["outsider"]).get("/").content.decode()
    assert not NAV_LINK.search(page)
    assert "Your judge benchmark teams" not in page


def test_the_api_pays_no_team_lookup(world):
    client = login(world["member"])
    with CaptureQueriesContext(connection) as queries:
        response = client.post("/api/assignments/999999/skip/", {}, content_type="application/json")
    assert response.status_code in (400, 404) and response["Content-Type"].startswith("application/json")
    assert team_queries(queries) == []
