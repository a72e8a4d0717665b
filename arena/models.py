"""The arena data model: systems registry, visitors, prompts, battles, listening events, votes.

A battle's system identities live only in the database and in the release;
nothing derived from them is sent to the visitor before the vote.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import F, Q

from annotation.models import Clip, System


class AdapterKind(models.TextChoices):
    DEMO = "demo", "Built-in procedural demo"
    CATALOG = "catalog", "Pre-generated catalog"
    HTTP = "http", "HTTP generation server"
    TRANSFORMERS = "transformers", "In-process transformers model (GPU worker)"


class Health(models.TextChoices):
    UNKNOWN = "unknown", "Not checked yet"
    HEALTHY = "healthy", "Healthy"
    UNHEALTHY = "unhealthy", "Unhealthy (out of the sampling pool)"


class ArenaSystem(models.Model):
    """A system taking part in the arena: capabilities, sampling weight, adapter and health."""

    system = models.OneToOneField(System, on_delete=models.PROTECT, related_name="arena")
    supports_vocals = models.BooleanField(default=False, help_text="Sings given lyrics / vocal prompts.")
    supports_instrumental = models.BooleanField(default=True, help_text="Can be trusted to stay instrumental on instrumental prompts.")
    supports_reference_audio = models.BooleanField(default=False)
    max_duration_seconds = models.FloatField(default=30.0, validators=[MinValueValidator(1.0)])
    weight = models.FloatField(default=1.0, validators=[MinValueValidator(0.0)], help_text="Relative sampling weight; 0 keeps it out of new battles.")
    is_active = models.BooleanField(default=True)
    is_private = models.BooleanField(
        default=False, help_text="Pre-release system: sampled and its votes kept, hidden from the public board, disclosed in the release."
    )
    # What the board and the release say about the system (its organisation is System.organisation).
    licence = models.CharField(max_length=100, blank=True, help_text="The licence of the model or its outputs, e.g. CC-BY-NC-4.0, MIT, proprietary.")
    training_data = models.CharField(max_length=300, blank=True, help_text="What it was trained on, in a line (a dataset name, 'licensed stock music', 'undisclosed').")
    open_weights = models.BooleanField(null=True, blank=True, help_text="Weights published (yes), not (no), or unknown (empty).")
    withhold_audio = models.BooleanField(
        default=False, help_text="Leave this system's clips out of public releases: its battles and votes are still published, with no audio file."
    )
    adapter_kind = models.CharField(max_length=16, choices=AdapterKind.choices, default=AdapterKind.DEMO)
    adapter_config = models.JSONField(default=dict, blank=True)
    health = models.CharField(max_length=10, choices=Health.choices, default=Health.UNKNOWN)
    health_detail = models.CharField(max_length=500, blank=True)
    health_checked_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["system__name"]
        constraints = [models.CheckConstraint(condition=Q(weight__gte=0), name="arena_system_weight_nonnegative")]

    def __str__(self) -> str:
        return self.system.name

    @property
    def name(self) -> str:
        return self.system.name


class CatalogClip(models.Model):
    """A pre-generated clip a catalog system serves for one prompt (matched by normalised prompt text)."""

    arena_system = models.ForeignKey(ArenaSystem, on_delete=models.CASCADE, related_name="catalog")
    prompt_key = models.CharField(max_length=64, db_index=True)
    prompt = models.TextField()
    lyrics = models.TextField(blank=True)
    clip = models.ForeignKey(Clip, on_delete=models.PROTECT, related_name="+")
    generation_seconds = models.FloatField(null=True, blank=True)
    # The file as imported, before the arena levelled it: a catalog battle side's style covariates.
    loudness_lufs = models.FloatField(null=True, blank=True)
    true_peak_dbtp = models.FloatField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["arena_system", "prompt_key", "clip"], name="unique_catalog_clip")]


class ArenaPrompt(models.Model):
    """The prebaked pool visitors can draw a random prompt from."""

    text = models.TextField()
    lyrics = models.TextField(blank=True)
    prompt_key = models.CharField(max_length=64, unique=True)
    is_prebaked = models.BooleanField(default=True)
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return self.text[:60]


class Visitor(models.Model):
    """An anonymous visitor, known by a random cookie; only hashes of it are stored."""

    cookie_hash = models.CharField(max_length=64, unique=True)
    pseudonym = models.CharField(max_length=40, unique=True, help_text="Salted hash published as user_id in the release.")
    terms_version = models.CharField(max_length=20, blank=True)
    terms_accepted_at = models.DateTimeField(null=True, blank=True)
    is_banned = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.pseudonym


class Battle(models.Model):
    class Status(models.TextChoices):
        GENERATING = "generating", "Generating"
        READY = "ready", "Ready to listen"
        VOTED = "voted", "Voted"
        FAILED = "failed", "Generation failed"

    class Side(models.TextChoices):
        A = "a", "A"
        B = "b", "B"

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    visitor = models.ForeignKey(Visitor, on_delete=models.PROTECT, related_name="battles")
    ip_hash = models.CharField(max_length=64, blank=True)
    prompt = models.TextField()
    lyrics = models.TextField(blank=True)
    is_prebaked = models.BooleanField(default=False)
    is_instrumental = models.BooleanField(default=True)
    duration_requested = models.FloatField()
    seed = models.BigIntegerField()
    system_a = models.ForeignKey(ArenaSystem, on_delete=models.PROTECT, related_name="+")
    system_b = models.ForeignKey(ArenaSystem, on_delete=models.PROTECT, related_name="+")
    clip_a = models.ForeignKey(Clip, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    clip_b = models.ForeignKey(Clip, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    generation_seconds_a = models.FloatField(null=True, blank=True)
    generation_seconds_b = models.FloatField(null=True, blank=True)
    # Each side's clip as the system generated it, before the arena levelled it (common/loudness.py):
    # the style covariates of the board (arena/style.py). Null when it could not be measured.
    loudness_lufs_a = models.FloatField(null=True, blank=True, help_text="Integrated loudness of clip A as generated (BS.1770-4), LUFS.")
    loudness_lufs_b = models.FloatField(null=True, blank=True, help_text="Integrated loudness of clip B as generated, LUFS.")
    true_peak_a = models.FloatField(null=True, blank=True, help_text="True peak of clip A as generated, dBTP.")
    true_peak_b = models.FloatField(null=True, blank=True, help_text="True peak of clip B as generated, dBTP.")
    vocals_a = models.BooleanField(null=True, blank=True, help_text="Clip A has vocals (the adapter's report, else the battle's route and the system's capability).")
    vocals_b = models.BooleanField(null=True, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.GENERATING)
    error = models.CharField(max_length=500, blank=True, help_text="Operator-facing; never shown to the visitor (it could name a system).")
    moderation = models.JSONField(default=dict, blank=True)
    # How the two systems were drawn (arena.sampling) and the probability of that pair, for unbiased refits.
    sampling_policy = models.CharField(max_length=12, blank=True)
    sampling_probability = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    ready_at = models.DateTimeField(null=True, blank=True)
    # The server's listening record so far (common.listening.evidence), refreshed by every
    # events post, and the highest event number received (later ones must be higher).
    listening = models.JSONField(default=dict, blank=True)
    listen_seq = models.PositiveBigIntegerField(default=0)

    class Meta:
        ordering = ["-id"]
        constraints = [models.CheckConstraint(condition=~Q(system_a=F("system_b")), name="battle_systems_distinct")]
        indexes = [models.Index(fields=["visitor", "created_at"]), models.Index(fields=["status"])]

    def __str__(self) -> str:
        return f"battle {self.public_id}"

    def system_for(self, side: str) -> ArenaSystem:
        return self.system_a if side == "a" else self.system_b

    def clip_for(self, side: str) -> Clip | None:
        return self.clip_a if side == "a" else self.clip_b


class ListenEvent(models.Model):
    class Kind(models.TextChoices):
        PLAY = "play", "Play"
        PAUSE = "pause", "Pause"
        SEEK = "seek", "Seek"
        SWITCH = "switch", "Switch to the other clip"
        TICK = "tick", "Still playing"
        ENDED = "ended", "Ended"

    battle = models.ForeignKey(Battle, on_delete=models.CASCADE, related_name="listen_events")
    # The page's event number, growing per battle, so a replayed event is ignored (null on events from before numbering).
    seq = models.PositiveBigIntegerField(null=True, blank=True)
    side = models.CharField(max_length=1, choices=Battle.Side.choices)
    kind = models.CharField(max_length=6, choices=Kind.choices)
    # Server arrival time is what listening is measured by; the client's clock and
    # media position are kept for the release only.
    server_time = models.DateTimeField()
    client_time = models.FloatField(null=True, blank=True, help_text="Client clock, ms since page load.")
    position = models.FloatField(null=True, blank=True, help_text="Media position in seconds.")

    class Meta:
        ordering = ["server_time", "id"]
        indexes = [models.Index(fields=["battle", "side", "server_time"])]
        constraints = [models.UniqueConstraint(fields=["battle", "seq"], condition=Q(seq__isnull=False), name="unique_listen_event_seq")]


class BattleAudioFetch(models.Model):
    """Bytes of a battle side's audio sent to its visitor: no clip can be heard that was never sent."""

    battle = models.ForeignKey(Battle, on_delete=models.CASCADE, related_name="audio_fetches")
    side = models.CharField(max_length=1, choices=Battle.Side.choices)
    first_byte = models.PositiveBigIntegerField()
    last_byte = models.PositiveBigIntegerField()
    total_bytes = models.PositiveBigIntegerField()
    served_at = models.DateTimeField()

    class Meta:
        ordering = ["served_at", "id"]


class BattleAudioReceipt(models.Model):
    """The visitor's proof of receiving one response of a battle side (common/audio_proof.py): only fetches with one count
    as heard, so a client that read the headers and left is credited nothing."""

    battle = models.ForeignKey(Battle, on_delete=models.CASCADE, related_name="audio_receipts")
    side = models.CharField(max_length=1, choices=Battle.Side.choices)
    first_byte = models.PositiveBigIntegerField()
    last_byte = models.PositiveBigIntegerField()
    received_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["battle", "side", "first_byte", "last_byte"], name="one_arena_receipt_per_range")]


class Vote(models.Model):
    class Choice(models.TextChoices):
        A = "a", "A is better"
        B = "b", "B is better"
        TIE = "tie", "Tie"
        BOTH_BAD = "both_bad", "Both are bad"

    class Source(models.TextChoices):
        VISITOR = "visitor", "Visitor"
        # Cast by seed_arena (arena/seed_votes.py) so a fresh demo's board is not empty; no one listened.
        SEEDED = "seeded", "Seeded demo data"

    battle = models.OneToOneField(Battle, on_delete=models.CASCADE, related_name="vote")
    visitor = models.ForeignKey(Visitor, on_delete=models.PROTECT, related_name="votes")
    choice = models.CharField(max_length=8, choices=Choice.choices)
    feedback = models.TextField(blank=True)
    listen_seconds_a = models.FloatField()
    listen_seconds_b = models.FloatField()
    ip_hash = models.CharField(max_length=64, blank=True)
    # Set by the page per vote: a retried request with the same key gets the stored vote back.
    idempotency_key = models.CharField(max_length=100, blank=True)
    source = models.CharField(max_length=8, choices=Source.choices, default=Source.VISITOR, db_index=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["battle", "visitor"], name="one_vote_per_battle_visitor")]
        indexes = [models.Index(fields=["visitor", "created_at"])]


class RejectedVote(models.Model):
    """Every refused vote attempt (re-vote, not listened, rate limited...), kept for abuse analysis."""

    battle = models.ForeignKey(Battle, null=True, blank=True, on_delete=models.CASCADE, related_name="rejected_votes")
    visitor = models.ForeignKey(Visitor, null=True, blank=True, on_delete=models.SET_NULL, related_name="rejected_votes")
    choice = models.CharField(max_length=20, blank=True)
    reason = models.CharField(max_length=40)
    ip_hash = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-id"]


class LeaderboardSnapshot(models.Model):
    """The latest computed boards; pages read this instead of refitting."""

    computed_at = models.DateTimeField(auto_now_add=True)
    votes = models.PositiveIntegerField()
    payload = models.JSONField()

    class Meta:
        ordering = ["-id"]
        get_latest_by = "id"


class BoardSnapshot(models.Model):
    """Every board as it stood at a moment (votes cast before `cutoff`): one per month, and any taken on demand; the rating-over-time view reads these."""

    class Kind(models.TextChoices):
        MONTHLY = "monthly", "End of a month"
        ON_DEMAND = "on_demand", "On demand"

    kind = models.CharField(max_length=10, choices=Kind.choices)
    # YYYY-MM for a monthly snapshot (the month whose end is the cutoff); empty on demand.
    period = models.CharField(max_length=7, blank=True)
    cutoff = models.DateTimeField(help_text="Votes cast before this instant are on the boards.")
    votes = models.PositiveIntegerField()
    payload = models.JSONField()
    computed_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["cutoff", "id"]
        constraints = [models.UniqueConstraint(fields=["period"], condition=Q(kind="monthly"), name="one_snapshot_per_month")]

    def __str__(self) -> str:
        return f"boards at {self.period or self.cutoff.isoformat()}"


class ReleaseBuild(models.Model):
    """One build of the public battle log (arena/release.py) into a zip for download, made by a worker."""

    class State(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    stage = models.CharField(max_length=20, blank=True, help_text="rows, parquet, audio, files, archive")
    done = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0)
    audio = models.BooleanField(default=True)
    parquet = models.BooleanField(default=True)
    include_seeded = models.BooleanField(default=False, help_text="Also publish the seeded demo votes (source = seeded).")
    battles = models.PositiveIntegerField(null=True, blank=True)
    audio_files = models.PositiveIntegerField(null=True, blank=True)
    size_bytes = models.BigIntegerField(null=True, blank=True)
    # Under MEDIA_ROOT/arena-releases/; empty until the build is done.
    file_name = models.CharField(max_length=200, blank=True)
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"release build {self.pk} ({self.state})"
