"""Browser tests of live pages whose changes come from another process, as the demo's worker makes them.

The live server (Daphne, forked from the test process) and a child process started per change share the
test database (a file for SQLite, the test database for PostgreSQL) and one channel layer:

- the embedded one (common/sqlite_layer.py in a temporary file), as `./auditorium demo` runs;
- Redis (channels_redis) when REDIS_URL is set, as a deployment runs.

The child runs with the project's own settings module (not the test settings), so it is configured
the way the demo's worker is: embedded settings, or the Redis ones.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

from django.conf import settings
from django.db import connection
from django.test.utils import override_settings

from tests.live_browser import BrowserLiveServerTestCase

ROOT = Path(__file__).resolve().parent.parent
LEAVE_OUT = ("REDIS_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND", "DATABASE_URL", "DJANGO_SETTINGS_MODULE", "CELERY_TASK_ALWAYS_EAGER", "PYTEST_CURRENT_TEST")


def database_env() -> dict[str, str]:
    """How a child process reaches the test database this process uses."""
    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        return {"SQLITE_PATH": str(db["NAME"])}
    auth = quote(db["USER"] or "", safe="") + (f":{quote(db['PASSWORD'], safe='')}" if db.get("PASSWORD") else "")
    return {"DATABASE_URL": f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"}


class OtherProcessLiveTestCase(BrowserLiveServerTestCase):
    """A live server on the embedded file channel layer; `other_process` makes changes from a child process."""

    redis = False

    @classmethod
    def setUpClass(cls):
        cls.state_dir = Path(tempfile.mkdtemp(prefix="auditorium-live-"))
        cls.layer_path = cls.state_dir / "channels.sqlite3"
        if cls.redis:
            layers = {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": [settings.REDIS_URL]}}}
        else:
            layers = {"default": {"BACKEND": "common.sqlite_layer.SQLiteChannelLayer", "CONFIG": {"path": str(cls.layer_path)}}}
        # Before the server is forked, so it serves its websockets on this layer.
        cls._layer_override = override_settings(CHANNEL_LAYERS=layers)
        cls._layer_override.enable()
        try:
            super().setUpClass()
        except Exception:
            cls._layer_override.disable()
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            super().tearDownClass()
        finally:
            cls._layer_override.disable()

    def other_process(self, code: str, *args: str) -> float:
        """Run `code` in `manage.py shell` in a child process; returns when its change was committed (epoch seconds).

        The code prints that moment itself (`print("changed-at", time.time())`) right after its commit,
        so the time a child takes to start is not counted against the page.
        """
        env = {k: v for k, v in os.environ.items() if k not in LEAVE_OUT}
        env.update(
            DJANGO_SETTINGS_MODULE="auditorium.settings",
            DJANGO_DEBUG="true",
            AUDITORIUM_DATA_DIR=str(self.state_dir),
            MEDIA_ROOT=str(settings.MEDIA_ROOT),
            CHANNELS_SQLITE_PATH=str(self.layer_path),
            LOG_LEVEL="WARNING",
            **database_env(),
        )
        if self.redis:
            env["REDIS_URL"] = settings.REDIS_URL
            env["CELERY_TASK_ALWAYS_EAGER"] = "true"  # the child is the worker: it runs the tasks it queues
        done = subprocess.run(
            [sys.executable, "manage.py", "shell", "-c", code, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, f"the other process failed:\n{done.stdout}\n{done.stderr}"
        stamps = [line.split()[1] for line in done.stdout.splitlines() if line.startswith("changed-at ")]
        assert stamps, f"the other process printed no changed-at line:\n{done.stdout}\n{done.stderr}"
        return float(stamps[-1])

    def wait_until(self, page, expression: str, *, since: float, within: float = 3.0) -> float:
        """Wait for a page condition; returns and checks how long after `since` it held."""
        left = max(0.05, within - (time.time() - since))
        page.wait_for_function(expression, timeout=left * 1000, polling=50)
        latency = time.time() - since
        self.assertLess(latency, within, f"the page changed {latency:.2f} s after the other process's change")
        return latency
