"""/healthz/workers/ as the demo runs it: a real worker on the embedded SQLite broker, the server launched as the demo launches it.

The broker cannot broadcast (so Celery's control commands never arrive); the check is a ping task's
round trip, and its answer is cached, so callers in between cost a cache read.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from tests.live_uvicorn import free_port

ROOT = Path(__file__).resolve().parents[2]


def _env(tmp_path: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "CELERY_", "REDIS_", "DATABASE_"))}
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "auditorium.settings",
            "DJANGO_DEBUG": "true",
            "DJANGO_SECRET_KEY": "test-only-workers-health-0123456789abcdef",
            "PYTHONPATH": f"{ROOT / 'platform'}:{ROOT}",
            "SQLITE_PATH": str(tmp_path / "db.sqlite3"),
            "CELERY_BROKER_URL": f"sqla+sqlite:///{tmp_path / 'broker.sqlite'}",
            "CELERY_RESULT_BACKEND": f"db+sqlite:///{tmp_path / 'results.sqlite'}",
            "AUDITORIUM_HEALTH_WORKERS_SECONDS": "2",
            "LOG_FORMAT": "plain",
        }
    )
    return env


def _wait(predicate, timeout: float, what: str):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.engine
@pytest.mark.slow
def test_workers_health_is_right_while_the_demo_worker_runs_and_cheap_between_checks(tmp_path):
    env = _env(tmp_path)
    port = free_port()
    log = tmp_path / "worker.log"
    with open(log, "wb") as out:
        worker = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "auditorium", "worker", "-Q", "cpu,gpu", "--pool", "threads", "--concurrency", "1",
             "--hostname", "health@%h", "--without-gossip", "--without-mingle", "--loglevel", "INFO"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    server = subprocess.Popen([sys.executable, "-m", "auditorium.serve", "--port", str(port)], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/healthz/workers/"
    try:
        _wait(lambda: b" ready." in log.read_bytes() or worker.poll() is not None, 90, "the worker")
        assert worker.poll() is None, log.read_text()[-2000:]

        def up():
            try:
                return requests.get(f"http://127.0.0.1:{port}/healthz/", timeout=2).status_code == 200
            except requests.RequestException:
                return False

        _wait(up, 60, "the server")
        first = requests.get(url, timeout=10)
        assert first.status_code == 200 and first.json() == {"ok": True}, first.text
        started = time.monotonic()
        for _ in range(20):
            assert requests.get(url, timeout=10).status_code == 200
        assert (time.monotonic() - started) / 20 < 0.1  # cached between checks: no broker round trip per caller
        worker.terminate()
        worker.wait(timeout=30)
        time.sleep(2.5)  # the cached answer expires
        down = requests.get(url, timeout=10)
        assert down.status_code == 503 and down.json() == {"ok": False}
    finally:
        for process in (worker, server):
            if process.poll() is None:
                process.terminate()
                process.wait(timeout=30)
