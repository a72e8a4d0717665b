"""A study with a known truth: prediction files of known accuracy rank and score as a direct count says."""

from __future__ import annotations

import json

import numpy as np
import pytest
from django.core.management import call_command

from scoring.benchmarks import selectors, services
from scoring.benchmarks.models import Prediction, Submission
from tests.benchmarks.helpers import item_truth, jsonl, known_study, predictions_with_accuracy

pytestmark = pytest.mark.django_db


@pytest.fixture
def bench():
    study, _ = known_study(n_pairs=40)
    return services.benchmark_create(name="known-bench", study=study, seed=3, bootstrap_rounds=500)


def test_items_frozen_with_split_and_manifest(bench):
    assert bench.n_items == 40
    private = bench.items.filter(is_private=True).count()
    assert private == 20
    assert len(bench.manifest) == 5  # four generated clips and one reference
    assert all(len(v) == 64 for v in bench.manifest.values())
    # The same study and seed give the same items in the same order and the same split.
    again = services.benchmark_create(name="known-bench-2", study=bench.study, seed=3)
    assert [(i.pair_id, i.is_private) for i in bench.items.order_by("position")] == [(i.pair_id, i.is_private) for i in again.items.order_by("position")]


def test_ranking_accuracy_and_intervals_equal_a_direct_count(bench, tmp_path):
    truth = item_truth(bench)
    team_names = ["alpha", "beta", "gamma"]
    wanted = [{"alignment": 36, "musicality": 34}, {"alignment": 28, "musicality": 30}, {"alignment": 20, "musicality": 22}]
    expected = {}
    for name, correct in zip(team_names, wanted):
        services.team_create(name=name)
        rows, _ = predictions_with_accuracy(truth, correct=correct, seed=len(name))
        path = tmp_path / f"{name}.jsonl"
        path.write_bytes(jsonl(rows))
        call_command("benchmark_submit", "known-bench", "--team", name, "--file", str(path))
        expected[name] = rows
    out = {}
    for part, mask in (("all", lambda i: True), ("public", lambda i: not i.is_private), ("private", lambda i: i.is_private)):
        items = [i for i in bench.items.all() if mask(i)]
        for dim in ("alignment", "musicality"):
            table = selectors.scores(bench, part=part, dim=dim)
            by_team = {Submission.objects.get(pk=r["submission"]).team.name: r for r in table["rows"]}
            for name, rows in expected.items():
                given = {r["id"]: r[f"preferred_{dim}"] for r in rows}
                direct = sum(given[i.item_id] == truth[i.item_id][dim] for i in items) / len(items)
                row = by_team[name]
                assert row["accuracy"] == pytest.approx(direct)
                assert row["n"] == len(items)
                low, high = row["ci"]
                assert low <= row["accuracy"] <= high
                out[(part, dim, name)] = row
    # On all 40 items the three are far apart: ranked alpha > beta > gamma, alpha and gamma in different groups.
    for dim in ("alignment", "musicality"):
        ranks = [out[("all", dim, n)]["rank"] for n in team_names]
        assert ranks == sorted(ranks)
        assert ranks[0] == 1 and ranks[2] > ranks[0]


def test_benchmark_scores_command_prints_groups(bench, tmp_path, capsys):
    truth = item_truth(bench)
    for name, correct in (("alpha", {"alignment": 38, "musicality": 38}), ("beta", {"alignment": 12, "musicality": 12})):
        services.team_create(name=name)
        rows, _ = predictions_with_accuracy(truth, correct=correct)
        path = tmp_path / f"{name}.jsonl"
        path.write_bytes(jsonl(rows))
        call_command("benchmark_submit", "known-bench", "--team", name, "--file", str(path), "--json")
    capsys.readouterr()
    call_command("benchmark_scores", "known-bench", "--json", "--part", "all")
    report = json.loads(capsys.readouterr().out)
    block = report["dimensions"]["alignment"]
    assert [r["team"] for r in block["submissions"]] == ["alpha", "beta"]
    assert [r["group"] for r in block["submissions"]] == [1, 2]
    assert block["submissions"][0]["accuracy"] == pytest.approx(38 / 40)
    assert block["submissions"][0]["n"] == 40
    assert block["chance"] == 0.5
    # Odd pairs have one dissenting annotator of three; held out, each vote meets the other two's majority
    # only where they agree with each other.
    assert 0.5 < block["ceiling"]["accuracy"] < 1.0


def test_missing_items_count_wrong_and_show_as_coverage(bench, tmp_path):
    truth = item_truth(bench)
    rows, _ = predictions_with_accuracy(truth, correct={"alignment": 40, "musicality": 40})
    services.team_create(name="partial")
    sub = services.submission_from_file(benchmark=bench, team=services.team_create(name="partial"), data=jsonl(rows[:30]))
    table = selectors.scores(bench, part="all", dim="alignment")
    row = next(r for r in table["rows"] if r["submission"] == sub.pk)
    assert row["accuracy"] == pytest.approx(30 / 40)
    assert row["answered"] == 30
    assert Prediction.objects.filter(submission=sub).count() == 30


def test_identical_submissions_share_a_group(bench):
    truth = item_truth(bench)
    rows, _ = predictions_with_accuracy(truth, correct={"alignment": 30, "musicality": 30})
    for name in ("one", "two"):
        services.submission_from_file(benchmark=bench, team=services.team_create(name=name), data=jsonl(rows))
    table = selectors.scores(bench, part="all", dim="alignment")
    assert [r["rank"] for r in table["rows"]] == [1, 1]
    assert np.allclose(np.array(table["p"]), 1.0)
