"""Test overrides on top of the one settings module (which still reads DATABASE_URL / REDIS_URL)."""

import os
import tempfile
from pathlib import Path

# Tests run on the development settings (no HTTPS redirect or secure cookies, plain static files),
# whatever the shell exports, with a key of their own; worker processes started by tests inherit both.
os.environ["DJANGO_DEBUG"] = "true"
os.environ["DJANGO_SECRET_KEY"] = "test-only-secret-key-4f7c1d9e2b8a6053-not-for-deployment"
os.environ.pop("DJANGO_SECRET_KEY_FILE", None)
# Parallel test workers (pytest-xdist) each get a test database of their own from pytest-django; on Redis each
# takes a database number of its own too, so one worker's cache, broker queues and channel groups (named after
# row ids that both workers' databases reuse) never reach the other's tests or worker processes.
_worker = os.environ.get("PYTEST_XDIST_WORKER", "")
if _worker.startswith("gw") and os.environ.get("REDIS_URL"):
    _base, _, _db = os.environ["REDIS_URL"].rpartition("/")
    if _base.startswith("redis") and _db.isdigit():
        os.environ["REDIS_URL"] = f"{_base}/{int(_db) + 1 + int(_worker[2:])}"

from .settings import *  # noqa: E402, F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
MEDIA_ROOT = Path(tempfile.mkdtemp(prefix="auditorium-test-media-"))
CELERY_TASK_ALWAYS_EAGER = True
STORAGES["staticfiles"] = {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}  # noqa: F405
LOGGING = {"version": 1, "disable_existing_loggers": False, "root": {"level": "WARNING"}}
STATIC_ROOT = Path(tempfile.mkdtemp(prefix="auditorium-test-static-"))
# One process per test run: the in-memory layer is enough and leaves no file behind. The tests of
# pages pushed to from another process switch to the embedded file layer (tests/live_processes.py).
if not REDIS_URL:  # noqa: F405
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

# Threaded tests hold one connection per thread for the thread's whole life
# (50 concurrent clients in the fault tests); a request-sized pool would time out.
if "pool" in DATABASES["default"].get("OPTIONS", {}):  # noqa: F405
    DATABASES["default"]["OPTIONS"]["pool"]["max_size"] = 64  # noqa: F405

# Many tests sign in from one address in one process; the sign-in throttle has its own tests (tests/reliability/test_login_throttle.py).
AUDITORIUM_LOGIN_ACCOUNT_ADDRESS_RATE = "0/900"
AUDITORIUM_LOGIN_ACCOUNT_RATE = "0/900"
AUDITORIUM_LOGIN_IP_RATE = "0/900"
# Likewise the resume-code throttle (tests/annotation/test_recruitment_throttle.py).
AUDITORIUM_RESUME_PARTICIPANT_ADDRESS_RATE = "0/900"
AUDITORIUM_RESUME_PARTICIPANT_RATE = "0/900"
AUDITORIUM_RESUME_IP_RATE = "0/900"

# Outside judges' runs inside the request that asks for them, so a test reads the results right after;
# tests/benchmarks/test_http_deadline.py turns the thread back on to check that a POST returns at once.
BENCHMARK_HTTP_IN_THREAD = False
