"""The judges as a library: they import and score with torch, transformers, numpy, scipy and
soundfile only, in a process where importing Django, Celery or the platform package fails, and
give the same scores there as inside the platform."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from scoring.judges import ClipAudio, ConditionInput, JudgeConfig, adapter_for
from tests.audio import write_tone

pytestmark = pytest.mark.slow
pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]

# Any import of these raises: the judges must not need them, not even indirectly.
BLOCKER = """
import importlib.abc, sys
BLOCKED = ("django", "celery", "kombu", "auditorium", "rest_framework", "channels")
class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"{name} may not be imported by the judges library")
sys.meta_path.insert(0, Blocker())
"""

SCRIPT = """
import json, sys
from scoring.judges import ClipAudio, ConditionInput, JudgeConfig, adapter_for
from scoring.judges.runtime import model_dir

spec = json.loads(sys.argv[1])
out = {}
for key, kind, weights in spec["judges"]:
    judge = adapter_for(JudgeConfig(key=key, kind=kind, weights=weights, options={"device": "cpu"}), model_dir=spec["models"])
    clips = [ClipAudio(path=p, sha256=p) for p in spec["clips"]]
    out[key] = judge.score_clips(clips, ConditionInput(prompt="calm piano", lyrics="la la"))
out["loaded"] = sorted({name.split(".")[0] for name in sys.modules} & {"django", "celery", "kombu", "auditorium"})
out["model_dir"] = str(model_dir())
print(json.dumps(out))
"""


def _run_without_platform(spec: dict) -> dict:
    # Only the repository root on the path (not platform/), and no settings module in the environment.
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HOME": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", BLOCKER + SCRIPT, json.dumps(spec)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.engine
def test_the_blocker_really_blocks():
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", BLOCKER + "import django"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "may not be imported by the judges library" in done.stderr


def test_judges_score_without_django_or_celery_and_match_the_platform(tiny_root, tiny_clap_dir, tmp_path, no_network):
    clips = [str(write_tone(tmp_path / f"{i}.wav", 1.5 + i, freq=220.0 * (i + 1), sr=22050)) for i in range(2)]
    # Relative weights, resolved under the models folder given as an argument (no settings exist there).
    models = tmp_path / "models"
    models.mkdir()
    (models / "clap").symlink_to(tiny_clap_dir)
    judges = [("signal", "signal", ""), ("clap", "clap", "clap"), ("cmi-rm", "cmi_rm", str(tiny_root / "CMI-RM"))]
    got = _run_without_platform({"judges": judges, "clips": clips, "models": str(models)})
    assert got.pop("loaded") == []
    assert got.pop("model_dir") == "models"  # no settings there: the folder came only as an argument
    for key, kind, weights in judges:
        judge = adapter_for(JudgeConfig(key=key, kind=kind, weights=weights, options={"device": "cpu"}), model_dir=models)
        here = judge.score_clips([ClipAudio(path=p, sha256=p) for p in clips], ConditionInput(prompt="calm piano", lyrics="la la"))
        assert len(got[key]) == len(here) == 2
        for theirs, ours in zip(got[key], here):
            for dim in judge.dimensions:
                assert theirs[dim] == pytest.approx(ours[dim], rel=1e-5, abs=1e-6), (key, dim)


def test_inside_the_platform_relative_weights_follow_the_setting(settings, tmp_path):
    settings.AUDITORIUM_MODEL_DIR = tmp_path / "elsewhere"
    state = adapter_for(JudgeConfig(key="c", kind="clap", weights="clap/music/v1")).availability()
    assert not state.available and str(tmp_path / "elsewhere" / "clap" / "music" / "v1") in state.reason
    # An explicit folder wins over the setting.
    state = adapter_for(JudgeConfig(key="c", kind="clap", weights="clap/music/v1"), model_dir=tmp_path / "mine").availability()
    assert str(tmp_path / "mine" / "clap" / "music" / "v1") in state.reason
