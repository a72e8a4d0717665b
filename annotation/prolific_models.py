"""Prolific through its API: a study's researcher token, the links tied to Prolific studies, their submissions,
the bonuses owed and every call made.

Neither the token nor a participant id is stored in the clear: the token is encrypted (annotation/prolific.py),
and submissions are matched to accounts through the keyed hash the recruitment link already keeps. Bonuses are
sent by Prolific's submission id, so a participant id is never needed after the match.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models


class ProlificCredential(models.Model):
    """The study's Prolific API token, encrypted at rest; write-only: no page, log or export shows it again."""

    study = models.OneToOneField("annotation.Study", on_delete=models.CASCADE, related_name="prolific_credential")
    token_ciphertext = models.TextField(editable=False)
    set_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    set_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"Prolific token of {self.study}"


class ProlificStudyTie(models.Model):
    """A recruitment link tied to the Prolific study that sends participants to it."""

    link = models.OneToOneField("annotation.RecruitmentLink", on_delete=models.CASCADE, related_name="prolific")
    prolific_study_id = models.CharField(max_length=64)
    synced_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"Prolific study {self.prolific_study_id} for {self.link}"


class Decision(models.TextChoices):
    APPROVE = "APPROVE", "approve"
    REJECT = "REJECT", "reject"


class WorkState(models.TextChoices):
    PENDING = "pending", "waiting to be sent"
    SENDING = "sending", "being sent"
    DONE = "done", "done"
    FAILED = "failed", "failed"


class ProlificSubmission(models.Model):
    """One Prolific submission as last fetched, the account it matched, and the researcher's decision on it."""

    tie = models.ForeignKey(ProlificStudyTie, on_delete=models.CASCADE, related_name="submissions")
    submission_id = models.CharField(max_length=64)
    participant = models.ForeignKey("annotation.ExternalParticipant", null=True, blank=True, on_delete=models.SET_NULL, related_name="prolific_submissions")
    status = models.CharField(max_length=40)
    # Prolific's bonus_payments as last read (pence / cents): how a lost pay answer is checked.
    bonus_cents = models.JSONField(default=list, blank=True)
    decision = models.CharField(max_length=10, choices=Decision.choices, blank=True)
    decision_state = models.CharField(max_length=10, choices=WorkState.choices, blank=True)
    rejection_category = models.CharField(max_length=30, blank=True)
    message = models.TextField(blank=True)
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    decided_at = models.DateTimeField(null=True, blank=True)
    error = models.CharField(max_length=500, blank=True)
    fetched_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["tie", "submission_id"], name="one_row_per_prolific_submission")]


class BonusState(models.TextChoices):
    PENDING = "pending", "waiting to be sent"
    CLAIMED = "claimed", "being set up"
    # The pay call went out and its answer may have been lost: never sent again before Prolific's state is checked.
    SENT = "sent", "pay sent, not yet confirmed"
    PAID = "paid", "paid"
    FAILED = "failed", "refused by Prolific"


class ProlificBonus(models.Model):
    """A bonus owed to one participant for one reason: paid at most once, whatever is retried."""

    tie = models.ForeignKey(ProlificStudyTie, on_delete=models.CASCADE, related_name="bonuses")
    participant = models.ForeignKey("annotation.ExternalParticipant", on_delete=models.CASCADE, related_name="prolific_bonuses")
    submission = models.ForeignKey(ProlificSubmission, on_delete=models.CASCADE, related_name="bonuses")
    reason = models.CharField(max_length=100)
    amount = models.DecimalField(max_digits=8, decimal_places=2)
    state = models.CharField(max_length=10, choices=BonusState.choices, default=BonusState.PENDING)
    bulk_id = models.CharField(max_length=64, blank=True)
    idempotency_key = models.CharField(max_length=64, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    paid_at = models.DateTimeField(null=True, blank=True)
    error = models.CharField(max_length=500, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["tie", "participant", "reason"], name="one_bonus_per_participant_and_reason")]


class ProlificCall(models.Model):
    """One request to Prolific and its answer (trimmed, participant ids and the token scrubbed)."""

    study = models.ForeignKey("annotation.Study", on_delete=models.CASCADE, related_name="prolific_calls")
    method = models.CharField(max_length=8)
    endpoint = models.CharField(max_length=300)
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    answer = models.TextField(blank=True)
    error = models.CharField(max_length=300, blank=True)
    idempotency_key = models.CharField(max_length=64, blank=True)
    attempt = models.PositiveSmallIntegerField(default=1)
    duration_ms = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["study", "-id"], name="prolific_call_recent")]


def new_key() -> str:
    return uuid.uuid4().hex
