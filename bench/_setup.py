"""Shared set-up for benchmarks: Django on a scratch PostgreSQL database (or SQLite if asked)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def django_setup(db_name: str) -> None:
    """Point Django at a fresh scratch database named db_name, migrated."""
    sys.path[:0] = [str(ROOT), str(ROOT / "platform")]
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "auditorium.settings")
    # The development settings the measurements were taken with; bench/load.py runs its server with debug off.
    os.environ.setdefault("DJANGO_DEBUG", "true")
    base = os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres")
    if base.startswith("postgres"):
        import psycopg

        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{db_name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{db_name}"')
        os.environ["DATABASE_URL"] = base.rsplit("/", 1)[0] + f"/{db_name}"
    else:
        os.environ.pop("DATABASE_URL", None)
        os.environ["SQLITE_PATH"] = str(ROOT / "var" / f"{db_name}.sqlite3")
        Path(os.environ["SQLITE_PATH"]).unlink(missing_ok=True)
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    # Benchmarks drive the services from up to 50 threads, each holding a connection.
    os.environ.setdefault("DB_POOL_MAX_SIZE", "64")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def cmi_checkout(parser, path: Path, *needs: str) -> Path:
    """The CMI-RewardBench checkout a cross-check runs, refused before any work when it lacks the scripts it runs."""
    missing = [name for name in ("evaluate_results.py", *needs) if not (path / name).is_file()]
    if missing:
        parser.error(f"--cmi-dir {path} is not a CMI-RewardBench checkout (no {', '.join(missing)}); clone github.com/Haiwen-Xia/CMI-RewardBench and pass its folder")
    return path.resolve()
