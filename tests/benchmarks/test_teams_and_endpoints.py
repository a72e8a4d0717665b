"""Teams made in the web for one benchmark, their members, and registered outside judges, through the real routes."""

from __future__ import annotations

import pytest
from django.test import Client

from scoring.benchmarks import services
from scoring.benchmarks.models import JudgeEndpoint, Submission, Team
from tests.benchmarks.helpers import item_truth, jsonl, known_study
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def login(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def world(settings):
    # The endpoints here stand on this machine: loopback is allowed explicitly (refused by default).
    settings.BENCHMARK_ENDPOINT_PRIVATE_NETWORKS = ["127.0.0.1"]
    study, _ = known_study(n_pairs=6, name="teams-study")
    bench = services.benchmark_create(name="tb", study=study, bootstrap_rounds=100)
    other = services.benchmark_create(name="tb-other", study=study, bootstrap_rounds=100)
    researcher = UserFactory(username="t-res", roles=["researcher"])
    ana, bob, eve = UserFactory(username="ana"), UserFactory(username="bob"), UserFactory(username="eve")
    return {"bench": bench, "other": other, "res": login(researcher), "ana": login(ana), "bob": login(bob), "eve": login(eve)}


def make_team(world, name="red", bench="tb", members="ana"):
    assert world["res"].post("/benchmarks/teams/", {"name": name, "benchmark": bench}).status_code == 302
    assert world["res"].post(f"/benchmarks/teams/{name}/members/", {"usernames": members}).status_code == 302
    return Team.objects.get(name=name)


def test_researcher_makes_a_team_for_a_benchmark_and_adds_members(world):
    team = make_team(world, members="ana, bob")
    assert team.benchmark.name == "tb"
    assert sorted(team.members.values_list("username", flat=True)) == ["ana", "bob"]
    page = world["res"].get("/benchmarks/teams/red/").content.decode()
    assert "ana" in page and "bob" in page
    # An unknown user name refuses the whole list.
    world["res"].post("/benchmarks/teams/red/members/", {"usernames": "eve, nobody"})
    assert not team.members.filter(username="eve").exists()
    assert "nobody" in world["res"].get("/benchmarks/teams/red/").content.decode()
    # Names are checked; a taken name is refused.
    assert world["res"].post("/benchmarks/teams/", {"name": "bad name", "benchmark": "tb"}).status_code == 400
    assert world["res"].post("/benchmarks/teams/", {"name": "red", "benchmark": "tb"}).status_code == 409
    assert world["res"].post("/benchmarks/teams/", {"name": "blue", "benchmark": "missing"}).status_code == 400
    assert Team.objects.count() == 1


def test_members_see_only_their_teams_and_cannot_join_others(world):
    make_team(world, "red", members="ana")
    make_team(world, "blue", members="bob")
    listing = world["ana"].get("/benchmarks/teams/")
    assert listing.status_code == 200
    body = listing.content.decode()
    assert "red" in body and "blue" not in body
    assert world["ana"].get("/benchmarks/teams/blue/").status_code == 404
    # Only researchers make teams and add members, even to a team one is in.
    assert world["ana"].post("/benchmarks/teams/", {"name": "green", "benchmark": "tb"}).status_code == 403
    assert world["ana"].post("/benchmarks/teams/red/members/", {"usernames": "eve"}).status_code == 403
    assert world["ana"].post("/benchmarks/teams/blue/members/", {"usernames": "ana"}).status_code == 404
    assert not Team.objects.filter(name="green").exists()
    assert list(Team.objects.get(name="blue").members.values_list("username", flat=True)) == ["bob"]
    # Someone in no team has no team pages.
    assert world["eve"].get("/benchmarks/teams/").status_code == 403
    assert world["eve"].get("/benchmarks/teams/red/").status_code == 404
    assert Client().get("/benchmarks/teams/red/").status_code == 302


def test_a_team_submits_only_to_its_benchmark(world):
    make_team(world, "red", members="ana")
    truth = item_truth(world["other"])
    data = jsonl([{"id": i, "preferred": "A"} for i in truth])
    response = world["ana"].post("/api/benchmarks/tb-other/submissions/", {"team": "red", "file": _file(data)})
    assert response.status_code == 403 and "another benchmark" in response.json()["detail"]
    truth = item_truth(world["bench"])
    response = world["ana"].post("/api/benchmarks/tb/submissions/", {"team": "red", "file": _file(jsonl([{"id": i, "preferred": "A"} for i in truth]))})
    assert response.status_code == 201
    # The other benchmark's page offers no upload for a team made elsewhere.
    assert 'id="upload"' not in world["ana"].get("/benchmarks/tb-other/").content.decode()
    assert 'id="upload"' in world["ana"].get("/benchmarks/tb/").content.decode()


def _file(data: bytes):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile("p.jsonl", data)


@pytest.mark.parametrize(
    "url, reason",
    [
        ("ftp://127.0.0.1/judge", "http:// or https://"),
        ("javascript:alert(1)", "http:// or https://"),
        ("http://", "http:// or https://"),
        ("file:///etc/passwd", "http:// or https://"),
        ("http://user:pw@127.0.0.1:9/", "no user name or password"),
        ("http://127.0.0.1:99999/", "not a valid URL"),
        ("http://127.0.0.1/ judge", "not a valid URL"),
    ],
)
def test_endpoint_urls_are_checked(world, url, reason):
    make_team(world, members="ana")
    page = world["ana"].post("/benchmarks/teams/red/endpoints/", {"name": "j", "url": url}, follow=True).content.decode()
    assert reason in page.replace("&#x27;", "'")
    assert not JudgeEndpoint.objects.exists()


def test_members_register_endpoints_and_see_the_secret_others_do_not(world, settings):
    make_team(world, "red", members="ana")
    make_team(world, "blue", members="bob")
    assert world["ana"].post("/benchmarks/teams/red/endpoints/", {"name": "judge-1", "url": "http://127.0.0.1:9/judge"}).status_code == 302
    endpoint = JudgeEndpoint.objects.get()
    assert endpoint.team.name == "red" and len(endpoint.secret) == 64
    assert endpoint.secret in world["ana"].get("/benchmarks/teams/red/").content.decode()
    assert endpoint.secret in world["res"].get("/benchmarks/teams/red/").content.decode()
    for client in ("bob", "eve"):
        assert world[client].get("/benchmarks/teams/red/").status_code == 404
        assert world[client].post("/benchmarks/teams/red/endpoints/", {"name": "x", "url": "http://127.0.0.1:9/"}).status_code == 404
        assert endpoint.secret not in world[client].get("/benchmarks/tb/").content.decode()
    # A second endpoint of the same name is refused; a researcher registers for any team.
    world["ana"].post("/benchmarks/teams/red/endpoints/", {"name": "judge-1", "url": "http://127.0.0.1:9/other"})
    assert world["res"].post("/benchmarks/teams/blue/endpoints/", {"name": "judge-1", "url": "http://127.0.0.1:9/b"}).status_code == 302
    assert JudgeEndpoint.objects.count() == 2
    # A deployment that lists allowed hosts refuses the rest.
    settings.BENCHMARK_ENDPOINT_HOSTS = ["judges.example.org"]
    page = world["ana"].post("/benchmarks/teams/red/endpoints/", {"name": "judge-2", "url": "http://127.0.0.1:9/"}, follow=True).content.decode()
    assert "only to judges.example.org" in page
    assert world["ana"].post("/benchmarks/teams/red/endpoints/", {"name": "judge-2", "url": "https://judges.example.org/x"}).status_code == 302
    assert JudgeEndpoint.objects.filter(team__name="red").count() == 2


def test_runs_use_a_registered_endpoint_of_ones_own_team_by_name(world, django_capture_on_commit_callbacks):
    make_team(world, "red", members="ana")
    make_team(world, "blue", members="bob")
    world["res"].post("/benchmarks/teams/blue/endpoints/", {"name": "blue-judge", "url": "http://127.0.0.1:9/"})
    # A bare URL is not a registered endpoint; another team's endpoint is not reachable by name.
    r = world["ana"].post("/api/benchmarks/tb/runs/", {"team": "red", "endpoint": "http://127.0.0.1:9/"}, content_type="application/json")
    assert r.status_code == 400 and "no registered endpoint" in r.json()["detail"]
    r = world["ana"].post("/api/benchmarks/tb/runs/", {"team": "red", "endpoint": "blue-judge"}, content_type="application/json")
    assert r.status_code == 400
    r = world["ana"].post("/api/benchmarks/tb/runs/", {"team": "blue", "endpoint": "blue-judge"}, content_type="application/json")
    assert r.status_code == 400 and r.json()["code"] == "no_team"
    world["ana"].post("/benchmarks/tb/run/", {"team": "blue", "endpoint": "blue-judge"})
    assert not Submission.objects.exists()
    # Its own team's member runs it by name (queued; the HTTP run itself is tested in test_runners).
    with django_capture_on_commit_callbacks(execute=False):
        r = world["bob"].post("/api/benchmarks/tb/runs/", {"team": "blue", "endpoint": "blue-judge", "label": "b1"}, content_type="application/json")
    assert r.status_code == 202
    submission = Submission.objects.get()
    assert (submission.endpoint.name, submission.endpoint_url, submission.label, submission.kind) == ("blue-judge", "http://127.0.0.1:9/", "b1", "http")
    assert "blue · blue-judge" in world["bob"].get("/benchmarks/tb/").content.decode()


def test_benchmark_submit_runs_a_registered_endpoint_by_name(world, django_capture_on_commit_callbacks):
    import io

    from django.core.management import call_command
    from django.core.management.base import CommandError

    make_team(world, "red", members="ana")
    world["ana"].post("/benchmarks/teams/red/endpoints/", {"name": "red-judge", "url": "http://127.0.0.1:9/"})
    with pytest.raises(CommandError, match="no registered endpoint named 'http://127.0.0.1:9/'"):
        call_command("benchmark_submit", "tb", "--team", "red", "--endpoint", "http://127.0.0.1:9/", stdout=io.StringIO())
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        call_command("benchmark_submit", "tb", "--team", "red", "--endpoint", "red-judge", "--json", stdout=io.StringIO())
    assert len(callbacks) == 1
    assert Submission.objects.get().endpoint.name == "red-judge"
