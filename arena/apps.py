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

        from django.conf import settings
        from django.core.exceptions import ImproperlyConfigured
        from django.utils.module_loading import import_string

        from .style import covariates_check

        # A typo in the covariates stops start-up with the known names, not the first refit.
        try:
            covariates_check(settings.ARENA_STYLE_COVARIATES)
        except ValueError as exc:
            raise ImproperlyConfigured(f"ARENA_STYLE_COVARIATES: {exc}") from None
        if not settings.ARENA_OUTLIER_FP_RATE < 1:
            raise ImproperlyConfigured(f"ARENA_OUTLIER_FP_RATE={settings.ARENA_OUTLIER_FP_RATE} must be below 1 (it is the share of honest visitors flagged, e.g. 0.01).")
        try:
            import_string(settings.ARENA_PROMPT_TAGGER)
        except ImportError as exc:
            raise ImproperlyConfigured(f"ARENA_PROMPT_TAGGER={settings.ARENA_PROMPT_TAGGER!r} cannot be imported: {exc}") from None

        for signal in (post_save, post_delete):
            signal.connect(visitor_forget, sender=Visitor, dispatch_uid="arena-visitor-cache")
