"""Celery application. Queues: `cpu` (signal judges, exports, leaderboards) and `gpu` (learned judges, generation)."""

import os

from celery import Celery
from celery.signals import worker_process_init
from kombu import Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "auditorium.settings")

app = Celery("auditorium")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.task_queues = (Queue("cpu"), Queue("gpu"))
app.autodiscover_tasks()


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
