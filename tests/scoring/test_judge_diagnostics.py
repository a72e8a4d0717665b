"""The report's judge diagnostics: position bias shares and consistency, Spearman agreement with intervals, AUC, reliability."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from django.urls import reverse
from scipy.stats import spearmanr

from scoring.judge_diagnostics import auc, judge_diagnostics, reliability, spearman_interval

from .diagnosed_study import diagnosed_study


def test_spearman_matches_scipy_and_its_interval_covers_a_known_correlation():
    rng = np.random.default_rng(0)
    covered = 0
    truth = 6 / np.pi * np.arcsin(0.6 / 2)  # Spearman's rho of a bivariate normal with r = 0.6
    for seed in range(20):
        x = rng.standard_normal(200)
        y = 0.6 * x + 0.8 * rng.standard_normal(200)
        cell = spearman_interval(x, y, rounds=300, seed=seed)
        assert cell["rho"] == pytest.approx(spearmanr(x, y).statistic, abs=1e-4)
        lo, hi = cell["ci"]
        assert lo < cell["rho"] < hi
        covered += lo <= truth <= hi
    assert covered >= 16  # a 95 % interval: 19 of 20 expected


def test_auc_is_the_share_of_positive_negative_pairs_ordered_right():
    rng = np.random.default_rng(1)
    scores = np.round(rng.standard_normal(40), 1)  # with ties
    positive = rng.random(40) < 0.4
    brute = np.mean([1.0 if p > n else 0.5 if p == n else 0.0 for p, n in itertools.product(scores[positive], scores[~positive])])
    assert auc(scores, positive) == pytest.approx(brute, abs=1e-4)
    assert auc(scores, np.ones(40, bool)) is None


def test_reliability_of_a_calibrated_judge_is_near_zero_and_of_an_overconfident_one_is_not():
    rng = np.random.default_rng(2)
    p = rng.random(2000)
    n = np.full(2000, 5.0)
    k = rng.binomial(5, p).astype(float)
    calibrated = reliability(p, k, n)
    assert calibrated["ece"] < 0.03
    assert sum(b["pairs"] for b in calibrated["bins"]) == 2000
    overconfident = reliability(np.where(p > 0.5, 0.95, 0.05), k, n)
    assert overconfident["ece"] > 0.15


def _frames(labels_a: list[str], scores: dict[int, list[tuple[float, float]]]):
    """Verdict and details frames for runs 1 and 2 over pairs 0..n-1; run 1 answers with labels, run 2 with scores."""
    n = len(labels_a)
    pairs = pd.DataFrame({"clip_a": [100 + i for i in range(n)], "clip_b": [200 + i for i in range(n)], "modality": "text"}, index=pd.Index(range(n), name="pair_id"))
    rows, details = [], []
    for i, label in enumerate(labels_a):
        choice = {"a": 100 + i, "b": 200 + i}.get(label)
        rows.append({"run_id": 1, "pair_id": i, "status": "ok", "alignment_choice": choice, "musicality_choice": choice, "alignment_score_a": None, "alignment_score_b": None, "musicality_score_a": None, "musicality_score_b": None})
        stored = {"a": "model_a", "b": "model_b", "tie": "both"}[label]
        details.append({"run_id": 1, "pair_id": i, "labels": {"alignment": stored, "musicality": stored}, "consistent": {"alignment": i % 4 != 0, "musicality": True}})
    for run, run_scores in scores.items():
        for i, (a, b) in enumerate(run_scores):
            rows.append({"run_id": run, "pair_id": i, "status": "ok", "alignment_choice": None, "musicality_choice": None, "alignment_score_a": a, "alignment_score_b": b, "musicality_score_a": a, "musicality_score_b": b})
    details = pd.DataFrame(details).set_index(["run_id", "pair_id"])
    return pd.DataFrame(rows), pairs, details


def test_bias_shares_and_consistency_and_the_correlation_matrix():
    labels = ["a", "a", "a", "b", "tie", "a", "b", "a"] * 2
    rng = np.random.default_rng(3)
    base = rng.random(16)
    scores = {2: [(float(x), 0.5) for x in base], 3: [(float(x) ** 2, 0.25) for x in base]}  # the same order of margins
    verdicts, pairs, details = _frames(labels, scores)
    sources = [{"id": r, "label": f"judge {r}", "judge": f"j{r}", "judge_kind": "signal"} for r in (1, 2, 3)]
    section = judge_diagnostics(majorities={}, verdicts=verdicts, pairs=pairs, sources=sources, details=details, rounds=200, seed=0)
    first = next(b for b in section["bias"] if b["judge"] == "j1" and b["dimension"] == "alignment")
    assert (first["a_share"], first["b_share"], first["tie_share"]) == (pytest.approx(10 / 16), pytest.approx(4 / 16), pytest.approx(2 / 16))
    assert first["consistency"] == pytest.approx(12 / 16) and first["asked_both_orders"] == 16
    scored = next(b for b in section["bias"] if b["judge"] == "j2" and b["dimension"] == "alignment")
    assert scored["asked_both_orders"] is None
    assert scored["a_share"] == pytest.approx(float(np.mean(base > 0.5)))
    matrix = section["correlation"]["alignment"]
    assert matrix["judges"] == ["judge 2", "judge 3"]  # judge 1 gives no scores, so no margins
    cell = matrix["rows"][0]["cells"][1]
    assert cell["rho"] == pytest.approx(1.0) and cell["n"] == 16
    assert matrix["rows"][1]["cells"][0]["rho"] == cell["rho"]


@pytest.mark.django_db
def test_the_report_page_shows_the_bias_table_the_matrix_and_calibration(client, django_user_model):
    from scoring.report import report_build

    study, _ = diagnosed_study()
    report = report_build(study=study, use_cache=False)
    section = report["judge_diagnostics"]
    assert {b["label"] for b in section["bias"]} == {"rubric v1", "signal v1", "aqa v1"}
    matrix = section["correlation"]["alignment"]
    assert matrix["judges"] == ["aqa v1", "signal v1"]  # the rubric judge gives choices, no scores
    cell = matrix["rows"][0]["cells"][1]
    assert cell["rho"] == pytest.approx(1.0) and cell["n"] == 6  # signal and aqa order the pairs the same way
    calibration = [c for c in section["calibration"] if c["label"] == "aqa v1"]
    assert {c["dimension"] for c in calibration} == {"alignment", "musicality"}
    assert all(0 <= c["auc"] <= 1 for c in calibration if c["auc"] is not None)
    staff = django_user_model.objects.create_user(username="boss", password="pw", is_staff=True, is_superuser=True)
    client.force_login(staff)
    page = client.get(reverse("scoring:study-report", kwargs={"name": study.name}))
    assert page.status_code == 200, page.status_code
    html = page.content.decode()
    for anchor in ('id="judge-diagnostics"', 'id="judge-bias"', 'id="judge-corr-alignment"', 'id="judge-calibration"'):
        assert anchor in html
