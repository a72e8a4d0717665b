"""The study rule on the benchmark side: building from a study and judge runs on its pairs (owner, named collaborators,
admins), closing (creator and admins), and every run recording who asked for it."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.test import Client

from scoring.benchmarks import services
from scoring.benchmarks.models import Benchmark, JudgeEndpoint, Submission, Team
from scoring.models import Judge, ScoringRun
from scoring.services import judges_ensure_defaults
from tests.benchmarks.helpers import known_study
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def world():
    owner = UserFactory(username="sr-owner", roles=["researcher"])
    helper_researcher = UserFactory(username="sr-collab", roles=["researcher"])
    stranger = UserFactory(username="sr-stranger", roles=["researcher"])
    admin = UserFactory(username="sr-admin", roles=["researcher"], is_superuser=True, is_staff=True)
    study, _ = known_study(n_pairs=6, name="sr")
    study.owner = owner
    study.save(update_fields=["owner"])
    study.collaborators.add(helper_researcher)
    clients = {}
    for user in (owner, helper_researcher, stranger, admin):
        clients[user.username] = Client()
        clients[user.username].force_login(user)
    return {"study": study, "owner": owner, "collab": helper_researcher, "stranger": stranger, "admin": admin, "c": clients}


def _create(client, name, study):
    return client.post("/benchmarks/new/", {"name": name, "study": study.name, "seed": "0", "public_share": "0.5", "rounds": "100"})


def test_only_the_study_rule_builds_a_benchmark_from_a_study(world):
    refused = _create(world["c"]["sr-stranger"], "sr-theirs", world["study"])
    assert refused.status_code == 403 and "only its owner, the collaborators the owner names, and admins" in refused.content.decode()
    assert not Benchmark.objects.exists()
    for user, name in (("sr-owner", "sr-a"), ("sr-collab", "sr-b"), ("sr-admin", "sr-c")):
        assert _create(world["c"][user], name, world["study"]).status_code == 302, user
    assert Benchmark.objects.get(name="sr-a").created_by == world["owner"]


def test_only_the_creator_and_admins_close_a_benchmark(world):
    bench = services.benchmark_create(name="sr-close", study=world["study"], bootstrap_rounds=100, user=world["owner"])
    for user in ("sr-stranger", "sr-collab"):
        assert world["c"][user].post(f"/benchmarks/{bench.name}/close/").status_code == 403
        assert 'action="/benchmarks/sr-close/close/"' not in world["c"][user].get(f"/benchmarks/{bench.name}/").content.decode()
    bench.refresh_from_db()
    assert bench.is_open
    assert world["c"]["sr-owner"].post(f"/benchmarks/{bench.name}/close/").status_code == 302
    bench.refresh_from_db()
    assert not bench.is_open
    other = services.benchmark_create(name="sr-close2", study=world["study"], bootstrap_rounds=100, user=world["owner"])
    assert world["c"]["sr-admin"].post(f"/benchmarks/{other.name}/close/").status_code == 302


def test_the_close_command(world):
    bench = services.benchmark_create(name="sr-cmd", study=world["study"], bootstrap_rounds=100)
    out = io.StringIO()
    call_command("benchmark_close", bench.name, stdout=out)
    bench.refresh_from_db()
    assert not bench.is_open and "is now closed" in out.getvalue()
    call_command("benchmark_close", bench.name, stdout=out)
    assert "was already closed" in out.getvalue()


def test_a_judge_run_for_a_self_made_team_follows_the_study_rule_and_records_who_asked(world, django_capture_on_commit_callbacks):
    judges_ensure_defaults()
    judge = Judge.objects.get(key="signal-technical")  # needs no weights
    bench = services.benchmark_create(name="sr-run", study=world["study"], bootstrap_rounds=100, user=world["owner"])
    Team.objects.create(name="sr-own-team", benchmark=bench, created_by=world["stranger"])
    with django_capture_on_commit_callbacks(execute=False):
        refused = world["c"]["sr-stranger"].post(f"/api/benchmarks/{bench.name}/runs/", {"team": "sr-own-team", "judge": judge.key}, content_type="application/json")
    assert refused.status_code == 403 and "study sr" in refused.json()["detail"], refused.json()
    assert not ScoringRun.objects.exists() and not Submission.objects.exists()
    with django_capture_on_commit_callbacks(execute=False):
        accepted = world["c"]["sr-collab"].post(f"/api/benchmarks/{bench.name}/runs/", {"team": "sr-own-team", "judge": judge.key}, content_type="application/json")
    assert accepted.status_code == 202
    submission = Submission.objects.get(pk=accepted.json()["submission"])
    assert submission.created_by == world["collab"] and submission.scoring_run.created_by == world["collab"]


def test_an_outside_judge_run_records_who_asked(world, django_capture_on_commit_callbacks, settings):
    settings.BENCHMARK_ENDPOINT_PRIVATE_NETWORKS = ["127.0.0.1"]
    bench = services.benchmark_create(name="sr-http", study=world["study"], bootstrap_rounds=100, user=world["owner"])
    member = UserFactory(username="sr-member")
    team = Team.objects.create(name="sr-team", benchmark=bench)
    team.members.add(member)
    JudgeEndpoint.objects.create(team=team, name="j", url="http://127.0.0.1:9/")
    member_client = Client()
    member_client.force_login(member)
    for client, who in ((member_client, member), (world["c"]["sr-admin"], world["admin"])):
        with django_capture_on_commit_callbacks(execute=False):
            response = client.post(f"/api/benchmarks/{bench.name}/runs/", {"team": "sr-team", "endpoint": "j"}, content_type="application/json")
        assert response.status_code == 202
        assert Submission.objects.get(pk=response.json()["submission"]).created_by == who
