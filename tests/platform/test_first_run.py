"""First run of `./auditorium`: pip's progress is shown while it works, and the ASGI application speaks lifespan."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from asgiref.sync import async_to_sync

ROOT = Path(__file__).resolve().parents[2]

FAKE_PYTHON = """#!/bin/bash
if [ "$1 $2" = "-m pip" ]; then
  echo "Collecting alpha"
  echo "Requirement already satisfied: beta in /somewhere"
  sleep 1
  echo "Downloading alpha-1.0-py3-none-any.whl (900.0 MB)"
  sleep 5
  echo "Installing collected packages: alpha"
  echo "Successfully installed alpha-1.0"
  exit "${FAKE_PIP_EXIT:-0}"
fi
echo "python $*"
"""


def fake_venv(tmp_path: Path) -> Path:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    python = venv / "bin" / "python"
    python.write_text(FAKE_PYTHON)
    python.chmod(0o755)
    return venv


def run_script(tmp_path: Path, **env) -> list[tuple[float, str]]:
    """`./auditorium test` against a fake venv; each output line with the seconds since start it arrived at."""
    full = {**os.environ, "AUDITORIUM_VENV": str(fake_venv(tmp_path)), "AUDITORIUM_CHROMIUM": shutil.which("true"), "AUDITORIUM_PIP_HEARTBEAT": "1", **env}
    start = time.monotonic()
    proc = subprocess.Popen([str(ROOT / "auditorium"), "test"], cwd=ROOT, env=full, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = [(time.monotonic() - start, line.rstrip("\n")) for line in proc.stdout]
    proc.wait(timeout=60)
    lines.append((time.monotonic() - start, f"exit {proc.returncode}"))
    return lines


def test_pip_progress_is_shown_while_it_runs_not_after(tmp_path):
    lines = run_script(tmp_path)
    text = [line for _, line in lines]
    assert text[-1] == "exit 0", text
    at = {line.strip(): t for t, line in lines}
    end = lines[-1][0]
    # The first steps arrive while pip is still busy (it runs 6 s more), and the long quiet download gets a heartbeat.
    assert end - at["Collecting alpha"] > 3, lines
    assert any(line.strip().startswith("... still working after") and "Downloading alpha" in line for line in text), text
    assert "    Installing collected packages: alpha" in text and not any("Requirement already satisfied" in line for line in text)
    assert any(line.startswith("  requirements installed in") for line in text)


def test_a_failed_pip_run_stops_with_the_end_of_its_log(tmp_path):
    lines = run_script(tmp_path, FAKE_PIP_EXIT="1")
    text = [line for _, line in lines]
    assert text[-1] == "exit 1" and any("pip could not install the requirements" in line for line in text), text
    assert not (tmp_path / "venv" / ".requirements.sha256").exists()


def test_the_asgi_application_completes_lifespan_startup_and_shutdown():
    from auditorium.asgi import application

    sent, inbox = [], [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}]

    async def receive():
        return inbox.pop(0)

    async def send(message):
        sent.append(message["type"])

    async_to_sync(application)({"type": "lifespan", "asgi": {"version": "3.0"}}, receive, send)
    assert sent == ["lifespan.startup.complete", "lifespan.shutdown.complete"]


@pytest.mark.engine
def test_uvicorn_serves_the_application_without_a_lifespan_warning(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "auditorium.test_settings", "AUDITORIUM_DATA_DIR": str(tmp_path)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "auditorium.asgi:application", "--app-dir", "platform", "--host", "127.0.0.1", "--port", str(port)],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        output = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            output.append(line)
            if "Application startup complete" in line or not line:
                break
    finally:
        proc.terminate()
        rest, _ = proc.communicate(timeout=30)
    text = "".join(output) + rest
    assert "Application startup complete" in text, text
    assert "lifespan" not in text.lower().replace("application startup complete", ""), text
