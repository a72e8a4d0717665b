from django.apps import AppConfig


class ScoringConfig(AppConfig):
    name = "scoring"
    verbose_name = "Scoring"

    def ready(self) -> None:
        # Registers the tasks in every process, so services can queue them by name (scoring.queueing).
        from . import tasks  # noqa: F401
        from .broadcast import report_listener_install

        # Open report pages refresh when a judgment is committed.
        report_listener_install()
