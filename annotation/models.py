"""The annotation data model: conditions -> clips -> pairs -> assignments -> judgments.

Every answer is stored in terms of the underlying clips, never of the screen
side, so answers from annotators who saw different sides can be compared.
"""

from __future__ import annotations

import secrets
import uuid
from decimal import Decimal

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import F, Q

from common.loudness import page_gain_db


class Modality(models.TextChoices):
    TEXT = "text", "Text"
    TEXT_LYRICS = "text+lyrics", "Text + lyrics"
    TEXT_REF = "text+ref", "Text + reference audio"
    TEXT_LYRICS_REF = "text+lyrics+ref", "Text + lyrics + reference audio"


class Dimension(models.TextChoices):
    ALIGNMENT = "alignment", "Instruction following"
    MUSICALITY = "musicality", "Musicality"


def modality_for(*, has_lyrics: bool, has_reference: bool) -> str:
    """CMI-RewardBench's modality rule: text is always implied; lyrics and reference add to it."""
    if has_lyrics and has_reference:
        return Modality.TEXT_LYRICS_REF
    if has_lyrics:
        return Modality.TEXT_LYRICS
    if has_reference:
        return Modality.TEXT_REF
    return Modality.TEXT


class Selection(models.TextChoices):
    """A study's order for regular pairs: the engine's seeded random order, or an active one."""

    RANDOM = "random", "Random (seeded per annotator)"
    UNCERTAINTY = "uncertainty", "Uncertainty: where the reward model is least sure"
    DISAGREEMENT = "disagreement", "Disagreement: where the judges disagree most"


class DimensionPasses(models.TextChoices):
    """Whether a pair's two questions are asked on one screen or one after the other (docs/listening.md)."""

    TOGETHER = "together", "Together: both questions on one screen"
    SEPARATE = "separate", "Separate screens: instruction following first, then musicality"


# The order the separate screens ask the dimensions in.
PASS_ORDER = ("alignment", "musicality")


class ScreeningKind(models.TextChoices):
    OFF = "off", "No screening"
    HUGGINS = "huggins", "Headphone check: Huggins pitch (Milne et al., 2021)"
    ANTIPHASE = "antiphase", "Headphone check: antiphase loudness (Woods et al., 2017)"


class ChosenBy(models.TextChoices):
    """How a pair came to an annotator, recorded on the assignment and copied to the judgment."""

    RANDOM = "random", "Random order"
    UNCERTAINTY = "uncertainty", "Active: reward-model uncertainty"
    DISAGREEMENT = "disagreement", "Active: judge disagreement"
    GOLD = "gold", "Gold/catch pool"
    IMPORT = "import", "Imported (not chosen here)"


class System(models.Model):
    """A generating system. Its name is never shown to annotators or to arena visitors before they vote."""

    name = models.CharField(max_length=120, unique=True)
    organisation = models.CharField(max_length=200, blank=True)
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


def clip_upload_to(instance: Clip, filename: str) -> str:
    # Content-addressed names: they reveal neither the system nor the original file name.
    return f"clips/{instance.sha256[:2]}/{instance.sha256}{instance.extension}"


class Clip(models.Model):
    class Kind(models.TextChoices):
        GENERATED = "generated", "Generated"
        REFERENCE = "reference", "Reference audio"
        DERIVED = "derived", "Degraded variant"

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    # The stored file is the import with its metadata stripped (see services/audio.py): `sha256`
    # names what is stored, served, exported and scored; `original_sha256` the file as it came in.
    sha256 = models.CharField(max_length=64, unique=True, help_text="Hash of the stored (metadata-free) file: one clip per distinct stored content.")
    original_sha256 = models.CharField(max_length=64, blank=True, db_index=True, help_text="Hash of the file as imported, before its tags were stripped.")
    file = models.FileField(upload_to=clip_upload_to, max_length=300)
    extension = models.CharField(max_length=10, default=".wav")
    kind = models.CharField(max_length=12, choices=Kind.choices, default=Kind.GENERATED)
    system = models.ForeignKey(System, null=True, blank=True, on_delete=models.PROTECT, related_name="clips")
    duration = models.FloatField(validators=[MinValueValidator(0.0)])
    sample_rate = models.PositiveIntegerField()
    channels = models.PositiveSmallIntegerField()
    # BS.1770 figures of the stored file, measured at ingest (common/loudness.py): study pages level
    # clips from them and the arena's style control uses them. Null: silence, under 400 ms, or not yet measured.
    loudness_lufs = models.FloatField(null=True, blank=True, help_text="Integrated loudness (BS.1770-4), LUFS.")
    true_peak_dbtp = models.FloatField(null=True, blank=True, help_text="True peak (4x oversampled), dBTP.")
    # Set once the file was measured (at ingest, or by `manage.py backfill_loudness`): it tells a clip
    # that has no figures because it is silent or shorter than 400 ms from one nobody measured yet.
    loudness_measured_at = models.DateTimeField(null=True, blank=True, help_text="When the figures above were measured; empty: never.")
    original_name = models.CharField(max_length=500, blank=True, help_text="Path at import time; never shown to annotators.")
    # Hard negatives: the clip they were built from and how (see scoring hard-negative builder).
    derived_from = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="variants")
    degradation = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.CheckConstraint(condition=Q(duration__gt=0), name="clip_duration_positive"),
            models.CheckConstraint(condition=Q(sample_rate__gt=0), name="clip_sample_rate_positive"),
            models.CheckConstraint(condition=Q(channels__gt=0), name="clip_channels_positive"),
        ]

    def __str__(self) -> str:
        return f"clip {self.sha256[:12]}"


class Condition(models.Model):
    """What the music was asked to be: a text prompt, lyrics and/or reference audio."""

    prompt = models.TextField(blank=True)
    lyrics = models.TextField(blank=True)
    reference = models.ForeignKey(Clip, null=True, blank=True, on_delete=models.PROTECT, related_name="conditions_as_reference")
    modality = models.CharField(max_length=20, choices=Modality.choices, editable=False)
    external_id = models.CharField(max_length=200, blank=True, help_text="`prompt id` in CMI-RewardBench files.")
    # sha256 of (prompt, lyrics, reference hash): one condition per distinct content.
    content_key = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return (self.prompt or self.lyrics or "reference only")[:60]

    def clean(self) -> None:
        if not (self.prompt.strip() or self.lyrics.strip() or self.reference_id):
            raise ValidationError("A condition needs at least one of: text prompt, lyrics, reference audio.")

    @property
    def has_lyrics(self) -> bool:
        return bool(self.lyrics.strip())

    @property
    def has_reference(self) -> bool:
        return self.reference_id is not None


class TriggerCounted(models.Model):
    """A model with columns the database's triggers keep (COUNTERS): saving an instance never writes them back.

    A full save() writes every column from the instance, which may have been read before
    the counters moved (an admin edit while annotators work); those columns are left out.
    """

    COUNTERS: tuple[str, ...] = ()

    class Meta:
        abstract = True

    def save(self, *args, **kwargs):
        if not self._state.adding and not kwargs.get("force_insert") and kwargs.get("update_fields") is None and not args:
            kwargs["update_fields"] = [field.name for field in self._meta.concrete_fields if not field.primary_key and field.name not in self.COUNTERS]
        super().save(*args, **kwargs)


class Study(TriggerCounted):
    COUNTERS = ("n_pairs", "n_special")

    name = models.SlugField(max_length=100, unique=True)
    title = models.CharField(max_length=200, blank=True)
    instructions = models.TextField(blank=True)
    overlap_target = models.PositiveSmallIntegerField(
        default=3, validators=[MinValueValidator(1), MaxValueValidator(50)], help_text="Votes wanted on an overlap pair."
    )
    overlap_share = models.FloatField(
        default=0.3,
        validators=[MinValueValidator(0.0), MaxValueValidator(1.0)],
        help_text="Share of pairs that get the overlap target (the rest get one vote).",
    )
    min_listen_seconds = models.FloatField(default=10.0, validators=[MinValueValidator(0.0)])
    rationale_min_length = models.PositiveIntegerField(default=0)
    lock_ttl_seconds = models.PositiveIntegerField(default=1800, validators=[MinValueValidator(10)])
    gold_rate = models.FloatField(default=0.0, validators=[MinValueValidator(0.0), MaxValueValidator(1.0)])
    annotator_target = models.PositiveIntegerField(default=0, help_text="Pairs each annotator is asked to judge; 0 = as many as are available.")
    selection = models.CharField(max_length=12, choices=Selection.choices, default=Selection.RANDOM)
    # Draws outside the share stay in the random order, so the votes keep an unbiased sample.
    active_share = models.FloatField(
        default=0.5,
        validators=[MinValueValidator(0.0), MaxValueValidator(1.0)],
        help_text="With an active selection: share of regular draws served in its order; the rest stay random.",
    )
    licence = models.CharField(max_length=100, default="CC BY-NC-SA 4.0")
    is_active = models.BooleanField(default=True)
    # The headphone screen before the first pair (annotation/screens/); off by default.
    screening = models.CharField(max_length=10, choices=ScreeningKind.choices, default=ScreeningKind.OFF)
    screening_trials = models.PositiveSmallIntegerField(default=6, validators=[MinValueValidator(1), MaxValueValidator(30)])
    screening_pass = models.PositiveSmallIntegerField(default=5, validators=[MinValueValidator(1), MaxValueValidator(30)], help_text="Correct answers needed to pass.")
    screening_retries = models.PositiveSmallIntegerField(default=1, validators=[MaxValueValidator(10)], help_text="Further attempts after a failed screen.")
    # When the screen was last turned on: members who judged pairs before then are asked to take it
    # only when the study says so (screening_existing_members).
    screening_since = models.DateTimeField(null=True, blank=True, editable=False)
    screening_existing_members = models.BooleanField(
        default=False, help_text="Also screen members who judged pairs here before the check was turned on (otherwise only new members take it)."
    )
    # Loudness-matched playback (docs/listening.md): each clip is played at the gain that brings its
    # measured loudness to the target, never lifting its true peak above -1 dBTP (common.loudness).
    loudness_match = models.BooleanField(
        default=True, help_text="Play every clip at the same loudness (BS.1770), so the louder clip does not win for being louder."
    )
    loudness_target_lufs = models.FloatField(
        default=-23.0,
        validators=[MinValueValidator(-40.0), MaxValueValidator(-10.0)],
        help_text="Loudness every clip is brought to, in LUFS; -23 is EBU R128's programme level.",
    )
    # When the loudness setting last changed after the first answer: answers from before it were heard at other
    # levels (the export says so).
    loudness_changed_at = models.DateTimeField(null=True, blank=True, editable=False)
    # Asking one dimension per screen keeps the first answer from being copied into the second (carry-over);
    # the report measures how far the second echoes the first either way (scoring/passes.py).
    dimension_passes = models.CharField(
        max_length=8,
        choices=DimensionPasses.choices,
        default=DimensionPasses.TOGETHER,
        help_text="Ask instruction following and musicality on one screen, or on two consecutive screens of the same pair.",
    )
    # Kept by database triggers on the pairs (migration 0012): the next-pair lookup reads them
    # instead of counting the study's pairs on every request.
    n_pairs = models.IntegerField(default=0, editable=False)
    n_special = models.IntegerField(default=0, editable=False, help_text="Gold and catch pairs.")
    annotators = models.ManyToManyField(settings.AUTH_USER_MODEL, through="StudyAnnotator", related_name="studies", blank=True)
    # The researcher who created it may import pairs into it; admins may import into any study.
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="owned_studies", help_text="May import pairs."
    )
    # Named by the owner: they may change the study as the owner does (selectors.study_writable_by).
    collaborators = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="collaborating_studies")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "studies"
        constraints = [models.CheckConstraint(condition=Q(screening_pass__lte=F("screening_trials")), name="study_screening_pass_within_trials")]

    def __str__(self) -> str:
        return self.title or self.name

    def clip_gain_db(self, clip: Clip | None) -> float:
        """The gain (dB, 0.1 dB steps) this study's pages play `clip` at: the one rule of common.loudness, 0 when the
        study does not match loudness or the clip has no measured loudness (not measured yet, silent, or under 400 ms)."""
        if clip is None or not self.loudness_match:
            return 0.0
        return page_gain_db(clip.loudness_lufs, clip.true_peak_dbtp, target_lufs=self.loudness_target_lufs)


class StudyAnnotator(TriggerCounted):
    """Membership; the seed makes each annotator's pair order random but reproducible."""

    COUNTERS = ("lock_version", "n_draws", "n_done")

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="memberships")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="study_memberships")
    seed = models.BigIntegerField()
    is_active = models.BooleanField(default=True)
    joined_at = models.DateTimeField(auto_now_add=True)
    # Bumped by a trigger (PostgreSQL) whenever a lock of this annotator in this study is
    # taken: the next-pair lookup compares it with its own snapshot to know it read
    # after the request it waited for (assignment.py).
    lock_version = models.IntegerField(default=0, editable=False)
    # Kept by database triggers (migration 0012): the annotator's locks ever taken in this study
    # (which seeds their draws) and their judgments in it, so `next` reads one row instead of
    # counting their whole history on every request.
    n_draws = models.IntegerField(default=0, editable=False)
    n_done = models.IntegerField(default=0, editable=False)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["study", "annotator"], name="unique_study_annotator")]

    def __str__(self) -> str:
        return f"{self.annotator} in {self.study}"


class AnnotatorProfile(models.Model):
    """Pseudonym, consent and withdrawal. Exports and analyses only ever use the pseudonym."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="annotator_profile")
    pseudonym = models.CharField(max_length=100, unique=True)
    is_imported = models.BooleanField(default=False, help_text="Created from a dataset's `user id`; cannot log in.")
    consent_version = models.CharField(max_length=40, blank=True)
    consented_at = models.DateTimeField(null=True, blank=True)
    withdrawn_at = models.DateTimeField(null=True, blank=True)
    excluded_at = models.DateTimeField(null=True, blank=True, help_text="Excluded from analysis and export by a researcher.")
    excluded_reason = models.TextField(blank=True)

    def __str__(self) -> str:
        return self.pseudonym

    @property
    def has_consented(self) -> bool:
        return self.consented_at is not None and self.withdrawn_at is None


ORDER_PRIME = 2_147_483_647  # 2**31 - 1


def random_order_key() -> int:
    return secrets.randbelow(ORDER_PRIME)


class Pair(TriggerCounted):
    COUNTERS = ("n_judgments", "n_live")

    class Split(models.TextChoices):
        TRAIN = "train", "Train"
        TEST = "test", "Test"

    class Kind(models.TextChoices):
        REGULAR = "regular", "Regular"
        GOLD = "gold", "Gold (known answer)"
        CATCH = "catch", "Catch trial (one clip degraded)"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="pairs")
    condition = models.ForeignKey(Condition, on_delete=models.PROTECT, related_name="pairs")
    clip_a = models.ForeignKey(Clip, on_delete=models.PROTECT, related_name="pairs_as_a")
    clip_b = models.ForeignKey(Clip, on_delete=models.PROTECT, related_name="pairs_as_b")
    # "<low id>-<high id>": makes (A, B) and (B, A) the same pair for uniqueness.
    clip_key = models.CharField(max_length=50, editable=False)
    split = models.CharField(max_length=5, choices=Split.choices, default=Split.TRAIN)
    kind = models.CharField(max_length=8, choices=Kind.choices, default=Kind.REGULAR)
    # For gold and catch pairs: the clip that must win (per dimension; blank = not checked).
    expected_alignment = models.ForeignKey(Clip, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    expected_musicality = models.ForeignKey(Clip, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    # For catch pairs: what makes the wrong answer wrong, so results can be told apart by kind
    # ({"kind": "noise", ...} for a signal fault, {"kind": "semantic", "attribute": ...} for another prompt's answer).
    catch_spec = models.JSONField(default=dict, blank=True)
    overlap = models.PositiveSmallIntegerField(default=1, validators=[MinValueValidator(1)], help_text="Votes wanted on this pair.")
    dataset_source = models.CharField(
        max_length=200, blank=True, help_text="`source` of the imported row that made the pair, as given; blank for pairs made here."
    )
    # Uniform in [0, ORDER_PRIME): untouched pairs are drawn from a seeded point on
    # this circle; partly filled ones in an affine permutation of it per annotator.
    order_key = models.BigIntegerField(default=random_order_key, editable=False)
    # Kept by database triggers (migration 0009) in the transaction of every write to
    # judgments and assignments, whichever code path makes it: judgments stored, and
    # assignments in the active state (a lock past its time still counts until the
    # engine marks it expired). The next-pair lookup reads room from these, not from
    # aggregates over judgments and assignments.
    n_judgments = models.IntegerField(default=0, editable=False)
    n_live = models.IntegerField(default=0, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        indexes = [
            models.Index(fields=["study", "kind"]),
            # The next-pair lookup's probe for the same content judged in any study.
            models.Index(fields=["condition", "clip_key"], name="pair_content"),
            models.Index(fields=["study", "order_key"]),
            # Only the pairs with room: the next-pair lookup is a range scan over these.
            models.Index(fields=["study", "order_key"], condition=Q(n_judgments__lt=F("overlap") - F("n_live")), name="pair_open_order"),
            # The few overlap pairs that hold votes or locks and still have room: filled first.
            models.Index(
                fields=["study"],
                condition=Q(n_judgments__lt=F("overlap") - F("n_live"), overlap__gt=1) & (Q(n_judgments__gt=0) | Q(n_live__gt=0)),
                name="pair_partly_filled",
            ),
        ]
        constraints = [
            models.CheckConstraint(condition=~Q(clip_a=F("clip_b")), name="pair_clips_distinct"),
            models.UniqueConstraint(fields=["study", "condition", "clip_key"], name="unique_pair_per_study"),
            models.CheckConstraint(condition=Q(overlap__gte=1), name="pair_overlap_positive"),
        ]

    def __str__(self) -> str:
        return f"pair {self.pk} ({self.study.name})"

    @staticmethod
    def key_for(clip_a_id: int, clip_b_id: int) -> str:
        low, high = sorted((clip_a_id, clip_b_id))
        return f"{low}-{high}"

    def clean(self) -> None:
        if self.clip_a_id and self.clip_a_id == self.clip_b_id:
            raise ValidationError("A pair needs two distinct clips.")
        for field in ("expected_alignment_id", "expected_musicality_id"):
            value = getattr(self, field)
            if value is not None and value not in (self.clip_a_id, self.clip_b_id):
                raise ValidationError("An expected answer must be one of the pair's clips.")

    def other_clip_id(self, clip_id: int) -> int:
        return self.clip_b_id if clip_id == self.clip_a_id else self.clip_a_id


class PairPriority(models.Model):
    """How much an active order wants a pair annotated next (higher first).

    Written by whatever computes it (the scoring app: reward-model uncertainty, judge
    disagreement); read by the assignment engine, which knows nothing about how it was made.
    """

    pair = models.ForeignKey(Pair, on_delete=models.CASCADE, related_name="priorities")
    mode = models.CharField(max_length=12, choices=[c for c in Selection.choices if c[0] != Selection.RANDOM])
    value = models.FloatField()
    source = models.CharField(max_length=200, blank=True, help_text="What computed it (a reward model's key, the judges compared).")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["pair", "mode"], name="one_priority_per_pair_mode")]
        indexes = [models.Index(fields=["mode", "value"])]

    def __str__(self) -> str:
        return f"{self.mode} {self.value:.3f} for pair {self.pair_id}"


class Assignment(models.Model):
    class State(models.TextChoices):
        ACTIVE = "active", "Locked to the annotator"
        SUBMITTED = "submitted", "Judgment submitted"
        SKIPPED = "skipped", "Skipped"
        EXPIRED = "expired", "Lock expired"

    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="assignments")
    pair = models.ForeignKey(Pair, on_delete=models.CASCADE, related_name="assignments")
    a_clip = models.ForeignKey(Clip, on_delete=models.PROTECT, related_name="+", help_text="The clip shown as A.")
    state = models.CharField(max_length=10, choices=State.choices, default=State.ACTIVE)
    served_at = models.DateTimeField()
    lock_expires_at = models.DateTimeField()
    skip_reason = models.TextField(blank=True)
    # The server's own listening record so far (common.listening.evidence), refreshed by
    # every events post, and the highest event number received (later ones must be higher).
    listening = models.JSONField(default=dict, blank=True)
    listening_seq = models.PositiveBigIntegerField(default=0)
    selection = models.CharField(max_length=12, choices=ChosenBy.choices, default=ChosenBy.RANDOM)
    # With separate screens: the first dimension's answer, held here until the second one makes the judgment
    # (annotation/services/passes.py); empty otherwise.
    first_pass = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["annotator", "pair"], name="unique_assignment_per_annotator_pair")]
        indexes = [
            models.Index(fields=["pair", "state", "lock_expires_at"]),
            models.Index(fields=["annotator", "state"]),
            # The sweep that releases lapsed locks looks only at active ones.
            models.Index(fields=["lock_expires_at"], condition=Q(state="active"), name="assignment_live_expiry"),
        ]

    def __str__(self) -> str:
        return f"{self.annotator} -> {self.pair} ({self.state})"

    @property
    def b_clip_id(self) -> int:
        return self.pair.other_clip_id(self.a_clip_id)


CONFIDENCE_VALIDATORS = [MinValueValidator(Decimal("1.0")), MaxValueValidator(Decimal("5.0"))]


class Judgment(models.Model):
    class Source(models.TextChoices):
        PLATFORM = "platform", "Annotated here"
        IMPORT = "import", "Imported"
        # The demo's seeded answers (annotation/demo/votes.py): no one listened; left out of exports and reports unless asked for.
        SEEDED = "seeded", "Seeded demo data"

    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="judgments")
    pair = models.ForeignKey(Pair, on_delete=models.CASCADE, related_name="judgments")
    assignment = models.OneToOneField(Assignment, null=True, blank=True, on_delete=models.SET_NULL, related_name="judgment")
    class Tie(models.TextChoices):
        # CMI-RewardBench labels that name no single clip; its evaluator scores either as 0.5.
        BOTH = "both", "Both"
        NEITHER = "neither", "Neither"

    a_clip = models.ForeignKey(Clip, on_delete=models.PROTECT, related_name="+", help_text="The clip that was shown as A.")
    # Per dimension: the preferred clip, or (imported votes only) a tie label and no clip.
    alignment_choice = models.ForeignKey(Clip, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    alignment_tie = models.CharField(max_length=7, choices=Tie.choices, blank=True, help_text="both / neither when no single clip was preferred.")
    alignment_confidence = models.DecimalField(max_digits=2, decimal_places=1, validators=CONFIDENCE_VALIDATORS)
    musicality_choice = models.ForeignKey(Clip, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    musicality_tie = models.CharField(max_length=7, choices=Tie.choices, blank=True, help_text="both / neither when no single clip was preferred.")
    musicality_confidence = models.DecimalField(max_digits=2, decimal_places=1, validators=CONFIDENCE_VALIDATORS)
    rationale = models.TextField(blank=True)
    # Imported votes: the row's prompt / lyrics exactly as the file gave them, where they differ
    # from the (whitespace-deduplicated) condition's, so an export gives back the same bytes.
    source_text = models.JSONField(default=dict, blank=True)
    # Sides as shown, see a_clip. On the platform: the server's record the submit was checked
    # against, {"source": "server", "A": {"seconds", "played_seconds", "served_seconds", "plays",
    # "seeks"}, "B": {...}, "switches", "events", "client": the page's own log}; its events are
    # the assignment's ListeningEvent rows.
    listening_log = models.JSONField(default=dict, blank=True)
    time_on_page_ms = models.PositiveIntegerField(null=True, blank=True)
    idempotency_key = models.CharField(max_length=100, null=True, blank=True, unique=True)
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.PLATFORM)
    # Provenance for the export: an imported row's own `source` label, as given (blank: cast here).
    dataset_source = models.CharField(max_length=200, blank=True, help_text="`source` of the imported row, as given; blank for votes cast here.")
    selection = models.CharField(max_length=12, choices=ChosenBy.choices, default=ChosenBy.RANDOM, help_text="How the pair was chosen for the annotator.")
    # Answered on separate screens: {"order": [dimensions as asked], "steps": [{"dimension", "answered_at", ...}]};
    # empty when both were asked on one screen (or imported).
    passes = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["annotator", "pair"], name="one_judgment_per_annotator_pair"),
            models.CheckConstraint(
                condition=Q(alignment_confidence__gte=Decimal("1.0"), alignment_confidence__lte=Decimal("5.0")),
                name="judgment_alignment_confidence_range",
            ),
            models.CheckConstraint(
                condition=Q(musicality_confidence__gte=Decimal("1.0"), musicality_confidence__lte=Decimal("5.0")),
                name="judgment_musicality_confidence_range",
            ),
            *(
                models.CheckConstraint(
                    condition=Q(**{f"{dim}_choice__isnull": False, f"{dim}_tie": ""}) | Q(**{f"{dim}_choice__isnull": True, f"{dim}_tie__in": ["both", "neither"]}),
                    name=f"judgment_{dim}_clip_or_tie",
                )
                for dim in ("alignment", "musicality")
            ),
        ]
        indexes = [models.Index(fields=["pair", "created_at"])]

    def __str__(self) -> str:
        return f"judgment {self.pk} by {self.annotator} on {self.pair_id}"

    def clean(self) -> None:
        allowed = {self.pair.clip_a_id, self.pair.clip_b_id}
        if self.a_clip_id not in allowed:
            raise ValidationError("The clip shown as A must be one of the pair's two clips.")
        for dim in ("alignment", "musicality"):
            choice, tie = getattr(self, f"{dim}_choice_id"), getattr(self, f"{dim}_tie")
            if (choice is None) == (not tie) or (choice is not None and choice not in allowed):
                raise ValidationError("Each choice must be one of the pair's two clips, or (imported votes) both / neither.")
        for value in (self.alignment_confidence, self.musicality_confidence):
            if value is not None and (value * 2) % 1 != 0:
                raise ValidationError("Confidence moves in half steps (1.0, 1.5, ... 5.0).")


class ListeningEvent(models.Model):
    """One play / pause / seek / switch / tick / ended reported by the listening page, as the server received it."""

    class Kind(models.TextChoices):
        PLAY = "play", "Play"
        PAUSE = "pause", "Pause"
        SEEK = "seek", "Seek"
        SWITCH = "switch", "Switch to the other clip"
        TICK = "tick", "Still playing"
        ENDED = "ended", "Ended"

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="listening_events")
    seq = models.PositiveBigIntegerField(help_text="The page's event number; grows per assignment, so a replay is ignored.")
    side = models.CharField(max_length=1, choices=[("A", "A"), ("B", "B")], help_text="As shown; see the assignment's a_clip.")
    kind = models.CharField(max_length=6, choices=Kind.choices)
    # Listening is measured by server arrival time; the page's clock and position are kept for the record.
    server_time = models.DateTimeField()
    client_time = models.FloatField(null=True, blank=True, help_text="Page clock, ms since page load.")
    position = models.FloatField(null=True, blank=True, help_text="Media position in seconds.")

    class Meta:
        ordering = ["server_time", "seq"]
        constraints = [models.UniqueConstraint(fields=["assignment", "seq"], name="unique_listening_event_seq")]


class AudioFetch(models.Model):
    """Bytes of a clip the audio endpoint sent to a user: no clip can be heard that was never sent."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    clip = models.ForeignKey(Clip, on_delete=models.CASCADE, related_name="+")
    first_byte = models.PositiveBigIntegerField()
    last_byte = models.PositiveBigIntegerField()
    total_bytes = models.PositiveBigIntegerField()
    served_at = models.DateTimeField()
    # The name the bytes went out under, where a page's credit is per URL rather than per clip: a rating page's
    # letter is "rating:<assignment>:<letter>" (annotation.ratings.selectors.served_name), so fetching the open
    # reference, or the same clip under its own URL, credits no letter. Empty for a clip's own URL.
    served_as = models.CharField(max_length=40, blank=True, default="")

    class Meta:
        ordering = ["served_at", "id"]
        indexes = [models.Index(fields=["user", "clip"]), models.Index(fields=["user", "served_as"], name="audio_fetch_user_served_as")]


class AudioReceipt(models.Model):
    """A client's proof that it received the bytes of one audio response (common/audio_proof.py): only fetches with one count as heard."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    clip = models.ForeignKey(Clip, on_delete=models.CASCADE, related_name="+")
    first_byte = models.PositiveBigIntegerField()
    last_byte = models.PositiveBigIntegerField()
    received_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "clip", "first_byte", "last_byte"], name="audio_receipt_once")]


class StudyExport(models.Model):
    """A study's dataset archive, built by a worker (services/exports.py) and offered for download.

    The row carries the progress the study page polls; the archive lives under MEDIA_ROOT/exports/,
    which no URL serves directly: the download view checks who asks.
    """

    class State(models.TextChoices):
        PENDING = "pending", "Waiting for a worker"
        RUNNING = "running", "Building"
        DONE = "done", "Ready"
        FAILED = "failed", "Failed"

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="exports")
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    options = models.JSONField(default=dict, help_text="The export's options as the form gave them.")
    state = models.CharField(max_length=8, choices=State.choices, default=State.PENDING)
    step = models.CharField(max_length=40, blank=True)
    done = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0)
    message = models.TextField(blank=True, help_text="The export's summary, or why it failed.")
    size_bytes = models.PositiveBigIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["study", "requested_by", "-created_at"], name="study_export_recent")]


# Adjudication of disputed pairs, and crowd quality (screening, practice, recruitment), live in modules of their own;
# imported here so Django registers them.
from .adjudication_models import Adjudication, StudyAdjudicator  # noqa: E402, F401
from .crowd_models import (  # noqa: E402, F401
    ExternalParticipant,
    PracticeAnswer,
    PracticeItem,
    RecruitmentLink,
    ScreeningAttempt,
)

# Questionnaires before and after a study; imported here so Django registers them.
from .questionnaire_models import Questionnaire, QuestionnaireResponse  # noqa: E402, F401
from .prolific_models import ProlificBonus, ProlificCall, ProlificCredential, ProlificStudyTie, ProlificSubmission  # noqa: E402, F401
