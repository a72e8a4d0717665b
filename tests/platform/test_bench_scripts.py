"""Every bench/ script runs as its docstring says (`.venv/bin/python bench/NAME.py ...`), at its smallest size.

Each runs in a process of its own from the repository root with nothing on PYTHONPATH, as from a
fresh checkout, so a script that only ran with the test suite's path set fails here. A script
added to bench/ without an entry below fails too.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"

# The smallest size of each script that still runs all its code paths; the figures mean nothing here.
SMOKE = {
    "active": ["--seeds", "1", "--conditions", "8", "--clips", "3", "--targets", "0.6", "--budgets", "10", "--max-votes", "20", "--rounds", "20", "--jobs", "1"],
    "adjudication": ["--sqlite", "--pairs", "40", "--seeds", "1", "--resamples", "20"],
    "aggregation": ["--items", "40", "--annotators", "8", "--votes-per-item", "3", "--seeds", "1", "--resamples", "20"],
    "assign": ["--annotators", "3", "--pairs", "20", "--overlap", "2"],
    "benchmark": ["--items", "200", "--submissions", "3", "--rounds", "20", "--repeat", "1"],
    "dataset_import": ["--rows", "10", "--clips", "5", "--seconds", "0.5"],
    "history": ["--pairs", "60", "--history", "20", "--samples", "5"],
    "http_protocol": ["--requests", "50", "--repeat", "1"],
    "leaderboard": ["--votes", "2000", "--systems", "5", "--rounds", "20", "--baseline-rounds", "1"],
    "load": [
        "--sqlite", "--clients", "2", "--submits", "4", "--votes", "4", "--seconds", "5", "--rounds", "1", "--baseline-requests", "20",
        "--open-seconds", "1", "--clip-seconds", "1", "--min-listen", "0.1",
    ],
    "profile_report": ["300", "--profile"],
    "ratings_report": ["--ratings", "2000", "--bootstrap", "20", "--repeat", "1", "--skip-pairwise"],
    "report": ["--votes", "300", "--bootstrap", "20", "--repeat", "1", "--naive-rounds", "1"],
    "reward_prompt": ["--seeds", "1", "--conditions", "12", "--clips", "3", "--voters", "1", "--kinds", "two_words,quadratic", "--rounds", "20", "--epochs", "3", "--patience", "2"],
    "scoring": [
        "--device", "cpu", "--size", "tiny", "--clap-clips", "2", "--host-clips", "1", "--aqa-clips", "2", "--aqa-batch", "2", "--pairs", "2",
        "--single-pairs", "1", "--pair-batch", "2", "--new-tokens", "2", "--decode-clips", "2", "--files-clips", "1", "--cores", "1",
        "--cmi-clips", "2", "--cmi-batch", "2", "--clips", "2", "--seconds", "1", "--conditions", "1",
    ],
    "signal_run": ["--pairs", "2", "--brokers", "sqlite", "--concurrency", "1", "--repeat", "1"],
}  # fmt: skip
# These run CMI-RewardBench's own scripts from a checkout of it (no network here): with CMI_REWARDBENCH_DIR set they
# run in full, otherwise they must refuse a folder that is not a checkout before doing any work.
CROSSCHECKS = {"cmi_crosscheck": ["--pairs", "8"], "cmi_mos_crosscheck": ["--clips", "8", "--raters", "3"]}


def _scripts() -> list[str]:
    return sorted(p.stem for p in BENCH.glob("*.py") if not p.stem.startswith("_"))


def _run(name: str, args: list[str], tmp_path: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "DJANGO_SETTINGS_MODULE")}
    # The scripts' scratch databases: SQLite in a folder of the test's own, unless the suite runs on PostgreSQL.
    if not env.get("DATABASE_URL"):
        env["BENCH_DATABASE_URL"] = "sqlite"
    else:
        env["BENCH_DATABASE_URL"] = env["DATABASE_URL"].rsplit("/", 1)[0] + "/postgres"
    env["AUDITORIUM_DATA_DIR"] = str(tmp_path / "data")
    return subprocess.run(
        [sys.executable, str(BENCH / f"{name}.py"), *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=420, stdin=subprocess.DEVNULL
    )


def test_every_script_has_a_smoke_size_and_a_usage_line():
    assert sorted([*SMOKE, *CROSSCHECKS]) == _scripts()
    for name in _scripts():
        doc = (BENCH / f"{name}.py").read_text().split('"""')[1]
        if name != "leaderboard":
            assert re.search(rf"\.venv/bin/python bench/{name}\.py", doc), f"bench/{name}.py: the docstring says how to run it"


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SMOKE))
def test_script_runs_from_a_fresh_checkout(name, tmp_path):
    done = _run(name, SMOKE[name], tmp_path)
    assert done.returncode == 0, f"bench/{name}.py exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert done.stdout.strip(), f"bench/{name}.py printed nothing"


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CROSSCHECKS))
def test_crosscheck_needs_a_checkout(name, tmp_path):
    checkout = os.environ.get("CMI_REWARDBENCH_DIR")
    if checkout:
        done = _run(name, ["--cmi-dir", checkout, *CROSSCHECKS[name]], tmp_path)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        assert "DIFFERENT" not in done.stdout and "equal" in done.stdout
        return
    done = _run(name, ["--cmi-dir", str(tmp_path / "not-a-checkout"), *CROSSCHECKS[name]], tmp_path)
    assert done.returncode == 2 and "is not a CMI-RewardBench checkout" in done.stderr, done.stderr[-2000:]
