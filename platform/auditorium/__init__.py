"""The Django project package. Lives in platform/ (a plain folder, never a package)."""

from .celery import app as celery_app

__all__ = ("celery_app",)
