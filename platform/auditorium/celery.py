"""Celery application. Queues: `cpu` (signal judges, exports, leaderboards) and `gpu` (learned judges, generation).

GPU workers run one process per device (`-Q gpu -c 1 --pool solo`, CUDA_VISIBLE_DEVICES picking
the device; platform/deploy/README.md). Models load once per process (auditorium.runtime); the
judges named in AUDITORIUM_WARM_JUDGES are loaded when the worker starts (scoring/tasks.py), so
the first job does not pay for loading and kernel warm-up.
"""

import os

from celery import Celery, bootsteps
from celery.signals import worker_process_init
from kombu import Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "auditorium.settings")

app = Celery("auditorium")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.task_queues = (Queue("cpu"), Queue("gpu"))
app.autodiscover_tasks()


class BrokerPolling(bootsteps.StartStopStep):
    """Sets the consumer's polling interval on a polling broker (kombu's virtual transports: SQLAlchemy, filesystem).

    Such a worker sleeps this long whenever a poll finds nothing it may take, including while its
    prefetch slots are full, so the interval, not the jobs, sets the pace of short jobs. Runs again
    after every reconnection, which builds a new transport.
    """

    requires = ("celery.worker.consumer.connection:Connection",)

    def start(self, c) -> None:
        interval = c.app.conf.get("broker_polling_interval")
        transport = c.connection.transport if c.connection is not None else None
        if interval and getattr(transport, "polling_interval", None) is not None:
            transport.polling_interval = float(interval)


app.steps["consumer"].add(BrokerPolling)


def task(name: str):
    """The task registered under `name`, for services that queue by name and never import tasks.py.

    A name nobody registered is a programming error (the app's ready() imports its tasks), not a message to drop.
    """
    try:
        return app.tasks[name]
    except KeyError:
        raise LookupError(f"Celery task {name!r} is not registered (its app's ready() imports its tasks module at start-up).") from None


@app.task(name="auditorium.ping", bind=True, ignore_result=False)
def ping(self) -> str:
    """The workers health check's round trip where the broker cannot broadcast (auditorium/health.py)."""
    return self.request.hostname or "worker"


@worker_process_init.connect
def _forget_inherited_connection_pools(**_kwargs) -> None:
    """A prefork child must not share the parent's pooled PostgreSQL sockets.

    The pools live on the backend class, so a pool the parent opened before
    forking would be reused by every child. Dropping the reference (not closing
    it, which would end the parent's sessions) makes each child open its own.
    """
    from django.db import connections

    for conn in connections.all():
        pools = getattr(type(conn), "_connection_pools", None)
        if pools:
            pools.clear()
