"""Crowd quality: a study's headphone screen, its practice round, and its recruitment links.

None of these rows is a judgment: practice answers and screening results never reach the
votes, the exports or the agreement statistics; they are reported on their own.
"""

from __future__ import annotations

import secrets
import uuid

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

# The URL parameter of a signed link: hex HMAC-SHA256 of the participant id, keyed with the link's signing secret.
SIGNATURE_PARAM = "sig"


def _token() -> str:
    return secrets.token_urlsafe(16)


class ScreeningAttempt(models.Model):
    """One attempt at the screen: trials made from `seed` on the server; the answers are never sent to the page."""

    study = models.ForeignKey("annotation.Study", on_delete=models.CASCADE, related_name="screening_attempts")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="screening_attempts")
    kind = models.CharField(max_length=10)
    token = models.CharField(max_length=40, unique=True, default=_token, editable=False)
    seed = models.BigIntegerField()
    trials = models.PositiveSmallIntegerField()
    pass_mark = models.PositiveSmallIntegerField()
    answers = models.JSONField(default=list, blank=True)
    correct = models.PositiveSmallIntegerField(null=True, blank=True)
    passed = models.BooleanField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    answered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["study", "annotator"])]

    def __str__(self) -> str:
        return f"screening {self.pk} of {self.annotator} in {self.study}"


class PracticeItem(models.Model):
    """A practice pair: never a Pair, so the assignment engine, the votes and the exports never see it."""

    study = models.ForeignKey("annotation.Study", on_delete=models.CASCADE, related_name="practice_items")
    position = models.PositiveSmallIntegerField(default=0)
    condition = models.ForeignKey("annotation.Condition", on_delete=models.PROTECT, related_name="+")
    clip_a = models.ForeignKey("annotation.Clip", on_delete=models.PROTECT, related_name="+")
    clip_b = models.ForeignKey("annotation.Clip", on_delete=models.PROTECT, related_name="+")
    expected_alignment = models.ForeignKey("annotation.Clip", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    expected_musicality = models.ForeignKey("annotation.Clip", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    explanation = models.TextField(help_text="Shown after the answer: why the expected clip is better.")
    from_pair = models.ForeignKey("annotation.Pair", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", help_text="The gold pair it was copied from.")

    class Meta:
        ordering = ["study", "position", "id"]
        constraints = [models.CheckConstraint(condition=~models.Q(clip_a=models.F("clip_b")), name="practice_clips_distinct")]

    def __str__(self) -> str:
        return f"practice {self.position} of {self.study}"


class PracticeAnswer(models.Model):
    item = models.ForeignKey(PracticeItem, on_delete=models.CASCADE, related_name="answers")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="practice_answers")
    alignment_choice = models.ForeignKey("annotation.Clip", on_delete=models.PROTECT, related_name="+")
    musicality_choice = models.ForeignKey("annotation.Clip", on_delete=models.PROTECT, related_name="+")
    alignment_right = models.BooleanField(null=True)
    musicality_right = models.BooleanField(null=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["item", "annotator"], name="one_practice_answer_per_item")]


class RecruitmentLink(models.Model):
    """A link for a recruitment platform (Prolific-style URL parameters), with its codes, cap and expiry."""

    study = models.ForeignKey("annotation.Study", on_delete=models.CASCADE, related_name="recruitment_links")
    token = models.CharField(max_length=40, unique=True, default=_token, editable=False)
    label = models.CharField(max_length=100, blank=True)
    participant_param = models.CharField(max_length=40, default="PROLIFIC_PID")
    study_param = models.CharField(max_length=40, default="STUDY_ID")
    session_param = models.CharField(max_length=40, default="SESSION_ID")
    completion_code = models.CharField(max_length=40)
    screenout_code = models.CharField(max_length=40, blank=True)
    completion_url = models.URLField(default="https://app.prolific.com/submissions/complete", help_text="?cc=<code> is appended.")
    cap = models.PositiveIntegerField(default=100, validators=[MinValueValidator(1)], help_text="Participants this link may admit.")
    expires_at = models.DateTimeField()
    signing_secret = models.CharField(
        max_length=128, blank=True, help_text="When set, the link admits only a participant id signed with it (the sig parameter: hex HMAC-SHA256 of the id)."
    )
    # A bad batch of recruits shows first on the gold pairs: the link stops admitting new participants
    # when the gold accuracy of its most recent ones falls below the threshold (services.recruitment).
    gold_pause_below = models.FloatField(
        null=True, blank=True, validators=[MinValueValidator(0.0), MaxValueValidator(1.0)],
        help_text="Pause the link when gold accuracy of its recent participants is below this share (empty: never).",
    )  # fmt: skip
    gold_pause_window = models.PositiveSmallIntegerField(default=10, validators=[MinValueValidator(1)], help_text="How many of the most recent participants with gold answers count.")
    paused_at = models.DateTimeField(null=True, blank=True)
    pause_reason = models.CharField(max_length=300, blank=True)
    # Participants who joined before a resume do not pause the link again.
    resumed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"recruitment link {self.label or self.token[:6]} for {self.study}"


class ExternalParticipant(models.Model):
    """The account made for one claim of a participant id in one link's study. Only a keyed hash of the id is stored.

    The first claim is the id's account; a later claim without that account's resume code is a duplicate claim,
    an account of its own with the same hash, flagged for the researcher."""

    link = models.ForeignKey(RecruitmentLink, on_delete=models.CASCADE, related_name="participants")
    study = models.ForeignKey("annotation.Study", on_delete=models.CASCADE, related_name="+")
    participant_hash = models.CharField(max_length=64)
    resume_hash = models.CharField(max_length=64, blank=True, help_text="Keyed hash of the resume code shown at the first visit; resuming needs the code.")
    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="external_participant")
    platform_study_id = models.CharField(max_length=100, blank=True)
    platform_session_id = models.CharField(max_length=100, blank=True)
    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    screened_out_at = models.DateTimeField(null=True, blank=True)
    duplicate_claim = models.BooleanField(
        default=False, help_text="This participant id had already started the study and no resume code came with it: a separate account, never merged into the first."
    )
    entry_hash = models.CharField(
        max_length=64, blank=True, help_text="Keyed hash of the start form's one-time entry key: the same form sent twice finds this claim instead of making a second."
    )

    class Meta:
        # One first claim per participant id and study; later claims without the resume code are accounts of their own.
        constraints = [
            models.UniqueConstraint(fields=["study", "participant_hash"], condition=models.Q(duplicate_claim=False), name="one_first_claim_per_participant_per_study"),
            models.UniqueConstraint(fields=["link", "entry_hash"], condition=~models.Q(entry_hash=""), name="one_claim_per_start_form"),
        ]
