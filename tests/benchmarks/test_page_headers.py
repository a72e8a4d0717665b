"""A benchmark's page and a submission's page share one header (templates/benchmarks/_header.html and
_submission_header.html) for pair and MOS benchmarks alike; each kind still names its own items and labels."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from scoring.benchmarks import services
from scoring.benchmarks.models import Benchmark, Team
from tests.benchmarks.helpers import jsonl, known_study, rated_study
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def _client() -> Client:
    client = Client()
    client.force_login(UserFactory(username="header-res", roles=["researcher"], is_superuser=True))
    return client


def _submission(bench: Benchmark, rows: list[dict]):
    team = Team.objects.create(name=f"{bench.name}-team", benchmark=bench)
    member = UserFactory(username=f"{bench.name}-member")
    team.members.add(member)
    return services.submission_from_file(benchmark=bench, team=team, data=jsonl(rows), user=member)


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_a_pair_benchmarks_pages_name_items_and_votes():
    study, _ = known_study(n_pairs=6, name="header-pairs")
    bench = services.benchmark_create(name="header-pairs", study=study, bootstrap_rounds=100)
    Benchmark.objects.filter(pk=bench.pk).update(is_demo=True)
    sub = _submission(bench, [{"id": i, "preferred": "A"} for i in bench.items.values_list("item_id", flat=True)])
    client = _client()
    page = _text(client.get(f"/benchmarks/{bench.name}/").content.decode())
    assert "header-pairs v1 · 6 items · open" in page and "MOS" not in page.split("Leaderboard")[0]
    assert "demo data: seeded votes, not people's judgements" in page.replace("&#x27;", "'")
    detail = _text(client.get(f"/benchmarks/submissions/{sub.pk}/").content.decode()).replace("&#x27;", "'")
    assert "demo data: scored against seeded votes" in detail and "Private-part figures appear after the close." in detail


def test_a_mos_benchmarks_pages_name_rated_clips_and_ratings():
    study, _ = rated_study()
    bench = services.benchmark_create(name="header-mos", study=study, kind="mos", seed=5, bootstrap_rounds=100)
    Benchmark.objects.filter(pk=bench.pk).update(is_demo=True)
    sub = _submission(bench, [{"id": i, "score": 3.0} for i in bench.items.values_list("item_id", flat=True)])
    client = _client()
    page = _text(client.get(f"/benchmarks/{bench.name}/").content.decode()).replace("&#x27;", "'")
    assert f"header-mos v1 · {bench.n_items} rated clips · MOS open" in page
    assert "demo data: seeded ratings, not people's judgements" in page
    detail = _text(client.get(f"/benchmarks/submissions/{sub.pk}/").content.decode()).replace("&#x27;", "'")
    assert "demo data: scored against seeded ratings" in detail and "Private-part figures appear after the close." in detail
