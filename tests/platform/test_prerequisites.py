"""A missing Chromium or fixture: a skip with the reason locally, a failure under CI (CI=true)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import browser
from tests.fixtures import TUNEJURY, expected_sha256, fixture_file

ROOT = Path(__file__).resolve().parents[2]
# The file TuneJury publishes (tests/fixtures/README.md); SHA256SUMS must keep naming exactly it.
TUNEJURY_SHA256 = "fdc1502c54479f51514453b5a12d6027d4c947e5f8c465d4e025c2c33a0153e9"


@pytest.mark.parametrize("ci", ["true", "1", "yes"])
def test_missing_chromium_fails_under_ci(monkeypatch, ci):
    monkeypatch.setenv("CI", ci)
    with pytest.raises(pytest.fail.Exception, match=r"Chromium is missing: no executable at /nonexistent/chromium\..*CI=true"):
        browser.require_chromium("/nonexistent/chromium")


@pytest.mark.parametrize("ci", [None, "", "false", "0"])
def test_missing_chromium_skips_locally_with_the_reason(monkeypatch, ci):
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    with pytest.raises(pytest.skip.Exception, match="Chromium is missing: no executable at /nonexistent/chromium"):
        browser.require_chromium("/nonexistent/chromium")


def test_a_file_that_is_not_executable_is_not_chromium(monkeypatch, tmp_path):
    monkeypatch.setenv("CI", "true")
    fake = tmp_path / "chromium"
    fake.write_text("#!/bin/sh\n")
    with pytest.raises(pytest.fail.Exception):
        browser.require_chromium(str(fake))
    fake.chmod(0o755)
    assert browser.require_chromium(str(fake)) == str(fake)


def test_missing_fixture_fails_under_ci_and_skips_locally(monkeypatch, tmp_path):
    (tmp_path / "SHA256SUMS").write_text(f"{'0' * 64}  gone.json\n")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="Test fixture .*gone.json is missing"):
        fixture_file(tmp_path / "gone.json")
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="Test fixture .*gone.json is missing"):
        fixture_file(tmp_path / "gone.json")


def test_an_altered_fixture_always_fails(monkeypatch, tmp_path):
    monkeypatch.delenv("CI", raising=False)
    altered = tmp_path / TUNEJURY.name
    altered.write_bytes(TUNEJURY.read_bytes().replace(b'"MI": 3.', b'"MI": 4.', 1))
    with pytest.raises(pytest.fail.Exception, match="it was altered"):
        fixture_file(altered, sums=TUNEJURY.parent / "SHA256SUMS")


def test_the_tunejury_fixture_is_the_published_file():
    assert expected_sha256(TUNEJURY.name) == TUNEJURY_SHA256
    assert fixture_file(TUNEJURY) == TUNEJURY


def _pytest_in_subprocess(*args: str, tmp: Path, **env_extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in {"CI", "AUDITORIUM_CHROMIUM"}}
    env.update(env_extra)
    # Its own test database names: it must never touch the outer run's.
    env.update(SQLITE_TEST_PATH=str(tmp / "t.sqlite3"), DATABASE_TEST_NAME="test_auditorium_prerequisites")
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.engine
def test_browser_tests_fail_under_ci_without_chromium(tmp_path):
    # The hook in tests/conftest.py runs before any fixture starts a browser or a server.
    target = "tests/arena/test_browser.py"
    failed = _pytest_in_subprocess(target, CI="true", AUDITORIUM_CHROMIUM="/nonexistent/chromium", tmp=tmp_path)
    assert failed.returncode == 1, failed.stdout[-2000:]
    assert "Chromium is missing: no executable at /nonexistent/chromium" in failed.stdout
    assert "CI=true: a missing prerequisite is a failure, not a skip." in failed.stdout
    skipped = _pytest_in_subprocess(target, AUDITORIUM_CHROMIUM="/nonexistent/chromium", tmp=tmp_path)
    assert skipped.returncode == 0, skipped.stdout[-2000:]
    assert "skipped" in skipped.stdout and "failed" not in skipped.stdout and " passed" not in skipped.stdout
