"""`python -m scoring.judges score`: a benchmark export scored offline, on the CPU with tiny models,
uploaded through the real upload service; its predictions equal an in-platform run of the same
judge on the same benchmark."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from scoring.benchmarks import runners, services
from scoring.benchmarks.models import Prediction, Submission
from scoring.evaluation import DIMENSIONS, NO_LABEL
from scoring.models import Judge, Verdict
from tests.benchmarks.helpers import known_study

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]


def _command(*args: str) -> subprocess.CompletedProcess:
    # A team's machine: the repository on the path, not platform/, no settings module.
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(ROOT), "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "scoring.judges", "score", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture
def exported(tmp_path):
    study, _ = known_study(n_pairs=8, name="offline")
    bench = services.benchmark_create(name="offline", study=study, bootstrap_rounds=100)
    folder = services.export_to_dir(benchmark=bench, out=tmp_path / "package")
    return bench, folder


@pytest.mark.parametrize("kind", ["signal", "clap", "cmi_rm"])
def test_offline_scores_upload_and_equal_an_in_platform_run(kind, exported, tmp_path, tiny_root, tiny_clap_dir, django_capture_on_commit_callbacks):
    bench, folder = exported
    weights = {"signal": "", "clap": str(tiny_clap_dir), "cmi_rm": str(tiny_root / "CMI-RM")}[kind]
    out = tmp_path / "predictions.jsonl"
    done = _command(str(folder), "--judge", kind, "--weights", weights, "--device", "cpu", "--batch-size", "3", "--out", str(out))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "manifest checked" in done.stderr and "8 predictions" in done.stderr

    team = services.team_create(name=f"team-{kind}")
    uploaded = services.submission_from_file(benchmark=bench, team=team, data=out.read_bytes(), label="offline")
    judge = Judge.objects.create(key=f"{kind}-here", kind=kind, weights=weights, options={"device": "cpu"})
    with django_capture_on_commit_callbacks(execute=True):
        ran = runners.judge_submission_create(benchmark=bench, team=team, judge=judge)
    ran.refresh_from_db()
    assert uploaded.state == ran.state == Submission.State.DONE

    theirs = {p.item.item_id: p for p in Prediction.objects.filter(submission=uploaded).select_related("item")}
    ours = {p.item.item_id: p for p in Prediction.objects.filter(submission=ran).select_related("item")}
    assert set(theirs) == set(ours) == set(bench.items.values_list("item_id", flat=True))
    answered = [d for d in DIMENSIONS if any(getattr(p, d) != NO_LABEL for p in ours.values())]
    assert answered, "the in-platform run answered nothing"
    for item_id, mine in ours.items():
        for dim in DIMENSIONS:
            assert getattr(theirs[item_id], dim) == getattr(mine, dim), (item_id, dim)

    # The scores behind the labels are the platform's too (the upload ignores them; they are in the file).
    verdicts = {v.pair_id: v for v in Verdict.objects.filter(run=ran.scoring_run)}
    pairs = dict(bench.items.values_list("item_id", "pair_id"))
    for row in map(json.loads, out.read_text().splitlines()):
        verdict = verdicts[pairs[row["id"]]]
        for dim in answered:
            a, b = row[f"scores_{dim}"]
            assert a == pytest.approx(getattr(verdict, f"{dim}_score_a"), rel=1e-5, abs=1e-6)
            assert b == pytest.approx(getattr(verdict, f"{dim}_score_b"), rel=1e-5, abs=1e-6)


def test_a_package_that_fails_its_manifest_is_not_scored(exported, tmp_path):
    _, folder = exported
    clip = sorted((folder / "audio").iterdir())[0]
    clip.write_bytes(clip.read_bytes()[:-10])
    out = tmp_path / "predictions.jsonl"
    done = _command(str(folder), "--judge", "signal", "--out", str(out), "--quiet")
    assert done.returncode == 2
    assert f"audio/{clip.name} does not match its checksum" in done.stderr and "nothing was scored" in done.stderr
    assert not out.exists()

    (folder / "MANIFEST.sha256").unlink()
    done = _command(str(folder), "--judge", "signal", "--out", str(out), "--quiet")
    assert done.returncode == 2 and "has no MANIFEST.sha256: it is not a benchmark export" in done.stderr
    assert "Traceback" not in done.stderr


def test_missing_weights_are_named_before_any_work(exported, tmp_path):
    _, folder = exported
    done = _command(str(folder), "--judge", "cmi_rm", "--weights", str(tmp_path / "nowhere"), "--out", str(tmp_path / "p.jsonl"), "--quiet")
    assert done.returncode == 2 and "weights not found" in done.stderr and "HaiwenXia/CMI-RM layout" in done.stderr
    assert "Traceback" not in done.stderr
