from django.apps import AppConfig


class ScoringConfig(AppConfig):
    name = "scoring"
    verbose_name = "Scoring"

    def ready(self) -> None:
        from django.conf import settings

        from .judges.runtime import use_model_dir

        # The judges are a library that knows no settings: tell it where this deployment keeps its
        # models (read at each lookup, so a changed setting takes effect).
        use_model_dir(lambda: settings.AUDITORIUM_MODEL_DIR)
        # Registers the tasks in every process, so services can queue them by name (scoring.queueing).
        from . import tasks  # noqa: F401
        from .broadcast import report_listener_install

        # Open report pages refresh when a judgment is committed.
        report_listener_install()
