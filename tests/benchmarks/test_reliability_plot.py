"""The reliability plot on a submission page: server-drawn SVG, its points at the bins' values, the Brier score beside it."""

from __future__ import annotations

import re

import numpy as np
import pytest
from django.test import Client

from scoring.benchmarks import plots, services
from tests.benchmarks.helpers import item_truth, jsonl, known_study
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def test_plot_geometry_follows_the_bins():
    calibration = {"brier": 0.2, "n": 30, "bins": [{"low": 0.1, "high": 0.2, "n": 10, "mean_prob": 0.15, "share_a": 0.3}, {"low": 0.9, "high": 1.0, "n": 40, "mean_prob": 0.95, "share_a": 0.9}]}
    plot = plots.reliability_plot(calibration)
    first, second = plot["points"]
    assert (first["cx"], first["cy"]) == (round(22 + 90 * 0.15, 2), round(6 + 90 * 0.7, 2))
    assert (second["cx"], second["cy"]) == (round(22 + 90 * 0.95, 2), round(6 + 90 * 0.1, 2))
    assert first["r"] < second["r"]  # area grows with the bin's items
    assert plot["line"] == f"{first['cx']},{first['cy']} {second['cx']},{second['cy']}"
    assert plots.reliability_plot(None) is None


def test_submission_page_draws_the_plot_when_probabilities_were_given():
    study, _ = known_study(n_pairs=20, name="rel", split="train")
    bench = services.benchmark_create(name="rel", study=study, bootstrap_rounds=100, is_dev=True)
    truth = item_truth(bench)
    rng = np.random.default_rng(5)
    rows, probs, outcome = [], [], []
    for item_id in sorted(truth):
        p = float(np.round(rng.random(), 3))
        rows.append({"id": item_id, "preferred": "A" if p >= 0.5 else "B", "probability_a": p})
        probs.append(p)
        outcome.append(1.0 if truth[item_id]["musicality"] == "A" else 0.0)
    user = UserFactory(username="rel-member")
    team = services.team_create(name="rel-team", members=[user])
    with_probs = services.submission_from_file(benchmark=bench, team=team, data=jsonl(rows), user=user)
    without = services.submission_from_file(benchmark=bench, team=team, data=jsonl([{"id": r["id"], "preferred": r["preferred"]} for r in rows]), user=user)
    client = Client()
    client.force_login(user)
    page = client.get(f"/benchmarks/submissions/{with_probs.pk}/").content.decode()
    svg = re.search(r'<svg class="reliability-plot"[^>]*data-dim="musicality"[^>]*>(.*?)</svg>', page, re.S)
    assert svg, "no reliability plot for musicality"
    body = svg.group(1)
    probs, outcome = np.array(probs), np.array(outcome)
    index = np.minimum((probs * 10).astype(int), 9)
    bins = [b for b in range(10) if (index == b).any()]
    circles = re.findall(r'<circle class="bin" cx="([\d.]+)" cy="([\d.]+)"', body)
    assert len(circles) == len(bins)
    for (cx, cy), b in zip(circles, bins):
        mask = index == b
        assert float(cx) == pytest.approx(22 + 90 * probs[mask].mean(), abs=0.01)
        assert float(cy) == pytest.approx(6 + 90 * (1 - outcome[mask].mean()), abs=0.01)
    brier = float(np.mean((probs - outcome) ** 2))
    assert f'<strong class="brier">{brier:.3f}</strong>' in page
    # Drawn on the server: no script and no inline style in the plot (the CSP refuses both).
    assert "<script" not in body and "style=" not in body
    # No probabilities, no plot.
    assert "reliability-plot" not in client.get(f"/benchmarks/submissions/{without.pk}/").content.decode()
