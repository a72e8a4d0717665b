"""Cross-check of the MOS export with CMI-RewardBench's own evaluator: their SRCC/LCC/Kendall on our file equal ours.

    .venv/bin/python bench/cmi_mos_crosscheck.py --cmi-dir PATH [--clips 40] [--raters 6] [--seed 3]

PATH is a checkout of github.com/Haiwen-Xia/CMI-RewardBench (evaluate_results.py and config/; no
weights or data needed); it is copied to a temporary folder and run there, in its own process.
The script:

1. builds a rating study (acr, musicality and alignment) on a scratch SQLite database; simulated
   raters with a known quality per clip rate every clip through the rating services (listening
   recorded as the server records it);
2. exports it (`mos.jsonl`) and adds a deterministic judge's score per clip as
   `predicted_musicality` / `predicted_text-music alignment`, the keys their inference writes;
3. runs their `evaluate_results.py` on that file unchanged;
4. prints their PAM figures and ours (scoring.ratings on the same clips); they must agree to 6 decimals.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _setup import ROOT, cmi_checkout, django_setup  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cmi-dir", required=True, type=Path)
    parser.add_argument("--clips", type=int, default=40)
    parser.add_argument("--raters", type=int, default=6)
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()
    args.cmi_dir = cmi_checkout(parser, args.cmi_dir)
    work = Path(tempfile.mkdtemp(prefix="cmi-mos-crosscheck-"))
    os.environ.setdefault("AUDITORIUM_DATA_DIR", str(work / "data"))
    os.environ.setdefault("BENCH_DATABASE_URL", "sqlite")
    django_setup("auditorium_cmi_mos_crosscheck")

    import numpy as np

    from annotation.ratings import exports, services
    from scoring.ratings import correlations
    from tests.ratings_helpers import listen_all, member, rating_study

    rng = np.random.default_rng(args.seed)
    study = rating_study(task="acr", items=args.clips, overlap_target=args.raters, name="mos-crosscheck")
    truth = {}
    for _ in range(args.raters):
        user = member(study)
        bias = rng.normal(0, 0.4)
        while (a := services.rating_next(study=study, annotator=user)) is not None:
            clip = a.order[0]
            truth.setdefault(clip, rng.uniform(1.5, 4.5))
            ratings = {"A": {d: int(np.clip(np.rint(truth[clip] + bias + rng.normal(0, 0.7)), 1, 5)) for d in ("musicality", "alignment")}}
            listen_all(a)
            services.rating_submit(assignment_id=a.pk, annotator=user, ratings=ratings, idempotency_key=f"{user.pk}-{a.pk}")
    rows = [json.loads(line) for line in exports.ratings_export(study=study)["mos.jsonl"].decode().splitlines()]
    judge = np.random.default_rng(args.seed + 1)
    for row in rows:
        row["predicted_musicality"] = round(row["musicality"] + judge.normal(0, 0.6), 6)
        row["predicted_text-music alignment"] = round(row["text-music alignment"] + judge.normal(0, 0.9), 6)
    results = work / "results.jsonl"
    results.write_text("".join(json.dumps(r) + "\n" for r in rows))
    their_dir = work / "cmi"
    shutil.copytree(args.cmi_dir, their_dir, ignore=shutil.ignore_patterns(".git"))
    subprocess.run(
        [sys.executable, "evaluate_results.py", "--results_jsonl_abs", str(results), "--output_dir_abs", str(work / "eval")], cwd=their_dir, check=True,
    )  # fmt: skip
    theirs = {row["task"]: row for row in json.loads((work / "eval" / "metrics.json").read_text())["summary"] if row.get("dataset") == "PAM"}
    ok = True
    for task, truth_key, pred_key in (("musicality", "musicality", "predicted_musicality"), ("alignment", "text-music alignment", "predicted_text-music alignment")):
        ours = correlations(np.array([r[pred_key] for r in rows]), np.array([r[truth_key] for r in rows]))
        for metric, their_key in (("srcc", "SRCC"), ("lcc", "LCC"), ("ktau", "K-Tau")):
            equal = round(ours[metric], 6) == round(theirs[task][their_key], 6) and ours["n"] == theirs[task]["n"]
            ok &= equal
            print(f"PAM {task:10s} {their_key:5s} evaluate_results.py {theirs[task][their_key]:.6f} (n {theirs[task]['n']})   ours {ours[metric]:.6f} (n {ours['n']})   {'equal' if equal else 'DIFFERENT'}")
    print(f"work folder: {work}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
