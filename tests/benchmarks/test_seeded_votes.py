"""Labels are people's votes only: the demo's seeded votes never become labels, unless a benchmark is made as demo data
and then says so wherever it shows."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from django.core.management import call_command
from django.test import Client

from annotation.models import Judgment
from scoring.benchmarks import services
from scoring.benchmarks.demo import DEMO_BENCHMARK
from scoring.benchmarks.models import Benchmark, Team
from tests.benchmarks.helpers import jsonl, known_study
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def _researcher() -> Client:
    client = Client()
    client.force_login(UserFactory(username="seed-res", roles=["researcher"], is_superuser=True))  # an admin: the study rule lets admins build from any study
    return client


def test_a_study_with_seeded_votes_only_is_refused_on_the_page():
    study, _ = known_study(n_pairs=6, name="seeded")
    Judgment.objects.filter(pair__study=study).update(source=Judgment.Source.SEEDED)
    response = _researcher().post("/benchmarks/new/", {"name": "from-seeded", "study": study.name, "seed": "0", "public_share": "0.5", "rounds": "100"})
    assert response.status_code == 400
    assert "seeded votes are never labels" in response.content.decode()
    assert not Benchmark.objects.exists()


def test_seeded_votes_beside_real_ones_are_left_out_of_the_labels():
    study, _ = known_study(n_pairs=6, votes=3, name="mixed")
    seeded_ids = list(Judgment.objects.filter(pair__study=study).order_by("id").values_list("id", flat=True)[::3])
    Judgment.objects.filter(id__in=seeded_ids).update(source=Judgment.Source.SEEDED)
    bench = services.benchmark_create(name="mixed", study=study, bootstrap_rounds=100)
    for item in bench.items.all():
        real = Judgment.objects.filter(pair_id=item.pair_id).exclude(source=Judgment.Source.SEEDED).count()
        assert len(item.labels["musicality"]["votes"]) == real == 2
    assert not bench.is_demo


def test_a_demo_benchmark_is_marked_everywhere():
    study, _ = known_study(n_pairs=6, name="demo-ish")
    Judgment.objects.filter(pair__study=study).update(source=Judgment.Source.SEEDED)
    client = _researcher()
    response = client.post("/benchmarks/new/", {"name": "shown-demo", "study": study.name, "demo": "on", "seed": "0", "public_share": "0.5", "rounds": "100"})
    assert response.status_code == 302
    bench = Benchmark.objects.get(name="shown-demo")
    assert bench.is_demo and bench.n_items == 6
    member = UserFactory(username="demo-member")
    team = Team.objects.create(name="demo-t", benchmark=bench)
    team.members.add(member)
    sub = services.submission_from_file(benchmark=bench, team=team, data=jsonl([{"id": i, "preferred": "A"} for i in bench.items.values_list("item_id", flat=True)]), user=member)
    assert "demo data" in client.get("/benchmarks/").content.decode()
    assert 'id="demo-data"' in client.get(f"/benchmarks/{bench.name}/").content.decode()
    assert 'id="demo-data"' in client.get(f"/benchmarks/submissions/{sub.pk}/").content.decode()
    assert client.get(f"/api/benchmarks/{bench.name}/leaderboard/").json()["benchmark"]["demo"] is True
    assert [b["demo"] for b in client.get("/api/benchmarks/").json()["results"]] == [True]
    archive = zipfile.ZipFile(io.BytesIO(client.get(f"/benchmarks/{bench.name}/export.zip").content))
    assert json.loads(archive.read(f"{bench.name}-v1/benchmark.json"))["demo"] is True


def test_the_demos_own_benchmark_keeps_working_marked():
    study, _ = known_study(n_pairs=8, name="demo")
    Judgment.objects.filter(pair__study=study).update(source=Judgment.Source.SEEDED)
    UserFactory(username="researcher", roles=["researcher"])
    call_command("seed_demo_benchmark", stdout=io.StringIO())
    bench = Benchmark.objects.get(name=DEMO_BENCHMARK)
    assert bench.is_demo and bench.n_items == 8
    assert 'id="demo-data"' in _researcher().get(f"/benchmarks/{bench.name}/").content.decode()
