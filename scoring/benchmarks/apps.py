from django.apps import AppConfig


class BenchmarksConfig(AppConfig):
    name = "scoring.benchmarks"
    label = "benchmarks"
    verbose_name = "Judge benchmarks"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Registers the task names in every process (web, worker, tests).
        from . import tasks  # noqa: F401
