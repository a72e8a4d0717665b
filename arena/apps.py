from django.apps import AppConfig


class ArenaConfig(AppConfig):
    name = "arena"
    verbose_name = "Arena"

    def ready(self) -> None:
        # Registers the Celery tasks in every process: services queue them by name (arena/jobs.py).
        # Here rather than at the top because task modules import models, which need a ready registry.
        from django.db.models.signals import post_delete, post_save

        from . import tasks  # noqa: F401
        from .models import Visitor
        from .services import visitor_forget

        for signal in (post_save, post_delete):
            signal.connect(visitor_forget, sender=Visitor, dispatch_uid="arena-visitor-cache")
