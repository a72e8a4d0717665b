"""Adjudication: the study role that settles items the crowd disagrees on, and its decisions (docs/crowd.md)."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class StudyAdjudicator(models.Model):
    """A person the study's owner (or a collaborator, an admin) names to settle its disputed items."""

    study = models.ForeignKey("annotation.Study", on_delete=models.CASCADE, related_name="adjudicator_grants")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="adjudicator_grants")
    granted_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    granted_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["study", "user"]
        constraints = [models.UniqueConstraint(fields=["study", "user"], name="unique_study_adjudicator")]

    def __str__(self) -> str:
        return f"{self.user} adjudicates {self.study}"


class Verdict(models.TextChoices):
    """An adjudicator's answer on one dimension, in the pair's stored order (clip_a, clip_b)."""

    CLIP_A = "clip_a", "The pair's first clip"
    CLIP_B = "clip_b", "The pair's second clip"
    TIE = "tie", "Neither is better"


class Adjudication(models.Model):
    """The one decision on a disputed pair: the unique pair makes a second, concurrent decision fail."""

    pair = models.OneToOneField("annotation.Pair", on_delete=models.CASCADE, related_name="adjudication")
    adjudicator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="adjudications")
    alignment = models.CharField(max_length=6, choices=Verdict.choices)
    musicality = models.CharField(max_length=6, choices=Verdict.choices)
    reason = models.TextField()
    # What the queue showed when the decision was made (votes per answer, agreement, the judge's verdict):
    # the votes can change later, the record of what was settled should not.
    evidence = models.JSONField(default=dict, blank=True)
    decided_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-decided_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=models.Q(alignment__in=Verdict.values, musicality__in=Verdict.values), name="adjudication_verdicts_known"),
            models.CheckConstraint(condition=~models.Q(reason=""), name="adjudication_reason_given"),
        ]

    def __str__(self) -> str:
        return f"adjudication of pair {self.pair_id}"
