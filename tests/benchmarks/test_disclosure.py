"""The disclosure rule's resolution: small cells merged or hidden for teams, full figures for researchers, the table in the docs."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client

from scoring.benchmarks import disclosure, services
from tests.benchmarks.helpers import jsonl, known_study
from tests.factories import UserFactory

DOCS = Path(__file__).resolve().parents[2] / "docs" / "benchmarks.md"


def test_small_cells_are_hidden_with_enough_others_that_the_total_tells_nothing():
    cells = {"a": {"accuracy": 1.0, "n": 1}, "b": {"accuracy": 0.5, "n": 12}, "c": {"accuracy": 0.25, "n": 4}, "d": {"accuracy": None, "n": 0}}
    out = disclosure._cells(cells, 10)
    assert out["a"]["hidden"] and out["c"]["hidden"]
    # 1 + 4 items hidden is under k: the next smallest cell goes too, or a - c would follow from the total.
    assert out["b"]["hidden"]
    assert out["d"] == {"accuracy": None, "n": 0}
    shown = disclosure._cells({"a": {"accuracy": 1.0, "n": 10}, "b": {"accuracy": 0.5, "n": 30}}, 10)
    assert not any(c.get("hidden") for c in shown.values())


def test_reliability_bins_merge_until_each_holds_k_items():
    bins = [{"low": b / 10, "high": (b + 1) / 10, "n": 1, "mean_prob": b / 10 + 0.05, "share_a": float(b % 2)} for b in range(10)]
    merged = disclosure._bins(bins, 4)
    assert [b["n"] for b in merged] == [4, 6]
    assert merged[0]["low"] == 0.0 and merged[-1]["high"] == 1.0
    assert merged[0]["share_a"] == 0.5 and merged[0]["mean_prob"] == round((0.05 + 0.15 + 0.25 + 0.35) / 4, 2)
    assert disclosure._bins(bins, 11) == []
    assert disclosure._calibration({"brier": 0.123456, "n": 10, "bins": bins}, 11) is None
    assert disclosure._calibration({"brier": 0.123456, "n": 10, "bins": bins}, 4)["brier"] == 0.123


@pytest.mark.django_db
def test_a_team_sees_merged_bins_and_the_studys_researcher_the_full_ones(settings):
    settings.BENCHMARK_MIN_CELL = 5
    study, _ = known_study(n_pairs=24, name="cells")
    bench = services.benchmark_create(name="cells", study=study, seed=2, bootstrap_rounds=100)
    ids = sorted(bench.items.values_list("item_id", flat=True))
    member, researcher = UserFactory(username="cells-member"), UserFactory(username="cells-res", roles=["researcher"])
    # Full resolution is the study rule's: a collaborator of the study; a researcher who is not sees what a team sees.
    study.collaborators.add(researcher)
    stranger = UserFactory(username="cells-stranger", roles=["researcher"])
    team = services.team_create(name="cells-team", members=[member])
    rows = [{"id": i, "probability_a": round((n + 0.5) / len(ids), 4)} for n, i in enumerate(ids)]
    sub = services.submission_from_file(benchmark=bench, team=team, data=jsonl(rows), user=member)
    as_member, as_researcher = Client(), Client()
    as_member.force_login(member)
    as_researcher.force_login(researcher)
    team_view = as_member.get(f"/api/benchmarks/submissions/{sub.pk}/").json()["parts"]
    full = as_researcher.get(f"/api/benchmarks/submissions/{sub.pk}/").json()["parts"]
    as_stranger = Client()
    as_stranger.force_login(stranger)
    assert as_stranger.get(f"/api/benchmarks/submissions/{sub.pk}/").json()["parts"] == team_view
    assert set(team_view) == {"public"} and set(full) == {"public", "private"}
    team_bins = team_view["public"]["musicality"]["calibration"]["bins"]
    assert team_bins and all(b["n"] >= 5 for b in team_bins)
    assert sum(b["n"] for b in team_bins) == full["public"]["musicality"]["calibration"]["n"]
    assert any(b["n"] < 5 for b in full["public"]["musicality"]["calibration"]["bins"])
    for cell in list(team_view["public"]["musicality"]["by_modality"].values()) + list(team_view["public"]["musicality"]["by_confidence"].values()):
        assert cell.get("hidden") or cell["n"] == 0 or cell["n"] >= 5


def test_the_docs_carry_the_table():
    text = DOCS.read_text()
    section = text.split("## What a team sees", 1)[1].split("\n## ", 1)[0]
    for figure in disclosure.TABLE:
        assert f"| {figure.name} |" in section, figure.name
