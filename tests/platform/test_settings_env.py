"""Settings read from the environment: typed arena knobs, misspelled names refused, debug off by default."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
KEY = "test-only-settings-key-0b5d8e27c914a3f6"
PRINT = (
    "import json, django; django.setup(); from django.conf import settings as s; "
    "print(json.dumps({n: getattr(s, n) for n in ('DEBUG', 'ARENA_VOTE_RATE', 'ARENA_TRUST_X_FORWARDED_FOR', "
    "'ARENA_LEADERBOARD_ROUNDS', 'ARENA_MIN_LISTEN_SECONDS', 'ARENA_LEADERBOARD_ANCHOR', 'ARENA_LEADERBOARD_BOTH_BAD')} | {'key': s.SECRET_KEY}))"
)


def settings_in_subprocess(**env_extra: str) -> subprocess.CompletedProcess:
    """Import the production settings module in a fresh interpreter with only the variables given."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "ARENA_"))}
    env.update(env_extra, DJANGO_SETTINGS_MODULE="auditorium.settings", PYTHONPATH=f"{ROOT / 'platform'}:{ROOT}")
    return subprocess.run([sys.executable, "-c", PRINT], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def values(**env_extra: str) -> dict:
    result = settings_in_subprocess(**env_extra)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_arena_knobs_have_typed_defaults():
    got = values(DJANGO_SECRET_KEY=KEY)
    assert got["DEBUG"] is False
    assert got["ARENA_VOTE_RATE"] == "20/60" and got["ARENA_TRUST_X_FORWARDED_FOR"] is False
    assert got["ARENA_LEADERBOARD_ROUNDS"] == 1000 and got["ARENA_MIN_LISTEN_SECONDS"] == 5.0
    assert got["ARENA_LEADERBOARD_ANCHOR"] is None and got["ARENA_LEADERBOARD_BOTH_BAD"] == "exclude"


def test_arena_knobs_from_the_environment_are_parsed_to_their_type():
    got = values(
        DJANGO_SECRET_KEY=KEY,
        ARENA_VOTE_RATE="0/60",
        ARENA_TRUST_X_FORWARDED_FOR="yes",
        ARENA_LEADERBOARD_ROUNDS="50",
        ARENA_MIN_LISTEN_SECONDS="2.5",
        ARENA_LEADERBOARD_ANCHOR="aurora",
        ARENA_LEADERBOARD_BOTH_BAD="tie",
    )
    assert got["ARENA_VOTE_RATE"] == "0/60" and got["ARENA_TRUST_X_FORWARDED_FOR"] is True
    assert got["ARENA_LEADERBOARD_ROUNDS"] == 50 and got["ARENA_MIN_LISTEN_SECONDS"] == 2.5
    assert got["ARENA_LEADERBOARD_ANCHOR"] == "aurora" and got["ARENA_LEADERBOARD_BOTH_BAD"] == "tie"


@pytest.mark.engine
def test_a_misspelled_arena_variable_stops_start_up_and_names_the_close_match():
    result = settings_in_subprocess(DJANGO_SECRET_KEY=KEY, ARENA_VOTES_RATE="5/60")
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert "ARENA_VOTES_RATE (did you mean ARENA_VOTE_RATE?)" in result.stderr


@pytest.mark.engine
def test_arena_values_of_the_wrong_type_stop_start_up():
    for name, value, words in [
        ("ARENA_VOTE_RATE", "fast", "is not a rate"),
        ("ARENA_LEADERBOARD_ROUNDS", "many", "is not an integer"),
        ("ARENA_TRUST_X_FORWARDED_FOR", "perhaps", "is not a boolean"),
        ("ARENA_MIN_LISTEN_SECONDS", "-1", "must be at least"),
        ("ARENA_LEADERBOARD_BOTH_BAD", "drop", "must be one of exclude, tie"),
    ]:
        result = settings_in_subprocess(DJANGO_SECRET_KEY=KEY, **{name: value})
        assert result.returncode != 0, name
        assert name in result.stderr and words in result.stderr, result.stderr[-500:]


def test_debug_mode_without_a_key_keeps_a_random_one_in_the_data_folder(tmp_path):
    first = values(DJANGO_DEBUG="true", AUDITORIUM_DATA_DIR=str(tmp_path))
    assert first["DEBUG"] is True
    key_file = tmp_path / "secret_key"
    assert key_file.read_text().strip() == first["key"] and len(first["key"]) >= 50
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    # The next process (the runserver child, a worker, a command) gets the same key; another folder another key.
    assert values(DJANGO_DEBUG="true", AUDITORIUM_DATA_DIR=str(tmp_path))["key"] == first["key"]
    assert values(DJANGO_DEBUG="true", AUDITORIUM_DATA_DIR=str(tmp_path / "other"))["key"] != first["key"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".secret_key")]


def test_a_given_key_is_used_as_is_and_nothing_is_written(tmp_path):
    got = values(DJANGO_DEBUG="true", DJANGO_SECRET_KEY=KEY, AUDITORIUM_DATA_DIR=str(tmp_path))
    assert got["key"] == KEY and not (tmp_path / "secret_key").exists()
