"""Bradley–Terry fit against an independent reference, bootstrap, ranks, filters."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import minimize

from arena.leaderboard import ELO_PER_NAT, VoteRow, board_compute, boards_compute, counts_from_votes


def simulated_votes(n_systems=6, n_votes=3000, seed=7, tie_rate=0.1, both_bad_rate=0.05):
    rng = np.random.default_rng(seed)
    strength = rng.normal(0, 0.8, n_systems)
    names = [f"sys{k}" for k in range(n_systems)]
    rows = []
    for _ in range(n_votes):
        i, j = rng.choice(n_systems, 2, replace=False)
        u = rng.random()
        if u < both_bad_rate:
            vote = "both_bad"
        elif u < both_bad_rate + tie_rate:
            vote = "tie"
        else:
            vote = "a" if rng.random() < 1 / (1 + math.exp(-(strength[i] - strength[j]))) else "b"
        rows.append(VoteRow(names[i], names[j], vote))
    return names, rows


def reference_ratings(names, rows, *, both_bad="exclude"):
    """BT by direct maximum likelihood over individual votes with scipy (not the project's solver)."""
    idx = {n: k for k, n in enumerate(names)}
    a, b, score = [], [], []
    for r in rows:
        if r.vote == "both_bad" and both_bad == "exclude":
            continue
        a.append(idx[r.system_a])
        b.append(idx[r.system_b])
        score.append({"a": 1.0, "b": 0.0, "tie": 0.5, "both_bad": 0.5}[r.vote])
    a, b, score = np.array(a), np.array(b), np.array(score)

    def nll(theta):
        d = theta[a] - theta[b]
        return float(np.sum(score * np.logaddexp(0, -d) + (1 - score) * np.logaddexp(0, d)))

    def grad(theta):
        d = theta[a] - theta[b]
        g = -(score - 1 / (1 + np.exp(-d)))
        out = np.zeros(len(names))
        np.add.at(out, a, g)
        np.add.at(out, b, -g)
        return out

    fit = minimize(nll, np.zeros(len(names)), jac=grad, method="L-BFGS-B", options={"gtol": 1e-10, "ftol": 1e-14, "maxiter": 10000})
    theta = fit.x - fit.x.mean()
    return {n: ELO_PER_NAT * theta[idx[n]] + 1000.0 for n in names}


def test_ratings_match_independent_maximum_likelihood_fit():
    names, rows = simulated_votes()
    board = board_compute(counts_from_votes(rows), rounds=0)
    ref = reference_ratings(names, rows)
    assert len(board["rows"]) == len(names)
    for row in board["rows"]:
        assert abs(row["rating"] - ref[row["system"]]) < 0.5, (row, ref[row["system"]])
    # Mean-centred at 1000 and spread out (a solver returning zeros would fail here).
    assert abs(np.mean([r["rating"] for r in board["rows"]]) - 1000) < 0.05
    assert max(r["rating"] for r in board["rows"]) - min(r["rating"] for r in board["rows"]) > 100


def test_both_bad_as_tie_matches_reference_when_configured():
    names, rows = simulated_votes(seed=11, both_bad_rate=0.2)
    counts = counts_from_votes(rows, both_bad="tie")
    board = board_compute(counts, rounds=0)
    ref = reference_ratings(names, rows, both_bad="tie")
    for row in board["rows"]:
        assert abs(row["rating"] - ref[row["system"]]) < 0.5
    excluded = counts_from_votes(rows)
    assert counts.total - excluded.total == sum(r.vote == "both_bad" for r in rows)


def test_ties_count_half_a_win_each_way():
    rows = [VoteRow("x", "y", "tie")] * 10 + [VoteRow("x", "y", "a")] * 10 + [VoteRow("y", "x", "a")] * 10
    board = board_compute(counts_from_votes(rows), rounds=0)
    ratings = {r["system"]: r["rating"] for r in board["rows"]}
    # 15 wins each (10 + half of 10 ties): exactly even.
    assert ratings["x"] == pytest.approx(1000.0, abs=1e-6)
    rows = [VoteRow("x", "y", "a")] * 30 + [VoteRow("x", "y", "b")] * 10
    ratings = {r["system"]: r["rating"] for r in board_compute(counts_from_votes(rows), rounds=0)["rows"]}
    # 3:1 odds -> 400*log10(3) points apart.
    assert ratings["x"] - ratings["y"] == pytest.approx(400 * math.log10(3), abs=0.05)


def test_bootstrap_is_reproducible_with_a_seed():
    _, rows = simulated_votes(n_votes=800)
    counts = counts_from_votes(rows)
    first = board_compute(counts, rounds=200, seed=5)
    again = board_compute(counts, rounds=200, seed=5)
    other = board_compute(counts, rounds=200, seed=6)
    assert first == again
    assert [(r["lower"], r["upper"]) for r in first["rows"]] != [(r["lower"], r["upper"]) for r in other["rows"]]
    for row in first["rows"]:
        assert row["lower"] < row["rating"] < row["upper"]


def test_bootstrap_interval_shrinks_with_more_votes():
    _, few = simulated_votes(n_votes=300, seed=3)
    _, many = simulated_votes(n_votes=6000, seed=3)
    width = lambda rows: np.mean([r["upper"] - r["lower"] for r in board_compute(counts_from_votes(rows), rounds=200)["rows"]])
    assert width(many) < width(few) / 2.5


def test_anchor_holds_its_rating():
    _, rows = simulated_votes()
    centred = {r["system"]: r["rating"] for r in board_compute(counts_from_votes(rows), rounds=0)["rows"]}
    anchored = {r["system"]: r["rating"] for r in board_compute(counts_from_votes(rows), rounds=0, anchor="sys2", anchor_rating=1114)["rows"]}
    assert anchored["sys2"] == pytest.approx(1114, abs=0.01)
    # Only a shift: differences are unchanged.
    assert anchored["sys0"] - anchored["sys1"] == pytest.approx(centred["sys0"] - centred["sys1"], abs=0.02)


def test_rank_counts_systems_whose_interval_is_entirely_above():
    rows = []
    for strong, weak, n in (("top", "mid", 400), ("mid", "low", 400), ("top", "low", 400), ("mid", "twin", 1)):
        rows += [VoteRow(strong, weak, "a")] * int(n * 0.8) + [VoteRow(strong, weak, "b")] * (n - int(n * 0.8))
    rows += [VoteRow("twin", "low", "a")] * 300 + [VoteRow("twin", "low", "b")] * 100 + [VoteRow("twin", "top", "b")] * 320 + [VoteRow("twin", "top", "a")] * 80
    board = board_compute(counts_from_votes(rows), rounds=300, seed=1)
    by = {r["system"]: r for r in board["rows"]}
    for row in board["rows"]:
        above = sum(1 for other in board["rows"] if other is not row and other["lower"] > row["upper"])
        assert row["rank"] == 1 + above
    assert by["top"]["rank"] == 1
    assert by["low"]["rank"] > by["mid"]["rank"]


def test_private_and_thin_systems_are_fitted_but_not_listed():
    _, rows = simulated_votes()
    rows += [VoteRow("newbie", "sys0", "a")] * 3
    board = board_compute(counts_from_votes(rows), rounds=0, min_votes=10, hidden={"sys1"})
    listed = {r["system"] for r in board["rows"]}
    assert "newbie" not in listed and "sys1" not in listed
    assert {"sys0", "sys2", "sys3"} <= listed
    # The thin system is named as preliminary with its count; the private one stays unnamed.
    assert board["preliminary"] == [{"system": "newbie", "votes": 3}]


def test_boards_split_instrumental_and_vocal():
    rows = [VoteRow("p", "q", "a", True)] * 5 + [VoteRow("p", "q", "b", True)] * 5 + [VoteRow("v1", "v2", "a", False)] * 6 + [VoteRow("v1", "v2", "b", False)] * 2
    result = boards_compute(rows, rounds=20)
    assert {r["system"] for r in result["boards"]["instrumental"]["rows"]} == {"p", "q"}
    assert {r["system"] for r in result["boards"]["vocal"]["rows"]} == {"v1", "v2"}


def test_unbeaten_system_stays_finite():
    rows = [VoteRow("champ", "x", "a")] * 40 + [VoteRow("x", "y", "a")] * 20 + [VoteRow("x", "y", "b")] * 20
    board = board_compute(counts_from_votes(rows), rounds=100, seed=0)
    assert all(np.isfinite([r["rating"], r["lower"], r["upper"]]).all() for r in board["rows"])
    assert board["rows"][0]["system"] == "champ"


def test_unknown_vote_is_refused():
    with pytest.raises(ValueError, match="unknown vote"):
        counts_from_votes([VoteRow("x", "y", "A")])
