"""Check a deployment end to end and say what is wrong, in words an operator can act on."""

from __future__ import annotations

import json

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import connections
from django.db.migrations.executor import MigrationExecutor

from auditorium import health


def _migrations_pending() -> list[str]:
    executor = MigrationExecutor(connections["default"])
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    return [f"{migration.app_label}.{migration.name}" for migration, _backwards in plan]


def _judge_weights() -> list[dict]:
    from scoring.models import Judge

    rows = []
    for judge in Judge.objects.filter(enabled=True).exclude(weights=""):
        rows.append({"judge": judge.key, **_weights_status(judge.weights)})
    return rows


def _weights_status(weights: str) -> dict:
    from pathlib import Path

    path = Path(weights)
    if not path.is_absolute():
        candidate = Path(settings.AUDITORIUM_MODEL_DIR) / weights
        if candidate.exists():
            path = candidate
    if path.exists():
        return {"ok": True, "detail": f"found at {path}"}
    try:  # a hub id already in the local cache counts: nothing is downloaded here
        from huggingface_hub import snapshot_download

        local = snapshot_download(weights, local_files_only=True)
        return {"ok": True, "detail": f"in the local model cache at {local}"}
    except Exception:
        return {"ok": False, "detail": f"weights {weights!r} are neither a local path (also tried under AUDITORIUM_MODEL_DIR={settings.AUDITORIUM_MODEL_DIR}) nor in the local model cache"}


class Command(BaseCommand):
    help = "Check the database, broker, migrations, worker queues and judge weights of this deployment."

    def add_arguments(self, parser):
        parser.add_argument("--json", action="store_true", help="Print the findings as JSON.")
        parser.add_argument("--skip-workers", action="store_true", help="Do not wait for Celery workers to answer.")
        parser.add_argument("--require-gpu-queue", action="store_true", help="Fail when no worker serves the gpu queue.")

    def handle(self, *args, **options):
        findings: list[dict] = []

        def add(name, ok, detail, *, fatal=True):
            findings.append({"check": name, "ok": bool(ok), "detail": detail, "fatal": fatal})

        db = health._timed(health.check_database)
        add("database", db["ok"], db.get("detail", ""))
        if db["ok"]:
            try:
                pending = _migrations_pending()
                add("migrations", not pending, "all applied" if not pending else f"not applied: {', '.join(pending)}; run `manage.py migrate`")
            except Exception as exc:
                add("migrations", False, f"cannot read migration state: {exc}")
            try:
                for row in _judge_weights():
                    add(f"judge weights: {row['judge']}", row["ok"], row["detail"], fatal=False)
            except Exception as exc:
                add("judge weights", False, f"cannot list judges: {exc}", fatal=False)
        cache = health._timed(health.check_cache)
        add("cache", cache["ok"], cache.get("detail", "") or settings.CACHES["default"]["BACKEND"])
        broker = health._timed(health.check_broker)
        add("broker", broker["ok"], broker.get("detail", "") or settings.CELERY_BROKER_URL.split("@")[-1])
        if not options["skip_workers"] and broker["ok"]:
            try:
                workers = health.check_workers()
                queues = workers["queues"]
                add("worker queue cpu", queues.get("cpu"), "answering" if queues.get("cpu") else "no worker consumes the cpu queue: start `celery -A auditorium worker -Q cpu`")
                add(
                    "worker queue gpu",
                    queues.get("gpu"),
                    "answering" if queues.get("gpu") else "no worker consumes the gpu queue: start `celery -A auditorium worker -Q gpu` on a GPU machine",
                    fatal=options["require_gpu_queue"],
                )
            except Exception as exc:
                add("workers", False, f"cannot ask workers: {exc}")
        if not settings.DEBUG:
            add("secret key", not settings.SECRET_KEY.startswith("insecure"), "set from the environment")
        else:
            add("debug", False, "DJANGO_DEBUG is on: never serve the public this way", fatal=False)

        if options["json"]:
            self.stdout.write(json.dumps(findings, indent=2))
        else:
            for item in findings:
                mark = "ok  " if item["ok"] else ("FAIL" if item["fatal"] else "warn")
                self.stdout.write(f"[{mark}] {item['check']}: {item['detail']}")
        failed = [item["check"] for item in findings if not item["ok"] and item["fatal"]]
        if failed:
            raise CommandError(f"deployment check failed: {', '.join(failed)}")
