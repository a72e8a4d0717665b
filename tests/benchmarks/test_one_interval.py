"""One interval method for a figure wherever it shows: the submission page, its API answer and the leaderboard agree."""

from __future__ import annotations

import pytest
from django.test import Client

from annotation.models import Condition
from scoring.benchmarks import services
from tests.benchmarks.helpers import item_truth, jsonl, known_study, predictions_with_accuracy
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def test_the_submission_page_and_the_leaderboard_show_the_same_condition_cluster_interval():
    study, _ = known_study(n_pairs=30, name="ci")
    # Conditions shared by three pairs each: an item resample and a condition resample now differ.
    conditions = list(Condition.objects.filter(pairs__study=study).order_by("id"))
    for n, pair in enumerate(study.pairs.order_by("id")):
        pair.condition = conditions[(n // 3) * 3]
        pair.save(update_fields=["condition"])
    bench = services.benchmark_create(name="ci", study=study, seed=4, bootstrap_rounds=400, is_dev=False)
    assert len(set(bench.items.values_list("cluster", flat=True))) == 10
    rows, _ = predictions_with_accuracy(item_truth(bench), correct={"musicality": 18, "alignment": 20}, seed=2)
    member = UserFactory(username="ci-member")
    team = services.team_create(name="ci-team", members=[member])
    sub = services.submission_from_file(benchmark=bench, team=team, data=jsonl(rows), user=member)
    client = Client()
    client.force_login(member)
    for dim in ("musicality", "alignment"):
        board = client.get(f"/api/benchmarks/{bench.name}/leaderboard/?dim={dim}").json()
        row = next(r for r in board["rows"] if r["submission"] == sub.pk)
        figure = client.get(f"/api/benchmarks/submissions/{sub.pk}/").json()["parts"]["public"][dim]["all"]
        assert figure["accuracy"] == row["accuracy"] and figure["n"] == row["n"]
        assert figure["ci"] == row["interval"]
        page = client.get(f"/benchmarks/submissions/{sub.pk}/").content.decode()
        assert f"{row['interval'][0]:.3f}–{row['interval'][1]:.3f}" in page
