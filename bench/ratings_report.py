"""The ratings report on 100,000 synthetic ratings, against the pairwise report on 100,000 votes in the same run.

    .venv/bin/python bench/ratings_report.py [--ratings 100000] [--bootstrap 1000] [--repeat 3] [--skip-pairwise]
        [--pairwise-repeat 1] [--against REV] [--write FILE]

Ratings: acr (1-5), two dimensions, 300 raters, 10 ratings per clip and dimension (5,000 clips for
100,000 ratings), 6 systems, 5 % gold items, two judges scoring every clip. Timed: the ratings
section on frames (scoring.ratings.ratings_compute: MOS per clip and system with t-intervals and a
rater bootstrap, Krippendorff's alpha interval and ordinal, ICC(2,k), rater bias and consistency,
gold checks, judges against the MOS at clip and system level with clip-resampled intervals).
Baseline: the pairwise report on frames (scoring.report.report_compute) on bench/report.py's
synthetic 100,000 votes, same bootstrap rounds, in the same process (--pairwise-repeat runs: it takes minutes). Medians of runs (wall clock) and
the mean CPU seconds of this process per run (time.process_time: every thread of the process), with the load
average before and after. Every ratings run starts cold (the resamples a report caches are dropped first), after
one untimed run for the process's first-call set-up.
--skip-pairwise leaves the (slow) baseline out; --against REV also times scoring/ratings.py as it was at git
revision REV on the same frame, its runs interleaved with this tree's, and says whether every figure of the section is
the same; --write also writes the lines to FILE under a header with the command line, the commit and the load.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "platform"), str(ROOT / "bench")]


def synthetic_ratings(n_ratings: int, seed: int = 0, raters: int = 300, per_clip: int = 10):
    rng = np.random.default_rng(seed)
    clips = n_ratings // (2 * per_clip)
    system = np.arange(clips) % 6
    truth = 4.3 - 0.5 * system + rng.normal(0, 0.4, clips)
    bias = rng.normal(0, 0.4, raters)
    kind = np.where(rng.random(clips) < 0.05, "gold", "regular")
    clip_idx = np.repeat(np.arange(clips), per_clip)
    rater = np.concatenate([rng.choice(raters, per_clip, replace=False) for _ in range(clips)])
    parts = []
    for d, dim in enumerate(("musicality", "alignment")):
        value = np.clip(np.rint(truth[clip_idx] + bias[rater] + rng.normal(0, 0.7, len(clip_idx))), 1, 5)
        gold = kind[clip_idx] == "gold"
        parts.append(pd.DataFrame({
            "submission_id": np.arange(len(clip_idx)) + d * 0, "annotator_id": rater, "item_id": clip_idx, "clip_id": clip_idx,
            "system": np.array([f"sys-{s}" for s in range(6)], dtype=object)[system[clip_idx]], "dimension": dim, "value": value,
            "kind": kind[clip_idx], "role": "test", "expected_low": np.where(gold, 4.0, np.nan), "expected_high": np.where(gold, 5.0, np.nan),
        }))
    frame = pd.concat(parts, ignore_index=True)
    judges = pd.concat([
        pd.DataFrame({"judge": f"judge-{j}", "clip_id": np.arange(clips), "dimension": dim, "score": truth + rng.normal(0, noise, clips)})
        for j, noise in enumerate((0.3, 0.8)) for dim in ("musicality", "alignment")
    ], ignore_index=True)
    return frame, judges


def against(rev: str, frame, judges, rounds: int, repeat: int, ratings_run, section) -> str:
    """This tree's ratings section against REV's scoring/ratings.py: CPU seconds of interleaved runs, and the figures."""
    import importlib.util

    source = subprocess.run(["git", "show", f"{rev}:scoring/ratings.py"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    spec = importlib.util.spec_from_loader("scoring._ratings_at_rev", loader=None)
    module = importlib.util.module_from_spec(spec)
    module.__package__ = "scoring"  # its relative imports (.stats) resolve in this tree
    exec(compile(source, f"{rev}:scoring/ratings.py", "exec"), module.__dict__)

    def old_run():
        for name in ("clip_resamples", "rater_resamples"):
            if hasattr(getattr(module, name, None), "cache_clear"):
                getattr(module, name).cache_clear()
        return module.ratings_compute(frame, judge_scores=judges, rounds=rounds, seed=0)

    old_cpu, new_cpu = [], []
    for _ in range(repeat):
        for run, times in ((old_run, old_cpu), (ratings_run, new_cpu)):
            cpu = time.process_time()
            result = run()
            times.append(time.process_time() - cpu)
            if run is old_run:
                old_section = result
    same = "every figure identical" if old_section == section else "FIGURES DIFFER"
    return (
        f"same frame, {repeat} interleaved runs each, CPU s: {rev}'s scoring/ratings.py {' / '.join(f'{t:.3f}' for t in old_cpu)}, "
        f"this tree's {' / '.join(f'{t:.3f}' for t in new_cpu)}; {same}"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ratings", type=int, default=100_000)
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-pairwise", action="store_true", help="time the ratings report only (no ratio)")
    parser.add_argument("--pairwise-repeat", type=int, default=1, help="runs of the pairwise baseline (minutes each)")
    parser.add_argument("--against", metavar="REV", help="also time scoring/ratings.py of this git revision, interleaved")
    parser.add_argument("--write", metavar="FILE", help="also write the output to FILE under a header line")
    args = parser.parse_args()
    lines = []

    def say(line: str) -> None:
        print(line, flush=True)
        lines.append(line)

    load_at_start, started = os.getloadavg(), time.gmtime()
    # The tree that runs, read before the runs (a commit made while they run must not be credited with them).
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip() or "unknown"
    dirty = " + uncommitted changes" if subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True, text=True).stdout.strip() else ""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "auditorium.settings")
    os.environ.setdefault("DJANGO_DEBUG", "true")
    os.environ.setdefault("SQLITE_PATH", str(Path(tempfile.mkdtemp()) / "bench.sqlite3"))
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    import django

    django.setup()
    from report import median_time, synthetic

    from scoring import agreement, ratings, report, resampled

    frame, judges = synthetic_ratings(args.ratings)
    say(f"ratings: {len(frame):,} on {frame['clip_id'].nunique():,} clips, {frame['annotator_id'].nunique()} raters, 2 dimensions, 2 judges")
    say(f"machine: {os.cpu_count()} CPUs, load average {' '.join(f'{v:.1f}' for v in os.getloadavg())} at the start")

    def ratings_run():
        # Cold, as a new report: the resamples are cached per report size, so a repeat would otherwise reuse them.
        resampled.clip_resamples.cache_clear()
        ratings.rater_resamples.cache_clear()
        return ratings.ratings_compute(frame, judge_scores=judges, rounds=args.bootstrap, seed=0)

    ratings_run()  # untimed: first-call imports and set-up, once per process
    cpu = time.process_time()
    t_ratings, section = median_time(ratings_run, args.repeat)
    cpu_ratings = (time.process_time() - cpu) / args.repeat
    # CPU seconds (this process, all its threads) beside the wall clock: on a shared machine the wall clock counts
    # the time other processes held the cores.
    say(f"ratings report on frames ({args.bootstrap} bootstrap rounds): {t_ratings:.3f} s wall, {cpu_ratings:.3f} s CPU  ({section['ratings']:,} ratings kept, {len(section['mos_clips']):,} clip MOS rows)")
    if args.against:
        say(against(args.against, frame, judges, args.bootstrap, args.repeat, ratings_run, section))
    if not args.skip_pairwise:
        raw_votes, pairs, verdicts, sources = synthetic(args.ratings)
        votes = agreement.votes_frame_prepare(raw_votes)
        options = report.ReportOptions(rounds=args.bootstrap)
        cpu = time.process_time()
        t_pairs, _ = median_time(lambda: report.report_compute(votes=votes, verdicts=verdicts, pairs=pairs, sources=sources, options=options), args.pairwise_repeat)
        cpu_pairs = (time.process_time() - cpu) / args.pairwise_repeat
        say(f"pairwise report on frames, {len(votes):,} votes, same rounds: {t_pairs:.3f} s wall, {cpu_pairs:.3f} s CPU")
        say(f"ratio ratings / pairwise: {t_ratings / t_pairs:.3f} wall, {cpu_ratings / cpu_pairs:.4f} CPU")
    say(f"load average at the end: {' '.join(f'{v:.1f}' for v in os.getloadavg())}")
    if args.write:
        command = " ".join(shlex.quote(a) for a in [".venv/bin/python", "bench/ratings_report.py", *sys.argv[1:]])
        settings = os.environ.get("DJANGO_SETTINGS_MODULE", "")
        header = (
            f"# DJANGO_SETTINGS_MODULE={settings} {command}   (commit {commit}{dirty}, started {time.strftime('%Y-%m-%d %H:%M UTC', started)}, "
            f"{os.cpu_count()} CPUs, load average {' '.join(f'{v:.1f}' for v in load_at_start)} when it started)"
        )
        Path(args.write).write_text("\n".join([header, *lines]) + "\n")


if __name__ == "__main__":
    main()
