"""Cross-check with CMI-RewardBench's own code: its inference on our export, its evaluator on its output, our score on the same file.

    .venv/bin/python bench/cmi_crosscheck.py --cmi-dir PATH [--pairs 40] [--seed 7]

PATH is a checkout of github.com/Haiwen-Xia/CMI-RewardBench (inference_benchmark.py,
evaluate_results.py, core/, config/; no weights or data needed). The script:

1. builds a study with a known truth (tests/benchmarks/helpers.known_study) on a scratch database
   and freezes a dev benchmark from it (a dev export carries the labels their evaluator needs);
2. writes the input package (`benchmark_export`);
3. runs their `inference_benchmark.py` on `items.jsonl` with a judge of ours plugged in through
   its `--model_class_path` interface (a deterministic signal judge: RMS level and zero-crossing
   rate of each clip), which writes their `results.jsonl`;
4. runs their `evaluate_results.py` on that file, and uploads the same file unchanged as a
   submission (`benchmark_submit`);
5. prints both accuracies per dimension; they must be equal.

Nothing of their code is copied here: it runs from the checkout, in its own process.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _setup import ROOT, cmi_checkout, django_setup  # noqa: E402

JUDGE = textwrap.dedent(
    '''
    """A deterministic judge behind CMI-RewardBench's benchmark model interface: per clip, [alignment, musicality]."""
    import numpy as np
    import soundfile as sf


    class SignalCrossJudge:
        def __init__(self, **kwargs):
            pass

        @property
        def sr(self):
            return 16000

        def score_batch(self, inputs, batch_size, max_dur, **kwargs):
            out = []
            for item in inputs:
                audio, _ = sf.read(item.audio, dtype="float32", always_2d=True)
                mono = audio.mean(axis=1)
                rms = float(np.sqrt(np.mean(mono**2)))
                zcr = float(np.mean(np.abs(np.diff(np.sign(mono))) > 0))
                out.append([rms + 0.01 * len(item.text or ""), zcr])
            return np.asarray(out, dtype=float)
    '''
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cmi-dir", required=True, type=Path)
    parser.add_argument("--pairs", type=int, default=40)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    args.cmi_dir = cmi_checkout(parser, args.cmi_dir, "inference_benchmark.py")
    work = Path(tempfile.mkdtemp(prefix="cmi-crosscheck-"))
    os.environ.setdefault("AUDITORIUM_DATA_DIR", str(work / "data"))
    os.environ.setdefault("BENCH_DATABASE_URL", "sqlite")
    django_setup("auditorium_cmi_crosscheck")

    from django.core.management import call_command

    from annotation.models import Pair

    from scoring.benchmarks import selectors, services
    from scoring.benchmarks.models import Submission
    from tests.benchmarks.helpers import known_study

    study, _ = known_study(n_pairs=args.pairs, seed=args.seed, name="crosscheck", split=Pair.Split.TRAIN)
    bench = services.benchmark_create(name="crosscheck", study=study, is_dev=True, bootstrap_rounds=200)
    package = work / "package"
    call_command("benchmark_export", bench.name, "--out", str(package))
    (work / "crossjudge.py").write_text(JUDGE)
    run_dir = work / "run"
    env = {**os.environ, "PYTHONPATH": f"{work}{os.pathsep}{args.cmi_dir}"}
    subprocess.run(
        [
            sys.executable, "inference_benchmark.py", "--checkpoint", "none", "--dataset_jsonl", str(package / "items.jsonl"),
            "--dataset_root", str(package), "--output_dir", str(run_dir), "--model_class_path", "crossjudge:SignalCrossJudge",
            "--device", "cpu", "--no_run_evaluate",
        ],
        cwd=args.cmi_dir, env=env, check=True,
    )  # fmt: skip
    results = run_dir / "results.jsonl"
    subprocess.run(
        [sys.executable, "evaluate_results.py", "--results_jsonl_abs", str(results), "--output_dir_abs", str(work / "eval")],
        cwd=args.cmi_dir, env=env, check=True,
    )  # fmt: skip
    theirs = {row["task"]: row for row in json.loads((work / "eval" / "metrics.json").read_text())["summary"] if row.get("dataset") == "CMI-Pref"}
    services.team_create(name="crosscheck")
    call_command("benchmark_submit", bench.name, "--team", "crosscheck", "--file", str(results))
    submission = Submission.objects.get(team__name="crosscheck")
    print(f"results.jsonl: {sum(1 for _ in results.open())} rows written by inference_benchmark.py; uploaded as {submission.file_format}")
    ok = True
    for dim in ("alignment", "musicality"):
        ours = next(r for r in selectors.scores(bench, part="all", dim=dim)["rows"] if r["submission"] == submission.pk)
        equal = abs(ours["accuracy"] - theirs[dim]["ACC"]) < 1e-12 and ours["n"] == theirs[dim]["n"]
        ok &= equal
        print(f"{dim:10s} evaluate_results.py ACC {theirs[dim]['ACC']:.6f} (n {theirs[dim]['n']})   ours {ours['accuracy']:.6f} (n {ours['n']})   {'equal' if equal else 'DIFFERENT'}")
    print(f"work folder: {work}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
