"""Celery application. Queues: `cpu` (signal judges, exports, leaderboards) and `gpu` (learned judges, generation)."""

import os

from celery import Celery
from kombu import Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "auditorium.settings")

app = Celery("auditorium")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.task_queues = (Queue("cpu"), Queue("gpu"))
app.autodiscover_tasks()
