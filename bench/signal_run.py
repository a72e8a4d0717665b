"""Signal-judge runs through the real worker process: pairs/s on the embedded SQLite broker and on Redis.

    .venv/bin/python bench/signal_run.py [--pairs 60] [--repeat 3] [--brokers sqlite,redis] [--concurrency 2]

A study shaped like the demo's (8 conditions, 6 six-second 22.05 kHz FLAC clips each, --pairs
pairs spread over the conditions) is scored by the signal judge with the worker started as
`./auditorium demo` starts it (celery -A auditorium worker -Q cpu,gpu --pool threads
--concurrency 2), on a SQLite database shared by this process and the worker, as in the demo.
Each broker runs in a child process of its own, so the settings are read with its URL.

Each line is --repeat runs with a cold clip cache (a judge of its own each), timed from the run's
creation to its finished state as stored (run_create queues the run on commit, as the web page
does); the line shows the run of median time and the range of the times:

- jobs: per pair = one job per pair after the clip-cache prewarm jobs (the code before chunking,
  judge options pairs_per_task 1, prewarm true); chunks = the defaults (8 pairs a job, no prewarm
  for a CPU judge).
- poll: the worker's broker polling interval (CELERY_BROKER_POLLING_INTERVAL); 1 s is kombu's
  default, which the SQLite broker ran with before. Redis delivers by blocking pop and never polls.
- task s/pair: the worker's own time in the run's jobs ("succeeded in" in its log), summed and
  divided by the pairs; busy = that time over the wall time the 2 worker threads had.
- ratio: pairs/s over the first line of the same broker (the code before this change).

The in-process line scores the same pairs through the services in this process, one pair at a
time, with no broker: the floor the worker's time per pair is compared with.

Env: REDIS_BENCH_URL (default redis://127.0.0.1:6379/13; that database is flushed).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parent))
from _setup import ROOT, django_setup  # noqa: E402

REDIS = os.environ.get("REDIS_BENCH_URL", "redis://127.0.0.1:6379/13")
CONDITIONS, CLIPS_PER_CONDITION, SECONDS, RATE = 8, 6, 6.0, 22050
# (jobs, polling interval) per line, in order; the first is the baseline of its broker.
CONFIGS = {
    "sqlite": [("per pair", 1.0), ("per pair", 0.1), ("chunks", 1.0), ("chunks", 0.1)],
    "redis": [("per pair", 0.1), ("chunks", 0.1)],
}
SUCCEEDED = re.compile(r"Task (scoring\.\w+)\[[0-9a-f-]+\] succeeded in ([0-9.]+)s")


def _child_env(broker: str, data: Path) -> dict:
    env = {
        "AUDITORIUM_DATA_DIR": str(data),
        "DJANGO_DEBUG": "false",
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
        "DJANGO_SECURE_SSL_REDIRECT": "false",
        "DJANGO_SECURE_COOKIES": "false",
        "DJANGO_HSTS_SECONDS": "0",
        "LOG_FORMAT": "plain",
        "BENCH_DATABASE_URL": os.environ.get("BENCH_DATABASE_URL", "sqlite"),
        "PYTHONUNBUFFERED": "1",
        "CELERY_TASK_ALWAYS_EAGER": "false",
    }
    if broker == "sqlite":
        env |= {"CELERY_BROKER_URL": f"sqla+sqlite:///{data}/celery.sqlite", "CELERY_RESULT_BACKEND": f"db+sqlite:///{data}/celery-results.sqlite"}
    else:
        env |= {"REDIS_URL": REDIS, "CELERY_BROKER_URL": REDIS, "CELERY_RESULT_BACKEND": REDIS}
    return env


def _start_worker(log: Path, poll: float, concurrency: int) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'platform'}:{ROOT}", "CELERY_BROKER_POLLING_INTERVAL": str(poll), "LOG_LEVEL": "INFO"}
    command = [
        sys.executable, "-m", "celery", "-A", "auditorium", "worker", "-Q", "cpu,gpu", "--pool", "threads",
        "--concurrency", str(concurrency), "--hostname", f"bench{os.getpid()}@%h", "--without-gossip", "--without-mingle", "--loglevel", "INFO",
    ]  # fmt: skip
    proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=open(log, "wb"), stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 120
    while b" ready." not in log.read_bytes():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the worker did not start; its log ends:\n{log.read_text(errors='replace')[-2000:]}")
        time.sleep(0.2)
    return proc


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def _study(pairs: int):
    import itertools

    import numpy as np

    from annotation.models import Study
    from annotation.services import clip_ingest_array, condition_get_or_create, pair_get_or_create

    rng = np.random.default_rng(0)
    t = np.arange(int(SECONDS * RATE)) / RATE
    study = Study.objects.create(name="bench-signal-run")
    per_condition = -(-pairs // CONDITIONS)
    ids = []
    for c in range(CONDITIONS):
        condition, _ = condition_get_or_create(prompt=f"bench condition {c}")
        clips = []
        for i in range(CLIPS_PER_CONDITION):
            wave = 0.3 * np.sin(2 * np.pi * (110 + 23 * i + 7 * c) * t) + 0.02 * (i % 3) * rng.standard_normal(len(t))
            if i % 2:  # half the clips clipped, so the judge has a fault to find
                wave = np.clip(wave * 4, -0.6, 0.6)
            clips.append(clip_ingest_array(audio=wave.astype(np.float32), sample_rate=RATE, fmt="FLAC")[0])
        for a, b in list(itertools.combinations(clips, 2))[:per_condition]:
            if len(ids) < pairs:
                ids.append(pair_get_or_create(study=study, condition=condition, clip_a=a, clip_b=b)[0].pk)
    return study, ids


def _run(*, study, jobs: str, poll: float, log: Path, concurrency: int, tag: str) -> dict:
    from scoring.models import Judge, ScoringRun
    from scoring.services import run_create

    options = {"pairs_per_task": 1, "prewarm": True} if jobs == "per pair" else {}
    judge = Judge.objects.create(key=f"signal-bench-{tag}", kind=Judge.Kind.SIGNAL, options=options)
    offset = log.stat().st_size
    run = run_create(judge=judge, study=study, label=f"bench {tag}")
    deadline = time.monotonic() + 600
    while ScoringRun.objects.filter(pk=run.pk, state=ScoringRun.State.DONE).count() == 0:
        if time.monotonic() > deadline:
            raise RuntimeError(f"run {run.pk} did not finish in 600 s")
        time.sleep(0.05)
    time.sleep(0.5)  # the last job's log line follows its result
    run.refresh_from_db()
    seconds = (run.finished_at - run.created_at).total_seconds()
    with open(log, "rb") as handle:
        handle.seek(offset)
        times = [(name, float(s)) for name, s in SUCCEEDED.findall(handle.read().decode(errors="replace"))]
    work = sum(s for name, s in times if name in ("scoring.pair_score", "scoring.pairs_score", "scoring.clips_prewarm", "scoring.run_start"))
    jobs_n = sum(1 for name, _ in times if name in ("scoring.pair_score", "scoring.pairs_score", "scoring.clips_prewarm"))
    return {
        "jobs": jobs, "poll": poll, "seconds": seconds, "pairs": run.total, "done": run.done, "failed": run.failed,
        "pairs_per_s": run.total / seconds, "task_s_per_pair": work / run.total, "busy": work / (seconds * concurrency), "job_count": jobs_n,
    }  # fmt: skip


def _in_process(*, study, pairs: list[int]) -> float:
    """Seconds per pair scoring the pairs through the services here, one pair at a time (cold cache)."""
    from scoring import services
    from scoring.models import Judge, ScoringRun

    judge = Judge.objects.create(key="signal-bench-in-process", kind=Judge.Kind.SIGNAL)
    run = ScoringRun.objects.create(judge=judge, study=study, pair_ids=pairs, total=len(pairs))
    start = time.perf_counter()
    for pid in pairs:
        services.pair_score(run_id=run.pk, pair_id=pid)
    return (time.perf_counter() - start) / len(pairs)


def child(broker: str, pairs: int, concurrency: int, repeat: int) -> None:
    """One broker's lines as JSON on the last line of stdout (run in a process whose env names the broker)."""
    if broker == "redis":
        import redis

        redis.Redis.from_url(REDIS).flushdb()
    django_setup(f"bench_signal_run_{broker}")
    from auditorium.celery import app

    # The publisher connected before the first run, as a running web server is: a fresh process's first
    # publish to the SQLite broker imports SQLAlchemy (about 1 s here), which would weigh on the first line only.
    with app.connection_for_write() as conn:
        conn.ensure_connection(max_retries=1)
    study, ids = _study(pairs)
    data = Path(os.environ["AUDITORIUM_DATA_DIR"])
    rows = []
    for n, (jobs, poll) in enumerate(CONFIGS[broker]):
        log = data / f"worker-{n}.log"
        worker = _start_worker(log, poll, concurrency)
        try:
            runs = sorted((_run(study=study, jobs=jobs, poll=poll, log=log, concurrency=concurrency, tag=f"{broker}-{n}-{r}") for r in range(repeat)), key=lambda row: row["seconds"])
        finally:
            _stop(worker)
        rows.append({**runs[len(runs) // 2], "range": [runs[0]["seconds"], runs[-1]["seconds"]]})
    print(json.dumps({"broker": broker, "rows": rows, "in_process_s_per_pair": _in_process(study=study, pairs=ids)}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=60)
    parser.add_argument("--brokers", default="sqlite,redis")
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.pairs, args.concurrency, args.repeat)
        return
    load = os.getloadavg()[0]
    print(f"Signal-judge run of {args.pairs} pairs ({CONDITIONS} conditions, {CONDITIONS * CLIPS_PER_CONDITION} {SECONDS:g} s clips), ", end="")
    print(f"real worker: --pool threads --concurrency {args.concurrency}; {os.cpu_count()} cores, load average {load:.1f} at start")
    for broker in args.brokers.split(","):
        data = Path(tempfile.mkdtemp(prefix=f"bench-signal-{broker}-"))
        try:
            env = {**os.environ, **_child_env(broker, data)}
            for name in ("REDIS_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND"):
                if name not in _child_env(broker, data):
                    env.pop(name, None)
            out = subprocess.run(
                [sys.executable, __file__, "--child", broker, "--pairs", str(args.pairs), "--concurrency", str(args.concurrency), "--repeat", str(args.repeat)],
                env=env, cwd=ROOT, capture_output=True, text=True, timeout=1800,
            )  # fmt: skip
            if out.returncode != 0:
                print(f"{broker}: failed\n{out.stdout[-3000:]}{out.stderr[-3000:]}")
                continue
            result = json.loads(out.stdout.strip().splitlines()[-1])
        finally:
            shutil.rmtree(data, ignore_errors=True)
        label = "embedded SQLite broker (sqla+sqlite)" if broker == "sqlite" else f"Redis ({REDIS})"
        print(f"{label}:")
        base = result["rows"][0]["pairs_per_s"]
        for row in result["rows"]:
            print(
                f"  jobs {row['jobs']:<8} poll {row['poll']:>3g} s: {row['seconds']:6.2f} s end to end ({row['range'][0]:.2f}-{row['range'][1]:.2f}), {row['pairs_per_s']:6.2f} pairs/s "
                f"({row['pairs_per_s'] / base:5.2f}x) | {row['job_count']:3d} jobs, task {row['task_s_per_pair']:.3f} s/pair, "
                f"workers busy {100 * row['busy']:3.0f} % | {row['done']} done, {row['failed']} failed"
            )
        print(f"  in process, no broker, one pair at a time: {result['in_process_s_per_pair']:.3f} s/pair")


if __name__ == "__main__":
    main()
