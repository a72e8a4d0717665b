"""Absolute ratings: a study's rating task, the items it rates, their locks and the ratings given.

A study with a RatingTask row collects ratings instead of pairwise votes:

- `acr`: one clip per item, rated 1-5 per dimension with ITU-T P.808's category labels;
- `multi`: the clips of one condition on one page (MUSHRA-style, ITU-R BS.1534-3), each rated
  0-100 per dimension, with an optional hidden reference and low anchor among them.

Ratings are stored per clip and dimension, never per screen position: the order and letters an
annotator saw are kept on the assignment, so answers from annotators who saw different orders
compare directly.
"""

from __future__ import annotations

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import F, Q

from annotation.models import Assignment, ChosenBy, Clip, Condition, Dimension, Study, random_order_key


class TaskType(models.TextChoices):
    PAIRWISE = "pairwise", "Pairwise (two clips, preference and confidence)"
    ACR = "acr", "ACR: one clip, 1-5 per dimension (ITU-T P.808)"
    MULTI = "multi", "Multi-stimulus: a condition's clips on one page, 0-100 each (MUSHRA-style)"


# ITU-T P.808 (ACR, clause 6.1) category labels, best first.
ACR_LABELS = {5: "Excellent", 4: "Good", 3: "Fair", 2: "Poor", 1: "Bad"}
# ITU-R BS.1534-3's continuous quality scale: five equal bands of 0-100, labelled as ACR's.
MULTI_BANDS = ((80, "Excellent"), (60, "Good"), (40, "Fair"), (20, "Poor"), (0, "Bad"))
MAX_MULTI_CLIPS = 12
LABELS = tuple("ABCDEFGHIJKL")[:MAX_MULTI_CLIPS]


def task_scale(task: str) -> tuple[int, int]:
    """The lowest and highest rating a task type takes: ACR's five categories, or the multi-stimulus 0-100 slider."""
    return (1, 5) if task == TaskType.ACR else (0, 100)


class RatingTask(models.Model):
    """Makes a study a rating study; a study without one collects pairwise votes (today's task)."""

    study = models.OneToOneField(Study, on_delete=models.CASCADE, related_name="rating_task")
    task = models.CharField(max_length=8, choices=[c for c in TaskType.choices if c[0] != TaskType.PAIRWISE])
    dimensions = models.JSONField(default=list, help_text='Dimensions asked, in order: any of "musicality", "alignment".')
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.task} task of {self.study}"

    @property
    def scale(self) -> tuple[int, int]:
        return task_scale(self.task)


class RatingItem(models.Model):
    """What one assignment rates: one clip (acr) or one condition's set of clips (multi)."""

    class Kind(models.TextChoices):
        REGULAR = "regular", "Regular"
        # P.808 gold: a clip with a known rating range. Trap: a clip whose own audio asks for a
        # given answer (P.808's trapping question). Both are checked against `expected`.
        GOLD = "gold", "Gold (known rating range)"
        TRAP = "trap", "Trapping question"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="rating_items")
    condition = models.ForeignKey(Condition, on_delete=models.PROTECT, related_name="rating_items")
    kind = models.CharField(max_length=8, choices=Kind.choices, default=Kind.REGULAR)
    # Gold and trap: {"<clip id>": {"<dimension>": [low, high]}}; a rating outside fails the check.
    expected = models.JSONField(default=dict, blank=True)
    overlap = models.PositiveSmallIntegerField(default=1, validators=[MinValueValidator(1), MaxValueValidator(50)])
    # "<id>-<id>-...": the clips' ids in ascending order; one item per content in a study.
    clip_key = models.CharField(max_length=200, editable=False)
    order_key = models.BigIntegerField(default=random_order_key, editable=False)
    # Kept by the services in the transaction of every lock, submit, skip and expiry, under the
    # item's row lock (services.py): ratings stored and live locks.
    n_ratings = models.IntegerField(default=0, editable=False)
    n_live = models.IntegerField(default=0, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["study", "kind", "order_key"])]
        constraints = [
            models.UniqueConstraint(fields=["study", "condition", "clip_key"], name="unique_rating_item_per_study"),
            models.CheckConstraint(condition=Q(n_ratings__gte=0, n_live__gte=0), name="rating_item_counters_positive"),
            models.CheckConstraint(condition=Q(n_ratings__lte=F("overlap") - F("n_live")), name="rating_item_never_over_assigned"),
        ]

    def __str__(self) -> str:
        return f"rating item {self.pk} ({self.study.name})"


class RatingItemClip(models.Model):
    class Role(models.TextChoices):
        TEST = "test", "Rated clip"
        # BS.1534-3: the unprocessed original, hidden among the clips, and a deliberately poor version.
        REFERENCE = "reference", "Hidden reference"
        ANCHOR = "anchor", "Low anchor"

    item = models.ForeignKey(RatingItem, on_delete=models.CASCADE, related_name="item_clips")
    clip = models.ForeignKey(Clip, on_delete=models.PROTECT, related_name="rating_item_clips")
    role = models.CharField(max_length=9, choices=Role.choices, default=Role.TEST)

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["item", "clip"], name="unique_clip_per_rating_item")]


class RatingAssignment(models.Model):
    State = Assignment.State

    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="rating_assignments")
    item = models.ForeignKey(RatingItem, on_delete=models.CASCADE, related_name="assignments")
    state = models.CharField(max_length=10, choices=Assignment.State.choices, default=Assignment.State.ACTIVE)
    served_at = models.DateTimeField()
    lock_expires_at = models.DateTimeField()
    # The clip ids in the order shown: the i-th is labelled LABELS[i]. Drawn from the annotator's seed.
    order = models.JSONField(default=list)
    skip_reason = models.TextField(blank=True)
    # The server's listening record per label (common.listening.evidence) and the last event number.
    listening = models.JSONField(default=dict, blank=True)
    listening_seq = models.PositiveBigIntegerField(default=0)
    selection = models.CharField(max_length=12, choices=ChosenBy.choices, default=ChosenBy.RANDOM)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["annotator", "item"], name="unique_rating_assignment_per_annotator_item")]
        indexes = [models.Index(fields=["annotator", "state"]), models.Index(fields=["item", "state"])]

    def __str__(self) -> str:
        return f"{self.annotator} -> {self.item} ({self.state})"

    @property
    def labels(self) -> dict[str, int]:
        return dict(zip(LABELS, self.order))


class RatingListeningEvent(models.Model):
    """One event of the rating page, as the server received it (the pairwise page's ListeningEvent, per label)."""

    assignment = models.ForeignKey(RatingAssignment, on_delete=models.CASCADE, related_name="listening_events")
    seq = models.PositiveBigIntegerField()
    side = models.CharField(max_length=2)
    kind = models.CharField(max_length=6)
    server_time = models.DateTimeField()
    client_time = models.FloatField(null=True, blank=True)
    position = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["server_time", "seq"]
        constraints = [models.UniqueConstraint(fields=["assignment", "seq"], name="unique_rating_listening_event_seq")]


class RatingSubmission(models.Model):
    """One annotator's answer on one item: the ratings of its clips, a rationale, the listening it was checked against."""

    class Source(models.TextChoices):
        PLATFORM = "platform", "Rated here"
        IMPORT = "import", "Imported"
        SEEDED = "seeded", "Seeded demo data"

    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="rating_submissions")
    item = models.ForeignKey(RatingItem, on_delete=models.CASCADE, related_name="submissions")
    assignment = models.OneToOneField(RatingAssignment, null=True, blank=True, on_delete=models.SET_NULL, related_name="submission")
    rationale = models.TextField(blank=True)
    listening_log = models.JSONField(default=dict, blank=True)
    time_on_page_ms = models.PositiveIntegerField(null=True, blank=True)
    idempotency_key = models.CharField(max_length=100, null=True, blank=True, unique=True)
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.PLATFORM)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["annotator", "item"], name="one_rating_submission_per_annotator_item")]


class Rating(models.Model):
    submission = models.ForeignKey(RatingSubmission, on_delete=models.CASCADE, related_name="ratings")
    clip = models.ForeignKey(Clip, on_delete=models.PROTECT, related_name="ratings")
    dimension = models.CharField(max_length=12, choices=Dimension.choices)
    value = models.FloatField(validators=[MinValueValidator(0.0), MaxValueValidator(100.0)])
    # 0-based place on the page (its letter is LABELS[position]); None for imported rows.
    position = models.PositiveSmallIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["submission", "clip", "dimension"], name="one_rating_per_clip_dimension"),
            models.CheckConstraint(condition=Q(value__gte=0, value__lte=100), name="rating_value_range"),
        ]
