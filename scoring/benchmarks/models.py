"""Judge benchmarks: frozen item sets with server-side human labels, teams, and their submissions."""

from __future__ import annotations

import secrets

from django.conf import settings
from django.db import models


class Benchmark(models.Model):
    """A frozen, versioned set of pairs with the human labels kept on the server.

    Items are drawn once, at creation, from a study's test split and/or the arena's voted battles;
    later votes, edits or deletions in the study do not change a benchmark (its labels and clip
    checksums are copied onto its items).
    """

    class State(models.TextChoices):
        OPEN = "open", "Open (public part shown)"
        CLOSED = "closed", "Closed (private part shown)"

    class Kind(models.TextChoices):
        PAIRS = "pairs", "Pairs: which clip people preferred (accuracy)"
        MOS = "mos", "Rated clips: the MOS people gave (SRCC)"

    name = models.SlugField(max_length=100, unique=True)
    title = models.CharField(max_length=200, blank=True)
    description = models.TextField(blank=True)
    version = models.PositiveIntegerField(default=1)
    seed = models.BigIntegerField(default=0, help_text="Seeds the item order, the public/private split and the bootstrap.")
    public_share = models.FloatField(default=0.5, help_text="Share of items in the public part.")
    state = models.CharField(max_length=6, choices=State.choices, default=State.OPEN)
    # What an item is: a pair with a preference label, or one rated clip with its MOS per dimension.
    kind = models.CharField(max_length=5, choices=Kind.choices, default=Kind.PAIRS)
    # A dev benchmark ships its labels in the export, for tuning; its scores hide nothing.
    is_dev = models.BooleanField(default=False)
    # Labels from the demo's seeded votes (no one listened): shown as demo data wherever the benchmark appears.
    is_demo = models.BooleanField(default=False)
    study = models.ForeignKey("annotation.Study", null=True, blank=True, on_delete=models.SET_NULL, related_name="benchmarks")
    includes_arena = models.BooleanField(default=False)
    # {"audio/<sha256><ext>": sha256} for every clip the export ships.
    manifest = models.JSONField(default=dict, blank=True)
    n_items = models.PositiveIntegerField(default=0)
    bootstrap_rounds = models.PositiveIntegerField(default=1000)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    closed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} v{self.version}"

    @property
    def is_open(self) -> bool:
        return self.state == self.State.OPEN

    @property
    def is_mos(self) -> bool:
        return self.kind == self.Kind.MOS


class BenchmarkItem(models.Model):
    """One pair of a benchmark (or one rated clip of a MOS benchmark, in clip_a): what a judge is given, and (server
    only) what people chose or the MOS they gave."""

    benchmark = models.ForeignKey(Benchmark, on_delete=models.CASCADE, related_name="items")
    # Opaque: reveals neither the pair, the battle, the systems nor the part it is in.
    item_id = models.CharField(max_length=40)
    position = models.PositiveIntegerField()
    pair = models.ForeignKey("annotation.Pair", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    battle = models.ForeignKey("arena.Battle", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    source = models.CharField(max_length=60, help_text="cmi-arena-annotation (study pair) or Music Arena (battle).")
    prompt = models.TextField(blank=True)
    lyrics = models.TextField(blank=True)
    modality = models.CharField(max_length=20)
    clip_a = models.ForeignKey("annotation.Clip", on_delete=models.PROTECT, related_name="+")
    clip_b = models.ForeignKey("annotation.Clip", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    reference = models.ForeignKey("annotation.Clip", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    # Items that share a condition are resampled together.
    cluster = models.CharField(max_length=64)
    is_private = models.BooleanField(default=False)
    # Never leaves the server except in a dev benchmark's export:
    # {dim: {"votes": [code, ...], "confidences": [...], "truth": code, "confidence": mean or None}}; a MOS item:
    # {dim: {"mos": mean, "n": ratings, "ratings": [[rater number, value], ...]}} (rater numbers are the benchmark's own)
    labels = models.JSONField(default=dict)

    class Meta:
        ordering = ["benchmark", "position"]
        constraints = [
            models.UniqueConstraint(fields=["benchmark", "item_id"], name="unique_benchmark_item_id"),
            models.UniqueConstraint(fields=["benchmark", "position"], name="unique_benchmark_item_position"),
        ]

    def __str__(self) -> str:
        return self.item_id


class Team(models.Model):
    """Who submits: a named group of users (what it sees: disclosure.py)."""

    name = models.SlugField(max_length=100, unique=True)
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, related_name="benchmark_teams", blank=True)
    # A team made for one benchmark submits only to it; a team without one (made by the command) to any.
    benchmark = models.ForeignKey(Benchmark, null=True, blank=True, on_delete=models.CASCADE, related_name="teams")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


def endpoint_secret() -> str:
    return secrets.token_hex(32)


class JudgeEndpoint(models.Model):
    """An outside judge served over HTTP, registered once by its team and used for submissions by name.

    Every request to it is signed with the shared secret (HMAC-SHA256 over the timestamp and the
    body; docs/benchmarks.md shows how a team verifies it). The secret is shown to the team's members
    and researchers only.
    """

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="endpoints")
    name = models.SlugField(max_length=100)
    url = models.URLField(max_length=500)
    secret = models.CharField(max_length=128, default=endpoint_secret)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["team", "name"]
        constraints = [models.UniqueConstraint(fields=["team", "name"], name="unique_endpoint_name_per_team")]

    def __str__(self) -> str:
        return f"{self.team.name}/{self.name}"


class Submission(models.Model):
    class Kind(models.TextChoices):
        FILE = "file", "Prediction file"
        JUDGE = "judge", "In-platform judge"
        HTTP = "http", "Outside judge over HTTP"

    class State(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        DONE = "done", "Scored"
        FAILED = "failed", "Failed"

    benchmark = models.ForeignKey(Benchmark, on_delete=models.CASCADE, related_name="submissions")
    team = models.ForeignKey(Team, on_delete=models.PROTECT, related_name="submissions")
    label = models.CharField(max_length=200, blank=True, help_text="The judge's name as the team gives it.")
    kind = models.CharField(max_length=5, choices=Kind.choices, default=Kind.FILE)
    state = models.CharField(max_length=8, choices=State.choices, default=State.PENDING)
    file_format = models.CharField(max_length=20, blank=True, help_text="The prediction layout read (formats.LAYOUTS).")
    file_sha256 = models.CharField(max_length=64, blank=True)
    judge = models.ForeignKey("scoring.Judge", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    scoring_run = models.ForeignKey("scoring.ScoringRun", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    endpoint = models.ForeignKey(JudgeEndpoint, null=True, blank=True, on_delete=models.SET_NULL, related_name="submissions")
    # The URL as it was when the submission ran (an endpoint's URL may change later).
    endpoint_url = models.URLField(max_length=500, blank=True)
    # Items an outside judge did not answer: timeouts and errors (counted wrong, shown).
    n_errors = models.PositiveIntegerField(default=0)
    n_timeouts = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["team", "created_at"])]

    def __str__(self) -> str:
        return f"{self.team.name}/{self.label or self.pk}"

    @property
    def display_name(self) -> str:
        return f"{self.team.name} · {self.label}" if self.label else f"{self.team.name} #{self.pk}"


class Prediction(models.Model):
    """A submission's answer for one item, as label codes of scoring.evaluation (-1: none)."""

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="predictions")
    item = models.ForeignKey(BenchmarkItem, on_delete=models.CASCADE, related_name="+")
    alignment = models.SmallIntegerField(default=-1)
    musicality = models.SmallIntegerField(default=-1)
    # Stated probability that A is preferred, when the judge gives one (calibration).
    prob_alignment = models.FloatField(null=True, blank=True)
    prob_musicality = models.FloatField(null=True, blank=True)
    # A MOS benchmark's answer: the judge's score for the clip per dimension (any scale; only its order counts).
    score_alignment = models.FloatField(null=True, blank=True)
    score_musicality = models.FloatField(null=True, blank=True)
    error = models.CharField(max_length=200, blank=True, help_text="Why an outside judge gave no answer (timeout, error).")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["submission", "item"], name="one_prediction_per_item")]
