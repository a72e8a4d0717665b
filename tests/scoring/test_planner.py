"""The study planner: its vectorised test is the report's test, and the power it predicts holds when studies of the
planned size are drawn by another generator and run through the report's own comparison."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit

from scoring import planner, results


def test_the_vectorised_test_is_the_reports_cluster_test_row_by_row():
    rng = np.random.default_rng(3)
    games = rng.integers(0, 5, size=(300, 12)).astype(float)
    games[:5, 1:] = 0  # a single condition: no test
    games[5:10] = 2.0
    wins = rng.binomial(games.astype(int), 0.6) + 0.5 * rng.binomial(1, 0.1, size=games.shape) * (games > 0)
    wins = np.minimum(wins, games)
    wins[5:10] = 1.0  # every condition exactly even: no spread, p = 1
    wins[10] = games[10]  # every vote won: no spread, p = 0
    got = planner.cluster_p_values(wins, games)
    for k in range(len(games)):
        want = results.cluster_test(wins[k], games[k])[1]
        assert (np.isnan(got[k]) and np.isnan(want)) or got[k] == pytest.approx(want, abs=1e-12), k


def test_the_logit_centre_gives_the_asked_win_rate_over_conditions():
    for rate, sd in ((0.6, 0.5), (0.3, 1.5), (0.9, 2.0), (0.55, 0.0)):
        model = planner.PairwiseModel(win_rate=rate, condition_sd=sd, tie_rate=0.0)
        draws = expit(model.centre() + sd * np.random.default_rng(0).standard_normal(400_000))
        assert draws.mean() == pytest.approx(rate, abs=0.002)


# --- An independent generator: vote frames as the report reads them ----------------------------


def _votes_frame(rng, condition_rates: np.ndarray, votes: int, tie_rate: float, annotators: int = 15) -> pd.DataFrame:
    """Votes between aurora and brook: each condition's expected score of aurora is given, a vote is a tie with
    tie_rate, and either system may sit on the pair's A side (the score is then the other way round)."""
    c = len(condition_rates)
    condition = np.repeat(np.arange(c), votes)
    s = np.repeat(condition_rates, votes)
    tie = rng.random(len(s)) < tie_rate
    win = rng.random(len(s)) < np.clip((s - tie_rate / 2) / (1 - tie_rate), 0, 1)
    score = np.where(tie, 0.5, win.astype(float))
    swapped = rng.random(len(s)) < 0.5
    return pd.DataFrame(
        {
            "pair_id": condition * 2 + swapped,
            "annotator": rng.integers(0, annotators, len(s)),
            "system_a": np.where(swapped, "brook", "aurora"),
            "system_b": np.where(swapped, "aurora", "brook"),
            "condition": condition,
            "score_musicality": np.where(swapped, 1 - score, score),
        }
    )


def _empirical_power(draw_rates, conditions: int, votes: int, tie_rate: float, alpha: float, studies: int, seed: int) -> float:
    """Share of drawn studies whose report comparison (results.compare_systems, no bootstrap) rejects at alpha."""
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(studies):
        frame = _votes_frame(rng, draw_rates(rng, conditions), votes, tie_rate)
        p = results.compare_systems(frame, "aurora", "brook", "musicality", rounds=0)["p"]
        hits += p is not None and p < alpha
    return hits / studies


def _logit_normal(centre, sd):
    return lambda rng, c: expit(centre + sd * rng.standard_normal(c))


@pytest.mark.slow
@pytest.mark.parametrize(("rate", "sd", "ties", "votes", "alpha"), [(0.6, 0.5, 0.1, 4, 0.05), (0.35, 1.0, 0.0, 2, 0.0167), (0.58, 0.2, 0.25, 8, 0.05)])
def test_the_planned_size_has_the_predicted_power_on_the_reports_own_test(rate, sd, ties, votes, alpha):
    """The planner's power, checked by drawing 1,000 studies of the planned size from the true model through the report's comparison: within 5 points."""
    model = planner.PairwiseModel(win_rate=rate, condition_sd=sd, tie_rate=ties)
    plan = planner.plan(model, alpha=alpha, per_condition=(votes,))
    [row] = plan["rows"]
    assert row["power"] >= 0.8 and row["total"] == row["conditions"] * votes
    seen = _empirical_power(_logit_normal(model.centre(), sd), row["conditions"], votes, ties, alpha, studies=1000, seed=11)
    assert abs(seen - row["power"]) <= 0.05, (row, seen)
    # And one size smaller than planned falls short on the planner's own draws: the size is the fewest that reach it.
    assert planner.power_pairwise(model, row["conditions"] - 1, votes, alpha=alpha) < 0.8


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_plan_with_a_pilots_spread_predicts_the_power_on_data_from_another_model_within_five_points(seed):
    """Conditions whose win rates are Beta-distributed (not the planner's logit-normal), with ties. The page's usual
    use: the researcher types the effect worth finding (here the truth, 0.6) and the spread between conditions and
    the ties come from a pilot (1,500 conditions, so that what is measured is the model's shape, not the pilot's
    luck). Studies of the planned size drawn from the Beta truth reach the predicted power within 5 points."""
    rng = np.random.default_rng(100 + seed)
    a_, b_ = 6.0, 4.0  # mean 0.6, sd 0.15 between conditions
    beta = lambda r, c: r.beta(a_, b_, c)  # noqa: E731
    pilot = _votes_frame(rng, beta(rng, 1500), 3, 0.15)
    fitted = planner.fit_pairwise(pilot, "aurora", "brook", "musicality")
    # The pilot's own effect is within sampling error of the truth (about 0.008 here), its ties too.
    assert fitted.win_rate == pytest.approx(0.6, abs=0.025) and fitted.tie_rate == pytest.approx(0.15, abs=0.025)
    # The Beta's spread carried to the logit scale at 0.6: 0.15 / (0.6 * 0.4) = 0.62.
    assert 0.35 < fitted.condition_sd < 0.9
    model = planner.PairwiseModel(win_rate=0.6, condition_sd=fitted.condition_sd, tie_rate=fitted.tie_rate)
    [row] = planner.plan(model, per_condition=(3,))["rows"]
    seen = _empirical_power(beta, row["conditions"], 3, 0.15, 0.05, studies=1000, seed=7 + seed)
    assert abs(seen - row["power"]) <= 0.05, (fitted, row, seen)


@pytest.mark.slow
def test_a_rating_plan_has_the_predicted_power_on_the_reports_paired_test():
    """Ratings on a 0-100 scale, rounded to whole points, drawn per rater and condition: the report's rating section
    (paired t-test over conditions) at the planned size rejects as often as the planner predicts, within 5 points."""
    model = planner.RatingModel(difference=6.0, condition_sd=8.0, rating_sd=15.0)
    [row] = planner.plan(model, per_condition=(3,))["rows"]
    rng = np.random.default_rng(5)
    hits = 0
    studies = 600
    for _ in range(studies):
        c = row["conditions"]
        centre = rng.uniform(30, 70, c)
        true_diff = model.difference + model.condition_sd * rng.standard_normal(c)
        rows = []
        for system, shift in (("aurora", true_diff / 2), ("brook", -true_diff / 2)):
            values = np.round(np.repeat(centre + shift, 3) + model.rating_sd * rng.standard_normal(3 * c))
            rows.append(pd.DataFrame({"system": system, "condition": np.repeat(np.arange(c), 3), "dimension": "musicality", "value": values}))
        section = results.rating_section(pd.concat(rows), dimensions=["musicality"])
        [diff] = section["dimensions"]["musicality"]["differences"]
        hits += diff["p"] is not None and diff["p"] < 0.05
    assert abs(hits / studies - row["power"]) <= 0.05, (row, hits / studies)


def test_the_rating_fit_recovers_the_spreads_of_a_large_pilot():
    rng = np.random.default_rng(9)
    c, k = 400, 4
    true_diff = 5.0 + 6.0 * rng.standard_normal(c)
    rows = []
    for system, shift in (("aurora", true_diff / 2), ("brook", -true_diff / 2)):
        rows.append(pd.DataFrame({"system": system, "condition": np.repeat(np.arange(c), k), "dimension": "musicality", "value": np.repeat(50 + shift, k) + 12.0 * rng.standard_normal(k * c)}))
    model = planner.fit_rating(pd.concat(rows), "aurora", "brook", "musicality")
    assert model.difference == pytest.approx(5.0, abs=1.0)
    assert model.rating_sd == pytest.approx(12.0, abs=0.6)
    assert model.condition_sd == pytest.approx(6.0, abs=1.2)


def test_more_votes_per_condition_need_fewer_conditions_and_a_null_effect_plans_nothing():
    plan = planner.plan(planner.PairwiseModel(win_rate=0.62, condition_sd=0.6, tie_rate=0.1), simulations=800)
    conditions = [r["conditions"] for r in plan["rows"]]
    assert conditions == sorted(conditions, reverse=True) and conditions[0] > conditions[-1]
    assert all(r["power"] >= 0.8 for r in plan["rows"])
    null = planner.plan(planner.PairwiseModel(win_rate=0.5, condition_sd=0.6, tie_rate=0.1))
    assert all(r["conditions"] is None for r in null["rows"]) and "equal" in null["note"]
    with pytest.raises(ValueError):
        planner.plan(planner.PairwiseModel(win_rate=1.0, condition_sd=0.6, tie_rate=0.0))
