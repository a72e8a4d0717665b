"""McNemar's exact test beside the paired bootstrap: the function, the leaderboard API and page, and `benchmark_scores --json`."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from django.core.management import call_command
from django.test import Client
from scipy.stats import binomtest

from scoring.benchmarks import services
from scoring.stats import mcnemar_tests
from tests.benchmarks.helpers import item_truth, jsonl, known_study, predictions_with_accuracy
from tests.factories import UserFactory


def test_mcnemar_counts_discordant_items_and_matches_a_direct_binomial_test():
    # i right where j is wrong on 9 items, j right where i is wrong on 2; both right on 5, both wrong on 4.
    i = [1.0] * 9 + [0.0] * 2 + [1.0] * 5 + [0.0] * 4
    j = [0.0] * 9 + [1.0] * 2 + [1.0] * 5 + [0.0] * 4
    result = mcnemar_tests([i, j])
    assert result["discordant"][0, 1] == 9 and result["discordant"][1, 0] == 2
    assert result["p"][0, 1] == pytest.approx(binomtest(2, 11, 0.5).pvalue)
    assert result["p"][0, 1] == result["p"][1, 0]
    assert result["p"][0, 0] == 1.0
    # One pair: Holm changes nothing.
    assert result["p_holm"][0, 1] == pytest.approx(result["p"][0, 1])


@pytest.mark.parametrize("n", [1, 2, 3, 7, 10, 25, 60])
def test_mcnemar_p_equals_binomtest_for_every_split(n):
    # Submissions built to give exactly b and c discordant items, for every b + c = n.
    for b in range(n + 1):
        c = n - b
        first = [1.0] * b + [0.0] * c + [1.0, 0.0]
        second = [0.0] * b + [1.0] * c + [1.0, 0.0]
        result = mcnemar_tests([first, second])
        assert (result["discordant"][0, 1], result["discordant"][1, 0]) == (b, c)
        assert result["p"][0, 1] == pytest.approx(binomtest(min(b, c), n, 0.5).pvalue, rel=1e-9, abs=1e-15)


def test_mcnemar_half_credit_is_not_correct_and_no_discordance_gives_one():
    result = mcnemar_tests([[0.5, 1.0, 0.0], [0.0, 1.0, 0.0]])
    assert result["discordant"].tolist() == [[0, 0], [0, 0]]
    assert result["p"][0, 1] == 1.0


def test_mcnemar_holm_over_three_submissions():
    rng = np.random.default_rng(3)
    scores = (rng.random((3, 200)) < np.array([[0.9], [0.6], [0.55]])).astype(float)
    result = mcnemar_tests(scores)
    raw = [result["p"][0, 1], result["p"][0, 2], result["p"][1, 2]]
    order = np.argsort(raw)
    expected = np.maximum.accumulate([min(1.0, (3 - k) * raw[order[k]]) for k in range(3)])
    adjusted = [result["p_holm"][0, 1], result["p_holm"][0, 2], result["p_holm"][1, 2]]
    for k, idx in enumerate(order):
        assert adjusted[idx] == pytest.approx(expected[k])


@pytest.mark.django_db
def test_mcnemar_in_the_api_the_page_and_the_scores_command(tmp_path):
    study, _ = known_study(n_pairs=40, name="mcn")
    bench = services.benchmark_create(name="mcn", study=study, bootstrap_rounds=200, public_share=0.5)
    truth = item_truth(bench)
    user = UserFactory(username="mcn-member")
    rows = {}
    for name, k in (("strong", 36), ("weak", 18)):
        services.team_create(name=name, members=[user])
        rows[name], _ = predictions_with_accuracy(truth, correct={"alignment": k, "musicality": k}, seed=len(name))
        services.submission_from_file(benchmark=bench, team=services.team_create(name=name), data=jsonl(rows[name]), user=user)
    # Direct count on the public part, musicality.
    public = {i.item_id for i in bench.items.filter(is_private=False)}
    right = {name: {r["id"] for r in rows[name] if r["id"] in public and r["preferred_musicality"] == truth[r["id"]]["musicality"]} for name in rows}
    b, c = len(right["strong"] - right["weak"]), len(right["weak"] - right["strong"])
    expected_p = binomtest(min(b, c), b + c, 0.5).pvalue

    client = Client()
    client.force_login(user)
    body = client.get("/api/benchmarks/mcn/leaderboard/?dim=musicality").json()
    (pair,) = body["pairs"]
    assert (pair["a_only"], pair["b_only"]) == (b, c)
    assert pair["mcnemar_p"] == pytest.approx(expected_p)
    assert pair["bootstrap_p"] is not None
    assert body["pairwise"]["mcnemar"]["discordant"][0][1] in (b, c)

    page = client.get("/benchmarks/mcn/?dim=musicality").content.decode()
    assert 'id="pairwise"' in page and f"{expected_p:.4f}" in page

    out = io.StringIO()
    call_command("benchmark_scores", "mcn", "--json", stdout=out)
    report = json.loads(out.getvalue())
    (cmd_pair,) = report["dimensions"]["musicality"]["pairwise"]
    assert cmd_pair["mcnemar"]["p"] == pytest.approx(expected_p)
    assert (cmd_pair["mcnemar"]["a_right_b_wrong"], cmd_pair["mcnemar"]["b_right_a_wrong"]) == (b, c)
