"""Music Arena interop: its columns in the release, and its board method (`leaderboard --method music-arena`).

The references here are written independently of arena/leaderboard.py: a per-vote design
matrix (ties as two half-weight rows, as Music Arena's regression sees them) solved with
scipy, or with scikit-learn's LogisticRegression configured as Music Arena configures it.
"""

from __future__ import annotations

import io
import json
import math
from datetime import timedelta

import numpy as np
import pandas as pd
import pytest
import yaml
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone
from scipy.optimize import minimize

from arena.leaderboard import MA_MIN_BATTLES, VoteRow, ma_board_compute, ma_board_rows
from arena.models import Battle, Vote
from arena.release import release_export
from arena.services import leaderboard_refresh

from .conftest import arena_system, ready_battle, visitor_with_terms

ELO = 400 / math.log(10)
INSTRUMENTAL_ONLY = {"ember": 0.9, "flint": 0.2, "grove": -0.4}
VOCAL = {"lark": 0.6, "mynah": 0.0, "oriole": -0.7}
# Only Music Arena's column names are read from the release in the reference computations.
MA_COLUMNS = ["system_a", "system_b", "preference", "is_instrumental"]


def seeded_arena(n_battles=900, seed=3):
    """Instrumental battles between any two systems (two vocal-capable ones too), vocal battles between vocal systems."""
    rng = np.random.default_rng(seed)
    systems = {name: arena_system(name, supports_vocals=False) for name in INSTRUMENTAL_ONLY}
    systems |= {name: arena_system(name, supports_vocals=True) for name in VOCAL}
    strength = INSTRUMENTAL_ONLY | VOCAL
    visitors = [visitor_with_terms()[0] for _ in range(4)]
    base = ready_battle(visitors[0], systems["ember"], systems["lark"])
    battles = []
    names = sorted(systems)
    for k in range(n_battles):
        instrumental = k % 3 != 0
        pool = names if instrumental else sorted(VOCAL)
        a, b = rng.choice(pool, 2, replace=False)
        battles.append(
            Battle(
                visitor=visitors[k % 4], prompt=f"prompt {k}", lyrics="" if instrumental else "la la", is_instrumental=instrumental,
                duration_requested=8.0, seed=k, system_a=systems[a], system_b=systems[b], clip_a=base.clip_a, clip_b=base.clip_b,
                generation_seconds_a=0.4, generation_seconds_b=0.9, status=Battle.Status.VOTED, ready_at=timezone.now() - timedelta(seconds=60),
            )
        )
    battles = Battle.objects.bulk_create(battles)
    votes = []
    for battle in battles:
        a, b = battle.system_a.system.name, battle.system_b.system.name
        p_a = 1 / (1 + math.exp(-(strength[a] - strength[b])))
        u = rng.random()
        choice = "both_bad" if u < 0.06 else "tie" if u < 0.18 else ("a" if rng.random() < p_a else "b")
        votes.append(Vote(battle=battle, visitor=battle.visitor, choice=choice, listen_seconds_a=6.0, listen_seconds_b=5.0))
    Vote.objects.bulk_create(votes)
    base.delete()


def board(*args) -> dict:
    out = io.StringIO()
    call_command("leaderboard", "--json", *args, stdout=out)
    return json.loads(out.getvalue())


def ratings(result: dict, name: str) -> dict[str, float]:
    return {r["system"]: r["rating"] for r in result["boards"][name]["rows"]}


def ma_frame(folder) -> tuple[pd.DataFrame, set[str]]:
    """A fresh release as Music Arena's leaderboard reads it: its columns, and capabilities from registry.yaml."""
    frame = pd.read_parquet(folder / "battles.parquet", columns=MA_COLUMNS)
    registry = yaml.safe_load((folder / "registry.yaml").read_text())
    return frame, {name for name, info in registry.items() if info["supports_lyrics"]}


def ma_split(frame: pd.DataFrame, vocal: set[str], name: str) -> pd.DataFrame:
    frame = frame[frame["preference"].isin(["A", "B", "TIE"])]
    both_vocal = frame["system_a"].isin(vocal) & frame["system_b"].isin(vocal)
    if name == "vocal":
        return frame[(frame["is_instrumental"] == False) & both_vocal]  # noqa: E712
    return frame[(frame["is_instrumental"] == True) & ~both_vocal]  # noqa: E712


def design(frame: pd.DataFrame):
    """One row per vote, ties as two rows of weight 1/2 (A wins, B wins)."""
    names = sorted(set(frame["system_a"]) | set(frame["system_b"]))
    index = {n: k for k, n in enumerate(names)}
    x, y, w = [], [], []
    for a, b, pref in frame[["system_a", "system_b", "preference"]].itertuples(index=False):
        vec = np.zeros(len(names))
        vec[index[a]], vec[index[b]] = 1.0, -1.0
        outcomes = [(1.0, 0.5), (0.0, 0.5)] if pref == "TIE" else [(1.0 if pref == "A" else 0.0, 1.0)]
        for label, weight in outcomes:
            x.append(vec)
            y.append(label)
            w.append(weight)
    return names, np.array(x), np.array(y), np.array(w)


def scipy_reference(frame: pd.DataFrame) -> dict[str, float]:
    """argmin 0.5·|w|² + C·Σ weight·logloss with C = 1, no intercept; 400/ln 10 scale, mean 1000."""
    names, x, y, w = design(frame)
    sign = 2 * y - 1

    def objective(beta):
        margin = sign * (x @ beta)
        return 0.5 * beta @ beta + np.sum(w * np.logaddexp(0.0, -margin))

    def gradient(beta):
        margin = sign * (x @ beta)
        return beta - x.T @ (w * sign / (1.0 + np.exp(margin)))

    beta = minimize(objective, np.zeros(len(names)), jac=gradient, method="BFGS", options={"gtol": 1e-10}).x
    scores = ELO * beta
    return {n: float(s - scores.mean() + 1000.0) for n, s in zip(names, scores, strict=True)}


@pytest.fixture
def release(db, tmp_path):
    seeded_arena()
    release_export(out_dir=tmp_path, audio=False)
    return tmp_path


@pytest.mark.parametrize("name", ["instrumental", "vocal"])
def test_music_arena_method_matches_an_independent_c1_logistic_regression_read_from_music_arena_columns(release, name):
    frame, vocal = ma_frame(release)
    assert vocal == set(VOCAL)
    reference = scipy_reference(ma_split(frame, vocal, name))
    for source in ([], ["--from-release", str(release / "battles.parquet")]):
        ours = ratings(board("--method", "music-arena", "--rounds", "0", "--min-votes", "0", *source), name)
        assert set(ours) == set(reference)
        worst = max(abs(ours[s] - reference[s]) for s in reference)
        assert worst < 0.5, (ours, reference)
    # A real spread, so agreement is not two flat boards.
    assert max(reference.values()) - min(reference.values()) > 60


def test_music_arena_method_matches_scikit_learn_configured_as_music_arena_does(release):
    linear_model = pytest.importorskip("sklearn.linear_model")
    frame, vocal = ma_frame(release)
    ours = ratings(board("--method", "music-arena", "--rounds", "0", "--min-votes", "0"), "instrumental")
    names, x, y, w = design(ma_split(frame, vocal, "instrumental"))
    fit = linear_model.LogisticRegression(fit_intercept=False, C=1.0, solver="lbfgs", tol=1e-6, max_iter=10000).fit(x, y, sample_weight=w)
    scores = ELO * fit.coef_[0]
    scores = scores - scores.mean() + 1000.0
    assert max(abs(ours[n] - s) for n, s in zip(names, scores, strict=True)) < 0.5


def test_capability_split_penalty_and_rank_rules_differ_from_ours_as_documented(release):
    ours, theirs = board("--rounds", "0", "--min-votes", "0"), board("--method", "music-arena", "--rounds", "200", "--seed", "4", "--min-votes", "0")
    assert ours["method"] == "auditorium" and theirs["method"] == "music-arena"
    rows = [VoteRow(b.system_a.system.name, b.system_b.system.name, b.vote.choice, b.is_instrumental) for b in Battle.objects.select_related("vote", "system_a__system", "system_b__system")]
    vocal_vs_vocal = sum(1 for r in rows if r.is_instrumental and r.system_a in VOCAL and r.system_b in VOCAL and r.vote != "both_bad")
    assert vocal_vs_vocal > 0
    # Instrumental battles between two vocal-capable systems are on our board, not on theirs.
    assert ours["boards"]["instrumental"]["votes"] - theirs["boards"]["instrumental"]["votes"] == vocal_vs_vocal
    # The penalty shrinks ratings toward 1000: the top system is lower, the bottom one higher.
    plain = ratings(ours, "vocal")
    penalised = ratings(theirs, "vocal")
    assert penalised["lark"] < plain["lark"] and penalised["oriole"] > plain["oriole"]
    for result in theirs["boards"].values():
        listed = result["rows"]
        assert [r["rank"] for r in listed] == list(range(1, len(listed) + 1))
        assert [r["rating"] for r in listed] == sorted((r["rating"] for r in listed), reverse=True)
        for r in listed:
            # Symmetric interval: rating ± 1.96 sd (rounding to cents aside).
            assert abs((r["upper"] - r["rating"]) - (r["rating"] - r["lower"])) < 0.02 and r["upper"] > r["rating"]
    assert theirs == board("--method", "music-arena", "--rounds", "200", "--seed", "4", "--min-votes", "0")


def test_interval_is_196_bootstrap_sd_of_resampled_battles(release):
    frame, vocal = ma_frame(release)
    part = ma_split(frame, vocal, "vocal").reset_index(drop=True)
    rng = np.random.default_rng(0)
    draws = {name: [] for name in VOCAL}
    for _ in range(60):
        sample = scipy_reference(part.iloc[rng.integers(0, len(part), len(part))])
        for name in VOCAL:
            draws[name].append(sample[name])
    result = board("--method", "music-arena", "--rounds", "400", "--min-votes", "0")["boards"]["vocal"]["rows"]
    for row in result:
        expected = 1.96 * np.std(draws[row["system"]])
        assert 0.7 * expected < row["upper"] - row["rating"] < 1.4 * expected


def test_thresholds_and_the_one_class_rule():
    rows = [VoteRow("x", "y", "a")] * 20 + [VoteRow("y", "z", "a")] * 20
    flat = ma_board_compute(rows, rounds=0, min_votes=0)
    # Every vote went to the side shown as A: their regression sees one class and rates everyone 1000.
    assert {r["rating"] for r in flat["rows"]} == {1000.0}
    assert ma_board_compute(rows[: MA_MIN_BATTLES - 1], rounds=0, min_votes=0)["rows"] == []
    # Votes: x 20 + 5 + 5 = 30, y 45, z 25: only systems with 30 or more are listed.
    mixed = rows + [VoteRow("z", "x", "a")] * 5 + [VoteRow("x", "y", "b")] * 5
    listed = {r["system"] for r in ma_board_compute(mixed, rounds=0)["rows"]}
    assert listed == {"x", "y"}
    assert ma_board_rows([VoteRow("p", "q", "a", True), VoteRow("v", "w", "a", True), VoteRow("v", "w", "a", False), VoteRow("p", "w", "a", False)], "vocal", {"v", "w"}) == [
        VoteRow("v", "w", "a", False)
    ]


def test_music_arena_method_refuses_our_only_options_and_drives_the_live_board(db, settings, tmp_path):
    seeded_arena(n_battles=120)
    with pytest.raises(CommandError, match="do not apply to --method music-arena"):
        board("--method", "music-arena", "--both-bad", "tie")
    # A battle log without capabilities (written before they were) cannot be split their way.
    old = tmp_path / "old.jsonl"
    old.write_text(json.dumps({"system_a": "x", "system_b": "y", "vote": "a", "is_instrumental": True}) + "\n")
    with pytest.raises(CommandError, match="missing supports_vocals_a, supports_vocals_b"):
        board("--method", "music-arena", "--from-release", str(old))
    settings.ARENA_LEADERBOARD_METHOD = "music-arena"
    payload = leaderboard_refresh().payload
    assert payload["method"] == "music-arena" and payload["boards"]["vocal"]["min_votes"] == 30
    assert payload["boards"] == board("--rounds", "50")["boards"]
