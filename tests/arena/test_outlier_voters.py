"""The outlier-voter screen on simulated visitors whose kind is known: honest ones flagged at most at the stated
false-positive rate, random and adversarial ones found; the screened board undoes a ballot-stuffing cohort."""

from __future__ import annotations

import math

import numpy as np
import pytest

from arena.boards import repeat_weights, screened_boards, voter_screen
from arena.leaderboard import VoteRow, board_with_style

SEEDS = range(20)


def simulated(seed: int, *, honest=150, random_=10, adversarial=10, votes=20, systems=8):
    """Honest visitors vote by the true strengths (5 % ties); random ones flip a coin; adversarial ones vote against the strengths."""
    rng = np.random.default_rng(seed)
    strength = rng.normal(0, 1.0, systems)
    names = [f"s{k}" for k in range(systems)]
    rows, kinds = [], {}
    for kind, count in (("honest", honest), ("random", random_), ("adversarial", adversarial)):
        for v in range(count):
            visitor = f"{kind}-{v}"
            kinds[visitor] = kind
            for k in range(votes):
                i, j = rng.choice(systems, 2, replace=False)
                p = 1 / (1 + math.exp(-(strength[i] - strength[j])))
                if kind == "honest":
                    vote = "tie" if rng.random() < 0.05 else ("a" if rng.random() < p else "b")
                elif kind == "random":
                    vote = "a" if rng.random() < 0.5 else "b"
                else:
                    vote = "a" if rng.random() < 1 - p else "b"
                rows.append(VoteRow(names[i], names[j], vote, k % 3 != 0, visitor=visitor, prompt=f"prompt {seed} {v} {k}", timestamp=float(k)))
    return rows, kinds


def rates(fp_rate: float, votes: int) -> dict[str, float]:
    found = {"honest": [0, 0], "random": [0, 0], "adversarial": [0, 0]}
    for seed in SEEDS:
        rows, kinds = simulated(seed, votes=votes)
        flagged = {f["visitor"] for f in voter_screen(rows, fp_rate=fp_rate, seed=seed)["flagged"]}
        for visitor, kind in kinds.items():
            found[kind][0] += visitor in flagged
            found[kind][1] += 1
    return {kind: hit / total for kind, (hit, total) in found.items()}


@pytest.mark.parametrize(
    ("fp_rate", "votes", "random_at_least", "adversarial_at_least"),
    [(0.01, 20, 0.45, 0.95), (0.01, 50, 0.85, 0.99), (0.05, 20, 0.65, 0.98)],
)
def test_honest_visitors_are_flagged_at_most_at_the_stated_rate_and_others_are_found(fp_rate, votes, random_at_least, adversarial_at_least):
    found = rates(fp_rate, votes)
    # 3000 honest visitors over 20 seeds.
    print(f"fp {fp_rate}, {votes} votes each: flagged honest {found['honest']:.4f}, random {found['random']:.3f}, adversarial {found['adversarial']:.3f}")
    assert found["honest"] <= fp_rate
    assert found["random"] >= random_at_least
    assert found["adversarial"] >= adversarial_at_least


@pytest.mark.parametrize("seed", [4, 5, 6])
def test_the_screened_board_leaves_out_a_ballot_stuffing_cohort(seed):
    """20 visitors with 60 votes each vote for "stuffed" whenever it plays (at random otherwise) beside 120 honest visitors with 15."""
    rng = np.random.default_rng(seed)
    strength = {"top": 1.0, "second": 0.5, "middle": 0.0, "stuffed": -0.6, "bottom": -1.0}
    names = list(strength)
    rows = []
    for v in range(120):
        for k in range(15):
            a, b = rng.choice(names, 2, replace=False)
            p = 1 / (1 + math.exp(-(strength[a] - strength[b])))
            rows.append(VoteRow(a, b, "a" if rng.random() < p else "b", True, visitor=f"h{v}", prompt=f"h {v} {k}", timestamp=float(k)))
    for v in range(20):
        for k in range(60):
            a, b = rng.choice(names, 2, replace=False)
            vote = "a" if a == "stuffed" else "b" if b == "stuffed" else ("a" if rng.random() < 0.5 else "b")
            rows.append(VoteRow(a, b, vote, True, visitor=f"x{v}", prompt=f"x {v} {k}", timestamp=float(k)))
    plain = {r["system"]: r["rating"] for r in board_with_style(rows, rounds=0)["rows"]}
    assert plain["stuffed"] > plain["middle"] + 60  # the cohort lifted it past a better system
    screen = voter_screen(rows, fp_rate=0.01, seed=0)
    flagged = {f["visitor"] for f in screen["flagged"]}
    cohort, honest = sum(v.startswith("x") for v in flagged), sum(v.startswith("h") for v in flagged)
    print(f"seed {seed}: cohort flagged {cohort}/20, honest flagged {honest}/120, {screen['refits']} fits")
    assert cohort >= 18 and honest <= 4
    assert screen["tested"] == screen["visitors"] == 140 and screen["flagged_votes"] == 60 * cohort + 15 * honest
    screened = screened_boards(rows, screen=screen, rounds=0)
    assert screened["flagged_votes_left_out"] == screen["flagged_votes"]
    order = [r["system"] for r in sorted(screened["boards"]["instrumental"]["rows"], key=lambda r: -r["rating"])]
    assert order == names


def test_repeats_weigh_as_one_battle_and_a_pasted_prompt_is_capped():
    same = [VoteRow("a", "b", "a", True, visitor="v1", prompt="Calm  piano", is_prebaked=False)] * 3
    other_pair = [VoteRow("a", "c", "a", True, visitor="v1", prompt="calm piano")]
    assert repeat_weights(same + other_pair) == [1 / 3, 1 / 3, 1 / 3, 1.0]
    pasted = [VoteRow("a", "b", "a", True, visitor=f"v{k}", prompt="same words") for k in range(40)]
    pool = [VoteRow("a", "b", "a", True, visitor=f"v{k}", prompt="pool prompt", is_prebaked=True) for k in range(40)]
    weights = repeat_weights(pasted + pool, cap=20)
    assert weights[:40] == [0.5] * 40 and weights[40:] == [1.0] * 40


def test_a_visitor_with_too_few_votes_is_not_tested_and_a_bad_rate_is_refused():
    rows = [VoteRow("a", "b", "a", True, visitor="once"), VoteRow("b", "a", "a", True, visitor="once")]
    screen = voter_screen(rows, min_votes=10)
    assert screen["tested"] == 0 and screen["untested"] == 1 and screen["flagged"] == []
    with pytest.raises(ValueError, match="between 0 and 1"):
        voter_screen(rows, fp_rate=1.5)
