"""The pairwise report computation that bench/report.py times, in CPU seconds, optionally under cProfile.

    .venv/bin/python bench/profile_report.py 20000 [--profile]
"""

from __future__ import annotations

import cProfile
import importlib.util
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    sys.path[:0] = [str(ROOT), str(ROOT / "platform")]
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "auditorium.settings")
    os.environ.setdefault("DJANGO_DEBUG", "true")
    os.environ.setdefault("SQLITE_PATH", str(Path(tempfile.mkdtemp()) / "bench.sqlite3"))
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    import django

    django.setup()
    from scoring import agreement, report

    spec = importlib.util.spec_from_file_location("bench_report", ROOT / "bench" / "report.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    n = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 20_000
    raw, pairs, verdicts, sources = bench.synthetic(n)
    votes = agreement.votes_frame_prepare(raw)
    options = report.ReportOptions(rounds=1000)

    def compute():
        return report.report_compute(votes=votes, verdicts=verdicts, pairs=pairs, sources=sources, options=options)

    profiler = cProfile.Profile() if "--profile" in sys.argv else None
    cpu, wall = time.process_time(), time.perf_counter()
    profiler.runcall(compute) if profiler else compute()
    print(f"report_compute on {n:,} votes: {time.process_time() - cpu:.2f} s CPU, {time.perf_counter() - wall:.2f} s wall")
    if profiler:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(35)


if __name__ == "__main__":
    main()
