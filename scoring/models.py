"""Automatic judges, their runs, and their verdicts stored next to the human ones."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Judge(models.Model):
    """A configured judge: which adapter, which weights, which queue."""

    class Kind(models.TextChoices):
        SIGNAL = "signal", "Signal quality (technical)"
        CLAP = "clap", "CLAP similarity"
        AESTHETICS = "aesthetics", "audiobox-aesthetics"
        MUQ_MULAN = "muq_mulan", "MuQ-MuLan similarity"
        SONGEVAL = "songeval", "SongEval"
        CMI_RM = "cmi_rm", "CMI-RM reward model"
        LLM_PAIRWISE = "llm_pairwise", "Audio-LLM pairwise judge"
        AQA = "aqa", "AQAScore"
        RUBRIC = "rubric", "Rubric judge"
        EXTERNAL = "external", "Imported external results"
        REWARD = "reward", "Reward model trained here"
        PAM = "pam", "PAM (CLAP quality prompts)"
        LYRICS = "lyrics", "Lyrics error rate (Whisper ASR)"

    class Queue(models.TextChoices):
        CPU = "cpu", "cpu"
        GPU = "gpu", "gpu"

    key = models.SlugField(max_length=100, unique=True)
    kind = models.CharField(max_length=20, choices=Kind.choices)
    version = models.CharField(max_length=40, default="1", help_text="Part of the cache key: bump to recompute.")
    weights = models.CharField(max_length=500, blank=True, help_text="Local path or hub id, loaded offline.")
    options = models.JSONField(default=dict, blank=True)
    queue = models.CharField(max_length=3, choices=Queue.choices, default=Queue.CPU)
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["key"]

    def __str__(self) -> str:
        return self.key


class ScoringRun(models.Model):
    """One judge over a set of pairs (a study, a batch, or imported pairs)."""

    class State(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    class Purpose(models.TextChoices):
        COMPARE = "compare", "Compared with human votes"
        PSEUDO = "pseudo", "Pseudo-labels for pairs without votes"

    judge = models.ForeignKey(Judge, on_delete=models.PROTECT, related_name="runs")
    study = models.ForeignKey("annotation.Study", null=True, blank=True, on_delete=models.CASCADE, related_name="scoring_runs")
    # A pseudo-label run (scoring/pseudo.py) labels a pool of pairs without votes; its kept labels export as CMI-Pref-Pseudo.
    purpose = models.CharField(max_length=10, choices=Purpose.choices, default=Purpose.COMPARE)
    label = models.CharField(max_length=200, blank=True)
    template = models.CharField(max_length=60, blank=True, help_text="Prompt template variant, for template-robustness runs.")
    # Runs of one judge under paraphrased templates share a group, so their spread can be measured.
    group = models.CharField(max_length=60, blank=True, help_text="Template-robustness group.")
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    # Resolved at launch so that pairs added to the study later do not change a finished run.
    pair_ids = models.JSONField(default=list, blank=True)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True)
    # Comparison with the human votes on the same pairs (scoring.services.run_compare).
    summary = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.judge.key} run {self.pk}"


class ClipScore(models.Model):
    """Per-clip judge output under a condition; doubles as the O(M) cache (content hash + judge version)."""

    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="clip_scores")
    judge_version = models.CharField(max_length=40)
    clip_sha256 = models.CharField(max_length=64)
    # sha256 of what the clip was scored against (condition content key, template); "" = unconditioned.
    context_key = models.CharField(max_length=64, blank=True, default="")
    scores = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["judge", "judge_version", "clip_sha256", "context_key"], name="unique_clip_score")
        ]


class Verdict(models.Model):
    """A judge's answer for one pair, in clip terms like human judgments."""

    class Status(models.TextChoices):
        OK = "ok", "Preference given"
        DISCARDED = "discarded", "Discarded (position-inconsistent)"
        FAILED = "failed", "Failed (malformed output or error)"

    run = models.ForeignKey(ScoringRun, on_delete=models.CASCADE, related_name="verdicts")
    pair = models.ForeignKey("annotation.Pair", on_delete=models.CASCADE, related_name="verdicts")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OK)
    # Null where the judge gave no preference on that dimension (not covered, discarded, failed).
    alignment_choice = models.ForeignKey("annotation.Clip", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    musicality_choice = models.ForeignKey("annotation.Clip", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    # Scores in the pair's stored order (clip_a, clip_b).
    alignment_score_a = models.FloatField(null=True, blank=True)
    alignment_score_b = models.FloatField(null=True, blank=True)
    musicality_score_a = models.FloatField(null=True, blank=True)
    musicality_score_b = models.FloatField(null=True, blank=True)
    rationale = models.TextField(blank=True)
    # Raw answers per order, rubric items, template spread, error text.
    details = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["run", "pair"], name="one_verdict_per_run_pair")]

    def __str__(self) -> str:
        return f"verdict {self.pk} ({self.status})"


class ExternalResultSet(models.Model):
    """Published per-row judge results (e.g. TuneJury), compared on the same footing as our judges."""

    name = models.CharField(max_length=200, unique=True)
    judge_name = models.CharField(max_length=200, blank=True)
    source_file = models.CharField(max_length=500, blank=True)
    sha256 = models.CharField(max_length=64, help_text="Of the imported file; re-importing it changes nothing.")
    published_summary = models.JSONField(default=dict, blank=True)
    computed_summary = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.name


class ExternalResultRow(models.Model):
    result_set = models.ForeignKey(ExternalResultSet, on_delete=models.CASCADE, related_name="rows")
    row_index = models.PositiveIntegerField()
    subset = models.CharField(max_length=40, help_text="CMI-Pref, Music Arena, PAM, MusicEval.")
    audio_a = models.CharField(max_length=500)
    audio_b = models.CharField(max_length=500, blank=True)
    scores_a = models.JSONField(default=dict)
    scores_b = models.JSONField(default=dict, blank=True)
    # Human side as published: preferences per dimension with confidence, or MOS values.
    human = models.JSONField(default=dict)
    # Linked when the row's audio matches clips of a stored pair.
    pair = models.ForeignKey("annotation.Pair", null=True, blank=True, on_delete=models.SET_NULL, related_name="external_rows")

    class Meta:
        ordering = ["result_set", "row_index"]
        constraints = [models.UniqueConstraint(fields=["result_set", "row_index"], name="unique_external_row")]


class TrainingRun(models.Model):
    """Training of one reward model on a study's votes; the model it produced is a Judge (kind reward)."""

    class State(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    study = models.ForeignKey("annotation.Study", on_delete=models.CASCADE, related_name="training_runs")
    feature_judge = models.ForeignKey(Judge, on_delete=models.PROTECT, related_name="+", help_text="Whose clip features the model reads.")
    seed = models.BigIntegerField(default=0)
    # Split mode and shares, text embedding, hyper-parameters (scoring.reward.services.TRAINING_OPTIONS).
    options = models.JSONField(default=dict, blank=True)
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    stage = models.CharField(max_length=20, blank=True, help_text="features, training, evaluating")
    step = models.PositiveIntegerField(default=0)
    steps = models.PositiveIntegerField(default=0)
    # Held-out figures and the split as in the model card.
    metrics = models.JSONField(default=dict, blank=True)
    judge = models.ForeignKey(Judge, null=True, blank=True, on_delete=models.SET_NULL, related_name="trainings", help_text="The trained model.")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"training {self.pk} on {self.study_id}"


class BestOfNExperiment(models.Model):
    """Test-time scaling checked by people: N candidates per prompt, ranked by a judge, top-1 against others in a blind study."""

    class State(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    # The experiment's blind pairwise study: made empty at creation, so the study rule decides who may see it from the start.
    study = models.OneToOneField("annotation.Study", on_delete=models.CASCADE, related_name="best_of_n")
    prompts = models.JSONField(default=list, help_text="The prompt set: one text prompt per condition.")
    n = models.PositiveSmallIntegerField(help_text="Candidates per prompt.")
    systems = models.JSONField(default=list, blank=True, help_text="Arena systems that generate, in turn; empty when candidates come from a study.")
    source_study = models.ForeignKey("annotation.Study", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", help_text="Imported candidates.")
    ranker = models.ForeignKey(Judge, on_delete=models.PROTECT, related_name="+")
    dimension = models.CharField(max_length=12, default="musicality", help_text="The dimension the ranker's score ranks by.")
    seconds = models.FloatField(default=6.0)
    seed = models.BigIntegerField(default=0)
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"best-of-{self.n} {self.study_id}"


class BestOfNCandidate(models.Model):
    """One candidate of one prompt, with the ranker's score and its part in the study's pairs."""

    experiment = models.ForeignKey(BestOfNExperiment, on_delete=models.CASCADE, related_name="candidates")
    condition = models.ForeignKey("annotation.Condition", on_delete=models.PROTECT, related_name="+")
    clip = models.ForeignKey("annotation.Clip", on_delete=models.PROTECT, related_name="+")
    score = models.FloatField(null=True, blank=True)
    rank = models.PositiveSmallIntegerField(null=True, blank=True, help_text="1 = the ranker's choice.")
    # The random candidate top-1 is compared with (it may also be the bottom one).
    is_random = models.BooleanField(default=False)

    class Meta:
        ordering = ["experiment", "condition", "rank", "id"]
        constraints = [models.UniqueConstraint(fields=["experiment", "condition", "clip"], name="unique_best_of_n_candidate")]
