"""The voter-reliability board: a cohort that always clicks the left side gets low skills; the order of the systems is recovered."""

from __future__ import annotations

import numpy as np

from arena.leaderboard import VoteRow, board_compute, counts_from_votes
from arena.leaderboard import noisy_board, noisy_boards


def votes(seed=0):
    rng = np.random.default_rng(seed)
    strength = {"s1": 1.5, "s2": 0.5, "s3": -0.5, "s4": -1.5}
    names = list(strength)
    rows = []
    for voter in range(40):
        noisy = voter >= 28  # the last 12 voters always click the left side, whatever they hear
        for _ in range(25):
            a, b = rng.choice(names, 2, replace=False)
            if noisy:
                winner = a
            else:
                p = 1 / (1 + np.exp(-(strength[a] - strength[b])))
                winner = a if rng.random() < p else b
            rows.append((f"v{voter}", a, b, "a" if winner == a else "b"))
    return rows


def test_noisy_cohort_gets_low_skill_and_order_is_recovered():
    rows = votes()
    board = noisy_board(rows, seed=0)
    assert [r["system"] for r in board["rows"]] == ["s1", "s2", "s3", "s4"]
    assert board["voters"] == 40
    skills = board["skills"]
    # On average only: the fit separates the cohort, not every voter in it (25 votes each).
    assert np.mean([skills[f"v{i}"] for i in range(28, 40)]) < np.mean([skills[f"v{i}"] for i in range(28)]) - 0.05
    # Beside the plain board, which has the same order but a compressed spread (the left-clickers add noise).
    plain = board_compute(counts_from_votes([VoteRow(a, b, v) for _, a, b, v in rows]), rounds=20, seed=0)
    plain_rating = {r["system"]: r["rating"] for r in plain["rows"]}
    noisy_rating = {r["system"]: r["rating"] for r in board["rows"]}
    assert noisy_rating["s1"] - noisy_rating["s4"] > plain_rating["s1"] - plain_rating["s4"]


def test_too_few_votes_and_ties_give_an_empty_board():
    board = noisy_board([("v", "a", "b", "tie")] * 50 + [("v", "a", "b", "a")] * 3)
    assert board["rows"] == [] and board["votes"] == 3
    both = noisy_boards([("v", "a", "b", "a", True)] * 3)
    assert set(both) == {"instrumental", "vocal"}


def test_the_leaderboard_page_shows_the_noisy_board_from_the_snapshot(client, db):
    from django.urls import reverse

    from arena.models import LeaderboardSnapshot

    noisy = noisy_boards([(v, a, b, vote, True) for v, a, b, vote in votes()])
    LeaderboardSnapshot.objects.create(votes=1000, payload={"boards": {}, "computed_at": None, "noisy": noisy})
    page = client.get(reverse("arena:leaderboard"))
    assert page.status_code == 200
    html = page.content.decode()
    assert "With voter reliability modelled" in html and "1000 votes from 40 voters" in html
    assert "Not enough decided votes yet (0)" in html  # the vocal board has none
