"""The ratings report's resampled figures equal a straightforward computation on explicit resamples.

The report computes every resample at once from multiplicities (scoring.ratings); here each resample is built as the
array it stands for (clips drawn with replacement, raters drawn with replacement with all their ratings) and measured
with scipy and pandas one by one. The report shows figures rounded to 4 decimals; they must be the same figures.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from scoring import ratings
from scoring.stats import num
from tests.ratings_sim import simulate

ROUNDS, SEED = 150, 3


def interval(values) -> list:
    values = np.asarray(values, dtype=float)
    values = values[~np.isnan(values)]
    return [num(np.percentile(values, 2.5)), num(np.percentile(values, 97.5))]


@pytest.fixture(scope="module")
def study():
    frame, truth, _ = simulate(seed=11, clips=60, acr=True, bias_sd=0.3, noise_sd=0.6)
    rng = np.random.default_rng(5)
    clips = np.array(sorted(truth))
    true = np.array([truth[c] for c in clips])
    # One judge with continuous scores, one on a coarse scale (ties within a resample beyond the repeated clips).
    judges = pd.DataFrame({
        "judge": np.repeat(["coarse", "fine"], len(clips)),
        "clip_id": np.tile(clips, 2),
        "dimension": "musicality",
        "score": np.r_[np.round(true + rng.normal(0, 0.5, len(clips))), true + rng.normal(0, 0.5, len(clips))],
    })
    return frame, judges, ratings.ratings_compute(frame, judge_scores=judges, rounds=ROUNDS, seed=SEED)


def test_judges_against_mos_equal_scipy_on_each_resample_of_clips(study):
    frame, judges, section = study
    rated = ratings.screened(frame)[0]
    mos = ratings.mos_by(rated, "clip_id")
    system_of = rated.drop_duplicates("clip_id").set_index("clip_id")["system"]
    assert [row["judge"] for row in section["judges"]] == ["coarse", "fine"]
    for row in section["judges"]:
        part = judges[judges["judge"] == row["judge"]].merge(mos, on=["clip_id", "dimension"]).sort_values("clip_id")
        pred, truth, system = part["score"].to_numpy(), part["mos"].to_numpy(), part["clip_id"].map(system_of).to_numpy()
        draws = np.random.default_rng(SEED).integers(0, len(part), size=(ROUNDS, len(part)))
        assert row["clip"]["intervals"] == {
            "lcc": interval([np.corrcoef(pred[d], truth[d])[0, 1] for d in draws]),
            "srcc": interval([sps.spearmanr(pred[d], truth[d]).statistic for d in draws]),
            # Kendall's clip-level interval: the first 100 resamples, as the report has always shown it.
            "ktau": interval([sps.kendalltau(pred[d], truth[d]).statistic for d in draws[:100]]),
        }
        lcc, srcc, ktau = [], [], []
        for d in draws:
            means = pd.DataFrame({"system": system[d], "pred": pred[d], "truth": truth[d]}).groupby("system").mean()
            if len(means) < len(set(system)):
                continue  # a system without a drawn clip: no system-level figure for that round
            lcc.append(np.corrcoef(means["pred"], means["truth"])[0, 1])
            srcc.append(sps.spearmanr(means["pred"], means["truth"]).statistic)
            ktau.append(sps.kendalltau(means["pred"], means["truth"]).statistic)
        assert row["system"]["intervals"] == {"lcc": interval(lcc), "srcc": interval(srcc), "ktau": interval(ktau)}
        assert row["clip"]["srcc"] == num(sps.spearmanr(pred, truth).statistic) and row["clip"]["ktau"] == num(sps.kendalltau(pred, truth).statistic)


def test_rater_bootstrap_equals_the_means_of_explicit_rater_resamples(study):
    frame, _, section = study
    rated = ratings.screened(frame)[0]
    raters = np.unique(rated["annotator_id"])
    counts = np.random.default_rng(SEED).multinomial(len(raters), np.full(len(raters), 1 / len(raters)), size=ROUNDS)
    clip_means, system_means = [], []
    for drawn in counts:
        # Every rater repeated as often as drawn, with all their ratings.
        resample = rated.loc[rated.index.repeat(rated["annotator_id"].map(dict(zip(raters, drawn))))]
        clip_means.append(resample.groupby("clip_id")["value"].mean())
        system_means.append(resample.groupby("system")["value"].mean())
    for key, means, rows in (("clip_id", clip_means, section["mos_clips"]), ("system", system_means, section["mos_systems"])):
        table = pd.concat(means, axis=1)  # groups x rounds; NaN where none of a group's raters was drawn
        expected = pd.DataFrame({key: table.index, "low": np.nanpercentile(table, 2.5, axis=1), "high": np.nanpercentile(table, 97.5, axis=1)})
        got = ratings.rater_bootstrap(rated.assign(system=rated["system"].fillna("")), key, rounds=ROUNDS, seed=SEED)
        assert got[key].tolist() == expected[key].tolist()
        assert np.allclose(got["boot_low"], expected["low"], rtol=0, atol=1e-12) and np.allclose(got["boot_high"], expected["high"], rtol=0, atol=1e-12)
        # The report's rounded figures: numpy's interpolation may round the other way on an exact tie at the 5th decimal.
        shown = {r[key]: [r["boot_low"], r["boot_high"]] for r in rows}
        for group, low, high in zip(expected[key], expected["low"], expected["high"]):
            assert shown[group] == pytest.approx([low, high], abs=0.50001e-4), group
