from django.apps import AppConfig


class ScoringConfig(AppConfig):
    name = "scoring"
    verbose_name = "Scoring"

    def ready(self) -> None:
        from django.conf import settings

        from .judge_endpoint import judge_endpoint_address
        from .judges.runtime import use_endpoint_check, use_model_dir

        # The judges are a library that knows no settings: tell it where this deployment keeps its
        # models (read at each lookup, so a changed setting takes effect).
        use_model_dir(lambda: settings.AUDITORIUM_MODEL_DIR)
        # Endpoint judges run inside this deployment's network: their URL is checked before each request.
        use_endpoint_check(judge_endpoint_address)
        # Registers the tasks in every process, so services can queue them by name (scoring.queueing).
        from . import tasks  # noqa: F401
        from .broadcast import report_listener_install

        # Open report pages refresh when a judgment is committed.
        report_listener_install()
