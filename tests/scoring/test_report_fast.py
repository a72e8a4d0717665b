"""The report's fast arithmetic against the old (ReportOptions.legacy) on one small study of frames.

Equal exactly wherever the method did not change; where it did, within the tolerance stated per figure:
crowd reliability intervals (analytic vs 200 refits), MACE point fits (SQUAREM vs plain EM, the same
fixed point), the judges' pair-level interval (the same bootstrap from other draws).
"""

from __future__ import annotations

import importlib.util
import re
from dataclasses import replace
from pathlib import Path

import pytest

from scoring import agreement, report

ROOT = Path(__file__).resolve().parents[2]


def _study():
    spec = importlib.util.spec_from_file_location("bench_report", ROOT / "bench" / "report.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    raw, pairs, verdicts, sources = bench.synthetic(2000, seed=3)
    # Ten annotators instead of 300 and only the pairs with three or five votes, so that the intervals say
    # something: on the benchmark's sparse votes both intervals are wide and lie further apart (bench/results/report-cpu.txt).
    raw = raw[raw.groupby("pair_id")["pair_id"].transform("size") >= 3].copy()
    raw["annotator_id"] = raw["annotator_id"] % 10
    raw["pseudonym"] = [f"a-{a:02d}" for a in raw["annotator_id"]]
    raw = raw.drop_duplicates(["annotator_id", "pair_id"]).reset_index(drop=True)
    return agreement.votes_frame_prepare(raw), pairs, verdicts, sources


def _leaves(value, path=""):
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, f"{path}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _leaves(item, f"{path}[{i}]")
    else:
        yield path, value


# Figure paths (list positions taken out) allowed to differ, and by how much at most.
# Dawid–Skene's bounds: the sandwich vs 200 refits, measured up to 0.44 apart here. Each of these ten annotators
# merges thirty of the generator's, a model the fit does not assume, and the sandwich comes out wider than a fully
# iterated bootstrap for some of them (docs/crowd.md); it covers at the nominal rate on the simulated crowds.
TOLERANCE = {
    ".crowd.annotators[].dimensions.alignment.dawid_skene.ci[]": 0.5,
    ".crowd.annotators[].dimensions.musicality.dawid_skene.ci[]": 0.5,
    ".crowd.annotators[].dimensions.alignment.mace.estimate": 1e-3,
    ".crowd.annotators[].dimensions.musicality.mace.estimate": 1e-3,
    ".crowd.labels[].p_clip_a_mace": 1e-3,
    ".judges[].dimensions.alignment.ci[]": 0.02,
    ".judges[].dimensions.musicality.ci[]": 0.02,
}
# The old MACE interval refitted another model than the point fit and missed the truth (docs/crowd.md): no tolerance.
UNBOUNDED = {".crowd.annotators[].dimensions.alignment.mace.ci[]", ".crowd.annotators[].dimensions.musicality.mace.ci[]"}


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_fast_report_equals_the_old_arithmetic_except_where_stated():
    votes, pairs, verdicts, sources = _study()
    options = report.ReportOptions(rounds=200)
    new, _ = report.report_compute(votes=votes, verdicts=verdicts, pairs=pairs, sources=sources, options=options)
    old, _ = report.report_compute(votes=votes, verdicts=verdicts, pairs=pairs, sources=sources, options=replace(options, legacy=True))
    new_leaves, old_leaves = dict(_leaves(new)), dict(_leaves(old))
    assert new_leaves.keys() == old_leaves.keys()
    moved = {}
    for path, value in new_leaves.items():
        before = old_leaves[path]
        if path in (".crowd.interval", ".crowd.rounds"):
            continue
        key = re.sub(r"\[\d+\]", "[]", path)
        if key in UNBOUNDED:
            continue
        if value != before:
            assert key in TOLERANCE, (path, before, value)
            assert abs(value - before) <= TOLERANCE[key], (path, before, value)
            moved[key] = moved.get(key, 0) + 1
    assert (new["crowd"]["interval"], old["crowd"]["interval"]) == ("analytic", "bootstrap")
    # The comparison is not empty: the intervals did move, the rest (agreement, annotators, judges' accuracy) did not.
    assert moved.get(".crowd.annotators[].dimensions.alignment.dawid_skene.ci[]", 0) > 0
    assert new["agreement"] == old["agreement"] and new["annotators"] == old["annotators"]
    for person in new["crowd"]["annotators"]:
        for dim in ("alignment", "musicality"):
            for method in ("dawid_skene", "mace"):
                figure = person["dimensions"][dim][method]
                low, high = figure["ci"]
                assert low <= figure["estimate"] + 1e-4 and figure["estimate"] - 1e-4 <= high, (person["pseudonym"], dim, method, figure)


def test_an_unknown_crowd_interval_option_is_refused_with_the_choices():
    from common.errors import ServiceError

    assert report.report_options_parse({"crowd_interval": "Bootstrap"}).crowd_interval == "bootstrap"
    with pytest.raises(ServiceError, match="crowd_interval='refit' is not known; use analytic or bootstrap"):
        report.report_options_parse({"crowd_interval": "refit"})
