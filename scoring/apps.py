from django.apps import AppConfig


class ScoringConfig(AppConfig):
    name = "scoring"
    verbose_name = "Scoring"

    def ready(self) -> None:
        # Open report pages refresh when a judgment is committed.
        from .report import report_listener_install

        report_listener_install()
