"""Statistics of absolute ratings against known truths and independent computations."""

import krippendorff
import numpy as np
import pandas as pd
import pytest

from scoring import ratings, resampled
from tests.ratings_sim import simulate

# Shrout & Fleiss (1979), Table 2: six targets rated by four judges; the paper gives ICC(2,1) = .29 and ICC(2,4) = .62.
SHROUT_FLEISS = np.array([[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]])


def test_icc_matches_shrout_and_fleiss_worked_example():
    out = ratings.icc2k(SHROUT_FLEISS)
    assert round(out["icc2_1"], 2) == 0.29 and round(out["icc2_k"], 2) == 0.62 and out["k"] == 4


def test_icc_block_finds_the_complete_crossed_design():
    rows = [(i, r, i, i, "s", "musicality", float(v), "regular", "test", np.nan, np.nan) for i, line in enumerate(SHROUT_FLEISS) for r, v in enumerate(line)]
    frame = pd.DataFrame(rows, columns=ratings.RATING_COLUMNS)
    assert ratings.icc_block(frame)["icc2_k"] == pytest.approx(ratings.icc2k(SHROUT_FLEISS)["icc2_k"])


@pytest.mark.parametrize("level", ["interval", "ordinal"])
def test_alpha_equals_the_package_on_the_rater_by_clip_matrix(level):
    frame, _, _ = simulate(seed=3, acr=True, bias_sd=0.3, noise_sd=0.6)
    matrix = frame.pivot_table(index="annotator_id", columns="clip_id", values="value").to_numpy()
    expected = krippendorff.alpha(reliability_data=matrix, level_of_measurement=level)
    assert ratings.krippendorff_alpha(frame, level) == pytest.approx(expected, abs=1e-4)


def test_t_interval_is_p808s_formula():
    values = np.array([4, 5, 3, 4, 4, 2, 5])
    low, high = ratings.t_interval(values)
    half = 2.4469118511449692 * values.std(ddof=1) / np.sqrt(7)  # t(0.975, 6)
    assert (low, high) == pytest.approx((values.mean() - half, values.mean() + half))
    table = ratings.mos_by(pd.DataFrame({"clip_id": [1] * 7, "dimension": ["m"] * 7, "value": values}), "clip_id")
    assert table.loc[0, "t_low"] == pytest.approx(low)


def test_mos_intervals_cover_the_known_truth_at_close_to_the_nominal_rate():
    clip_hits = clip_total = system_hits = system_total = 0
    for seed in range(150):
        frame, truth, system_truth = simulate(seed=seed)
        clips = ratings.mos_by(frame, "clip_id")
        clip_hits += int(sum(lo <= truth[c] <= hi for c, lo, hi in zip(clips["clip_id"], clips["t_low"], clips["t_high"])))
        clip_total += len(clips)
        if seed < 60:
            boot = ratings.rater_bootstrap(frame, "clip_id", rounds=400, seed=seed)
            system = ratings.rater_bootstrap(frame, "system", rounds=400, seed=seed)
            system_hits += int(sum(lo <= system_truth[s] <= hi for s, lo, hi in zip(system["system"], system["boot_low"], system["boot_high"])))
            system_total += len(system)
            assert boot["boot_low"].notna().all()
    clip_rate, system_rate = clip_hits / clip_total, system_hits / system_total
    # 6,000 clip intervals: the binomial sd at 0.95 is 0.003.
    assert 0.935 <= clip_rate <= 0.965, clip_rate
    # The rater bootstrap: 240 system intervals, percentile method with 60 raters.
    assert 0.88 <= system_rate <= 0.99, system_rate


def test_rater_bias_and_consistency_recover_the_simulated_raters():
    frame, _, _ = simulate(seed=1, raters=20, clips=200, per_clip=10, bias_sd=8.0, noise_sd=4.0)
    table = ratings.rater_table(frame).set_index("annotator_id")
    true_bias = pd.Series(frame.attrs["bias"]).reindex(table.index)
    # Bias is measured against the other raters, so it tracks the simulated bias up to a shift.
    assert np.corrcoef(table["bias"], true_bias)[0, 1] > 0.95
    assert (table["consistency"] > 0.8).all()


def test_post_screening_flags_reference_below_90_or_anchor_above_90_in_over_15_percent():
    rows = []
    for trial in range(10):
        # Rater 1 rates the reference 80 in 2 of 10 trials (20 %): flagged. Rater 2 once (10 %): kept.
        rows.append((trial, 1, trial, 100 + trial, "", "musicality", 80.0 if trial < 2 else 95.0, "regular", "reference", np.nan, np.nan))
        rows.append((100 + trial, 2, trial, 100 + trial, "", "musicality", 80.0 if trial < 1 else 95.0, "regular", "reference", np.nan, np.nan))
        # Rater 3 rates the anchor above 90 in 3 of 10 trials: flagged.
        rows.append((200 + trial, 3, trial, 300 + trial, "", "musicality", 95.0 if trial < 3 else 10.0, "regular", "anchor", np.nan, np.nan))
    table = ratings.post_screening(pd.DataFrame(rows, columns=ratings.RATING_COLUMNS)).set_index("annotator_id")
    assert table["flagged"].to_dict() == {1: True, 2: False, 3: True}
    assert table.loc[1, "reference_below_90"] == 2 and table.loc[3, "anchor_above_90"] == 3


def test_gold_and_trap_checks_count_ratings_outside_the_expected_range():
    rows = [
        (1, 7, 1, 1, "", "musicality", 5.0, "gold", "test", 4.0, 5.0),
        (2, 7, 2, 2, "", "musicality", 2.0, "gold", "test", 4.0, 5.0),
        (3, 7, 3, 3, "", "musicality", 3.0, "trap", "test", 1.0, 1.0),
        (4, 8, 3, 3, "", "musicality", 1.0, "trap", "test", 1.0, 1.0),
    ]
    table = ratings.gold_checks(pd.DataFrame(rows, columns=ratings.RATING_COLUMNS)).set_index("annotator_id")
    assert table.loc[7].to_dict() == {"gold_seen": 2, "gold_failed": 1, "trap_seen": 1, "trap_failed": 1}
    assert table.loc[8, "trap_failed"] == 0


def test_judges_against_mos_at_clip_and_system_level_with_clip_intervals():
    frame, truth, _ = simulate(seed=5, clips=80)
    clips = ratings.mos_by(frame, "clip_id")
    rng = np.random.default_rng(0)
    scores = pd.DataFrame({"judge": "good", "clip_id": list(truth), "dimension": "musicality", "score": [t + rng.normal(0, 3) for t in truth.values()]})
    clip_mos = clips[["clip_id", "dimension", "mos"]].assign(system=lambda f: "sys-" + (f["clip_id"] % 4).astype(str))
    (row,) = ratings.judges_vs_humans(clip_mos, scores, rounds=300, seed=0)
    merged = scores.merge(clip_mos, on=["clip_id", "dimension"])
    from scipy import stats

    assert row["clip"]["srcc"] == pytest.approx(stats.spearmanr(merged["score"], merged["mos"]).statistic, abs=1e-4)
    low, high = row["clip"]["intervals"]["srcc"]
    assert low <= row["clip"]["srcc"] <= high and row["clip"]["srcc"] > 0.7
    assert row["system"]["n"] == 4 and row["system"]["srcc"] == pytest.approx(1.0)


def test_resamples_as_multiplicities_equal_explicit_resamples():
    from scipy import stats

    rng = np.random.default_rng(0)
    x = rng.normal(size=300)
    y = np.rint(2 * x + rng.normal(size=300))
    resamples = resampled.clip_resamples(300, rounds=5, seed=7)
    draws = resampled.clip_draws(300, rounds=5, seed=7)
    assert np.array_equal(resamples.counts, np.stack([np.bincount(d, minlength=300) for d in draws], axis=1))
    assert np.allclose(resampled.weighted_srcc(x, y, resamples), [stats.spearmanr(x[d], y[d]).statistic for d in draws])
    assert np.allclose(resampled.resampled_pearson(x, y, resamples), [np.corrcoef(x[d], y[d])[0, 1] for d in draws])
    xs, ys = rng.normal(size=(4, 6)), np.rint(rng.normal(size=(4, 6)))
    assert np.allclose(resampled._tau_b_small(xs, ys), [stats.kendalltau(a, b).statistic for a, b in zip(xs, ys)])
