from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Annotation"

    def ready(self) -> None:
        from django.contrib.auth import get_user_model
        from django.db.models.signals import post_delete, post_save, pre_save

        from common.auth_backend import user_forget

        from . import cached, tasks  # noqa: F401  (registers the task names jobs.py queues by)
        from .models import AnnotatorProfile, Study

        pre_save.connect(cached.study_rename_forget, sender=Study, dispatch_uid="annotation-study-rename-cache")
        for signal in (post_save, post_delete):
            signal.connect(cached.study_forget, sender=Study, dispatch_uid="annotation-study-cache")
            signal.connect(cached.consent_forget, sender=AnnotatorProfile, dispatch_uid="annotation-consent-cache")
            signal.connect(user_forget, sender=get_user_model(), dispatch_uid="auditorium-user-cache")
