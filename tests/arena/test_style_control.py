"""Style control: a known-truth simulation, an independent logistic regression, the release and the command.

The references are written apart from arena/style.py: the design matrix is built here from the
release's columns, and scikit-learn's LogisticRegression solves it.
"""

from __future__ import annotations

import io
import json
import math

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from arena.leaderboard import ELO_PER_NAT, VoteRow, board_with_style
from arena.release import release_export, release_read
from arena.services import leaderboard_refresh
from arena.style import RIDGE, RIDGE_COEF

from .helpers import LOUDNESS_EFFECT, QUALITY, simulated, styled_arena

SEEDS = range(10)

def test_known_truth_style_control_ranks_by_quality_and_recovers_the_loudness_effect():
    covered, null_covered, summary = 0, 0, []
    for seed in SEEDS:
        board = board_with_style(simulated(seed), rounds=300, seed=seed, style=("duration", "loudness", "generation_seconds"))
        plain = {r["system"]: r for r in board["rows"]}
        style = {r["system"]: r for r in board["style"]["rows"]}
        # The plain board puts the loud, weaker system above the quiet, stronger one...
        assert plain["weak_loud"]["rating"] > plain["strong_quiet"]["rating"] + 40, seed
        assert plain["weak_loud"]["rank"] < plain["strong_quiet"]["rank"], seed
        # ...the style-controlled one orders every system by its quality.
        assert sorted(style, key=lambda s: -style[s]["rating"]) == sorted(QUALITY, key=lambda s: -QUALITY[s]), seed
        assert style["strong_quiet"]["rank"] < style["weak_loud"]["rank"], seed
        assert style["weak_loud"]["plain_rank"] == plain["weak_loud"]["rank"] and style["weak_loud"]["rank_change"] < 0
        loud = board["style"]["covariates"]["loudness"]
        truth = LOUDNESS_EFFECT * loud["scale"]  # the effect per scaled unit (one rms of the difference)
        low, high = loud["interval"]
        assert low > 0, seed
        covered += low <= truth <= high
        summary.append((round(loud["coefficient"], 3), round(truth, 3)))
        # Covariates with no effect: small, and their intervals hold zero (counted over the seeds).
        for name in ("duration", "generation_seconds"):
            c = board["style"]["covariates"][name]
            assert abs(c["coefficient"]) < 0.15, (seed, name, c)
            null_covered += c["interval"][0] <= 0 <= c["interval"][1]
    print("loudness coefficient (estimate, truth) per seed:", summary, f"covered {covered}/{len(SEEDS)}; zero in the null covariates' intervals {null_covered}/{2 * len(SEEDS)}")
    # 95 % intervals: over 10 seeds at most one miss is expected (20 for the null covariates: at most two).
    assert covered >= len(SEEDS) - 1
    assert null_covered >= 2 * len(SEEDS) - 2


def independent_fit(rows: list[dict], covariates: list[str], *, ridge: float, ridge_coef: float) -> tuple[dict[str, float], list[float]]:
    """Per-vote logistic regression (ties as two half-weight rows) on release columns, by scikit-learn.

    scikit-learn minimises 0.5·|w|² + C·Σ loss, one penalty for every weight. With C = 1/ridge and each
    covariate column multiplied by c = sqrt(ridge / ridge_coef), its weight is beta / c and its penalty
    (ridge / 2)·beta² / c² = (ridge_coef / 2)·beta²: the objective the board states.
    """
    linear_model = pytest.importorskip("sklearn.linear_model")
    column = {"duration": "duration", "loudness": "loudness_lufs", "true_peak": "true_peak", "vocals": "vocals", "generation_seconds": "generation_seconds"}
    rows = [r for r in rows if r["vote"] != "both_bad" and all(r[f"{column[c]}_{s}"] is not None for c in covariates for s in "ab")]
    names = sorted({r["system_a"] for r in rows} | {r["system_b"] for r in rows})
    diff = np.array([[float(r[f"{column[c]}_a"]) - float(r[f"{column[c]}_b"]) for c in covariates] for r in rows])
    rms = np.sqrt((diff**2).mean(axis=0))
    x, y, w = [], [], []
    for r, d in zip(rows, diff, strict=True):
        vec = np.zeros(len(names) + len(covariates))
        vec[names.index(r["system_a"])], vec[names.index(r["system_b"])] = 1.0, -1.0
        vec[len(names) :] = d / rms * math.sqrt(ridge / ridge_coef)
        for label, weight in {"a": [(1, 1.0)], "b": [(0, 1.0)], "tie": [(1, 0.5), (0, 0.5)]}[r["vote"]]:
            x.append(vec)
            y.append(label)
            w.append(weight)
    fit = linear_model.LogisticRegression(C=1.0 / ridge, fit_intercept=False, tol=1e-12, max_iter=100_000).fit(np.array(x), np.array(y), sample_weight=np.array(w))
    theta = fit.coef_[0][: len(names)]
    ratings = ELO_PER_NAT * (theta - theta.mean()) + 1000.0
    return dict(zip(names, ratings, strict=True)), list(fit.coef_[0][len(names) :] * math.sqrt(ridge / ridge_coef))


def board(*args) -> dict:
    out = io.StringIO()
    call_command("leaderboard", "--json", *args, stdout=out)
    return json.loads(out.getvalue())


@pytest.fixture
def release(db, tmp_path):
    styled_arena()
    release_export(out_dir=tmp_path, audio=False)
    return tmp_path


ALL = ["duration", "loudness", "true_peak", "vocals", "generation_seconds"]


@pytest.mark.parametrize("name", ["instrumental", "vocal"])
def test_style_ratings_equal_an_independent_logistic_regression_on_the_release(release, name):
    rows = [r for r in release_read(release / "battles.parquet") if bool(r["is_instrumental"]) == (name == "instrumental")]
    ours = board("--style-control", "--rounds", "0", "--min-votes", "0")["boards"][name]["style"]
    fitted = [c for c in ALL if c not in ours["constant"]]
    if name == "instrumental":
        assert ours["constant"] == ["vocals"]  # nobody sings on the instrumental board
    else:
        assert ours["constant"] == []
    reference, coefficients = independent_fit(rows, fitted, ridge=RIDGE, ridge_coef=RIDGE_COEF)
    got = {r["system"]: r["rating"] for r in ours["rows"]}
    assert set(got) == set(reference)
    worst = max(abs(got[s] - reference[s]) for s in reference)
    print(f"{name}: largest rating difference to scikit-learn {worst:.4f} Elo points")
    assert worst < 0.05
    for c, value in zip(fitted, coefficients, strict=True):
        assert abs(ours["covariates"][c]["coefficient"] - value) < 1e-3, (c, ours["covariates"][c], value)
    assert ours["covariates"]["loudness"]["coefficient"] > 0
    assert max(reference.values()) - min(reference.values()) > 60


def test_style_board_is_the_same_from_the_database_and_from_the_release(release):
    args = ["--style-control", "--rounds", "100", "--seed", "2", "--min-votes", "10"]
    live = io.StringIO()
    call_command("leaderboard", "--json", *args, stdout=live)
    for filename in ("battles.jsonl", "battles.parquet"):
        rebuilt = io.StringIO()
        call_command("leaderboard", "--json", *args, "--from-release", str(release / filename), stdout=rebuilt)
        assert live.getvalue() == rebuilt.getvalue(), filename
    result = json.loads(live.getvalue())
    style = result["boards"]["instrumental"]["style"]
    assert result["style_covariates"] == ALL
    assert set(style["covariates"]["loudness"]) >= {"coefficient", "interval", "scale", "unit"}
    row = style["rows"][0]
    assert set(row) >= {"system", "rating", "interval", "rank", "plain_rank", "rank_change"}
    assert row["interval"][0] <= row["rating"] <= row["interval"][1]
    # The plain board is unchanged by asking for style control.
    plain = board("--rounds", "100", "--seed", "2", "--min-votes", "10")
    assert "style" not in plain["boards"]["instrumental"]
    assert plain["boards"]["instrumental"]["rows"] == result["boards"]["instrumental"]["rows"]


def test_the_live_board_and_its_api_carry_style_control(release, client, settings):
    settings.ARENA_STYLE_COVARIATES = ["loudness", "duration"]
    leaderboard_refresh()
    payload = client.get("/arena/api/leaderboard/").json()
    style = payload["boards"]["vocal"]["style"]
    assert list(style["covariates"]) == ["duration", "loudness"] and style["rows"]
    assert payload["boards"] == board("--style-control", "--covariates", "duration,loudness", "--rounds", "50")["boards"]
    settings.ARENA_STYLE_COVARIATES = []
    assert "style" not in leaderboard_refresh().payload["boards"]["vocal"]


def test_battles_missing_a_covariate_are_left_out_and_counted():
    rows = simulated(0, 400)
    rows += [VoteRow("mid", "low", "a", True, covariates={"loudness": (None, -20.0)})] * 7
    style = board_with_style(rows, rounds=0, style=("loudness",))["style"]
    assert style["left_out"] == 7 and style["votes"] == sum(1 for r in rows[:400])


def test_bad_style_options_are_refused_with_the_known_names(db):
    with pytest.raises(CommandError, match="unknown style covariate 'lufs'; use some of duration, loudness"):
        board("--style-control", "--covariates", "lufs")
    with pytest.raises(CommandError, match="Music Arena's method has no style control"):
        board("--style-control", "--method", "music-arena")
