from django.apps import AppConfig


class ArenaConfig(AppConfig):
    name = "arena"
    verbose_name = "Arena"

    def ready(self) -> None:
        # Registers the Celery tasks in every process: services queue them by name (arena/jobs.py).
        # Here rather than at the top because task modules import models, which need a ready registry.
        from . import tasks  # noqa: F401
