"""Questionnaires before and after a study, their versions, and each annotator's answers.

A questionnaire is never edited once someone has answered it: a change makes a new version, and
each response keeps the version it answered, so an answer is always read against the questions
that were asked.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models, transaction
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from .questionnaire_cache import asked_forget


class Phase(models.TextChoices):
    PRE = "pre", "Before the study"
    POST = "post", "After the study"


class Questionnaire(models.Model):
    """One version of a study's questionnaire for one phase; the highest version is the one asked. No questions: none asked."""

    study = models.ForeignKey("annotation.Study", on_delete=models.CASCADE, related_name="questionnaires")
    phase = models.CharField(max_length=4, choices=Phase.choices)
    version = models.PositiveSmallIntegerField(default=1)
    questions = models.JSONField(default=list, blank=True, help_text="Checked by annotation.questionnaire_schema.definition_parse.")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["study", "phase", "-version"]
        constraints = [models.UniqueConstraint(fields=["study", "phase", "version"], name="one_questionnaire_version")]

    def __str__(self) -> str:
        return f"{self.get_phase_display().lower()} questionnaire v{self.version} of {self.study}"


class QuestionnaireResponse(models.Model):
    """One annotator's answers to one phase of a study: {question id: value}; an optional question left blank is absent."""

    questionnaire = models.ForeignKey(Questionnaire, on_delete=models.PROTECT, related_name="responses")
    # Study and phase are copied from the questionnaire so that one response per phase holds across versions.
    study = models.ForeignKey("annotation.Study", on_delete=models.CASCADE, related_name="+")
    phase = models.CharField(max_length=4, choices=Phase.choices)
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="questionnaire_responses")
    answers = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["study", "phase", "annotator"], name="one_response_per_phase")]

    def __str__(self) -> str:
        return f"{self.phase} answers of {self.annotator} in {self.study}"


@receiver([post_save, post_delete], sender=Questionnaire, dispatch_uid="questionnaire-asked-forget")
def _asked_forget(sender, instance, **kwargs) -> None:
    # After the commit too, so a request that read the old rows meanwhile does not keep them cached.
    asked_forget(study_id=instance.study_id)
    transaction.on_commit(lambda: asked_forget(study_id=instance.study_id))
