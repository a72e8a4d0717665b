"""A scoring job whose worker is killed mid-run is picked up by a new worker and stored exactly once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import numpy as np
import pytest
from django.conf import settings
from django.db import connection

from annotation.services import clip_ingest_array, condition_get_or_create, pair_get_or_create
from scoring.models import Judge, ScoringRun, Verdict
from tests.factories import StudyFactory

ROOT = Path(__file__).resolve().parents[2]


def _start_worker(queue: str, name: str, log: Path) -> subprocess.Popen:
    env = {
        **os.environ,
        "PYTHONPATH": f"{ROOT / 'platform'}:{ROOT}",
        "DJANGO_SETTINGS_MODULE": "auditorium.settings",
        # The worker reads the test database, not the development one.
        "DATABASE_URL": f"postgres://{connection.settings_dict['USER'] or 'postgres'}@{connection.settings_dict['HOST'] or '127.0.0.1'}:{connection.settings_dict['PORT'] or 5432}/{connection.settings_dict['NAME']}",
        "MEDIA_ROOT": str(settings.MEDIA_ROOT),
        "CELERY_TASK_ALWAYS_EAGER": "false",
        # A killed worker's unacknowledged message returns to the queue after this many seconds.
        "CELERY_VISIBILITY_TIMEOUT": "3",
        "LOG_LEVEL": "INFO",
        # The test reads the log to know when the job started: no block buffering.
        "PYTHONUNBUFFERED": "1",
    }
    command = [
        sys.executable, "-m", "celery", "-A", "auditorium", "worker", "-Q", queue, "-c", "1", "-P", "prefork",
        "-n", f"{name}@%h", "--without-gossip", "--without-mingle", "--without-heartbeat", "-l", "info",
    ]
    handle = open(log, "wb")
    # Own process group, so SIGKILL reaches the pool child mid-task as well as the parent.
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True)


def _wait(predicate, timeout: float, what: str, log: Path):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}; worker log:\n{log.read_text(errors='replace')[-3000:]}")


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


@pytest.mark.services
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_killed_worker_job_completes_after_restart_with_exactly_one_verdict(tmp_path):
    from auditorium.celery import app
    from scoring.tasks import pair_score_task

    study = StudyFactory(name="kill-study")
    condition, _ = condition_get_or_create(prompt="steady drums")
    t = np.arange(16000) / 16000
    a = clip_ingest_array(audio=(0.3 * np.sin(2 * np.pi * 220 * t)).astype(np.float32), sample_rate=16000, fmt="WAV")[0]
    b = clip_ingest_array(audio=np.clip(2 * np.sin(2 * np.pi * 330 * t), -0.5, 0.5).astype(np.float32), sample_rate=16000, fmt="WAV")[0]
    pair, _ = pair_get_or_create(study=study, condition=condition, clip_a=a, clip_b=b)
    queue = f"scoring-recovery-{uuid.uuid4().hex[:8]}"
    # sleep: the job lasts long enough to be killed mid-run; queue: a private queue no other worker reads.
    judge = Judge.objects.create(key="signal-slow", kind=Judge.Kind.SIGNAL, options={"sleep": 6, "queue": queue})
    run = ScoringRun.objects.create(judge=judge, study=study, pair_ids=[pair.pk], total=1)

    first_log, second_log = tmp_path / "worker1.log", tmp_path / "worker2.log"
    first = _start_worker(queue, "first", first_log)
    second = None
    eager = app.conf.task_always_eager
    try:
        app.conf.task_always_eager = False
        pair_score_task.apply_async((run.pk, pair.pk), queue=queue)
        _wait(lambda: b"received" in first_log.read_bytes(), 120, "the first worker to receive the job", first_log)
        time.sleep(2.0)  # inside the 6 s job
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(timeout=10)
        assert not Verdict.objects.filter(run=run).exists()

        second = _start_worker(queue, "second", second_log)
        _wait(lambda: Verdict.objects.filter(run=run).exists(), 120, "the second worker to finish the job", second_log)
        time.sleep(4.0)  # a duplicate delivery would have written by now
        assert Verdict.objects.filter(run=run).count() == 1
        run.refresh_from_db()
        assert (run.state, run.done, run.failed) == (ScoringRun.State.DONE, 1, 0)
        assert Verdict.objects.get(run=run).musicality_choice_id == a.pk
        assert b"succeeded" in second_log.read_bytes()
    finally:
        app.conf.task_always_eager = eager
        _stop(first)
        if second is not None:
            _stop(second)
