"""Writes for reward models: training runs, the registry (one Judge per model), held-out evaluation, priorities.

A training run reads the study's counted votes (regular pairs; annotators who withdrew or were
excluded left out), splits them by condition (data.split_rows), reads clip features from the
feature judge's clip cache, trains (model.train), evaluates the held-out votes with the
CMI-RewardBench rules (scoring.evaluation), and registers the model as a Judge of kind reward
with its weights and model card under AUDITORIUM_MODEL_DIR/reward/<key>/. It then scores the
held-out pairs as an ordinary scoring run, so the study report shows it next to every other judge.

The key ends with the weight file's sha256: the same data, options and seed give the same key,
and a second training of them finds the model already registered.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import time
from pathlib import Path

import numpy as np
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Count, F, Q
from django.utils import timezone
from django.utils.text import slugify

from annotation.models import Clip, Condition, Judgment, Pair, Study
from annotation.selectors import SEEDED_LEFT_OUT, judgments_without_seeded, study_writable_by
from annotation.services import pair_priorities_replace
from auditorium.runtime import pick_device
from common.errors import ServiceError

from .. import broadcast, queueing
from .. import services as scoring
from ..evaluation import ALIGNMENT, DIMENSIONS, MAJORITY, MODEL_A, MODEL_B, MUSICALITY, VOTE, evaluate_clustered, prefer
from ..judges import adapter_for
from ..judges.base import AudioDecodeError, JudgeUnavailable, jsonable, models_relative
from ..judges.reward import CARD_FILE
from ..models import Judge, ScoringRun, TrainingRun, Verdict
from ..selectors import training_progress
from .data import SPLIT_MODES, split_rows, votes_from_rows, with_reliability_weights
from .features import FEATURE_KINDS, PROMPT_ATTRIBUTES, TEXT_MODES, FeatureUnavailable, Featurizer
from .measure import measure_split, summarise
from .model import CODE_VERSION, FeatureTable, RewardModel, TrainConfig, TrainingError
from .selection import disagreement, uncertainty
from .stage_inputs import mos_rows, pseudo_vote_rows, stage_data, stages_card, stages_options_clean

logger = logging.getLogger(__name__)

MIN_VOTES = 10
MAX_SPLIT_SEEDS = 20
FEATURE_BATCH = 32
PUSH_SECONDS = 0.5
HELDOUT_LABEL = "held-out test split"
# What the per-vote weight column carries (scoring/reward/data.py votes_from_rows).
WEIGHT_MODES = ("confidence", "reliability")
# Failures that are the data's or the set-up's, reported as the run's error; anything else is logged too.
EXPECTED_ERRORS = (TrainingError, FeatureUnavailable, JudgeUnavailable, ServiceError, AudioDecodeError)


# --- Options ----------------------------------------------------------------------------------------


def training_options_clean(options: dict | None) -> dict:
    """Split, text embedding, bootstrap rounds and hyper-parameters; a bad value is refused with what is allowed."""
    options = dict(options or {})
    split = options.pop("split", "condition")
    if split not in SPLIT_MODES:
        raise ServiceError(f"split must be one of {', '.join(SPLIT_MODES)}; got {split!r}.", code="bad_option")
    text = options.pop("text", "auto")
    if text not in TEXT_MODES:
        raise ServiceError(f"text must be one of {', '.join(TEXT_MODES)}; got {text!r}.", code="bad_option")
    shares = {}
    for name, default in (("val_share", 0.15), ("test_share", 0.2)):
        try:
            shares[name] = float(options.pop(name, default))
        except (TypeError, ValueError):
            raise ServiceError(f"{name} must be a number between 0 and 1.", code="bad_option") from None
        if not 0 < shares[name] < 0.5:
            raise ServiceError(f"{name} must be above 0 and below 0.5; got {shares[name]}.", code="bad_option")
    try:
        rounds = int(options.pop("rounds", 1000))
    except (TypeError, ValueError):
        raise ServiceError("rounds must be a whole number of bootstrap rounds (0 for none).", code="bad_option") from None
    if not 0 <= rounds <= 100_000:
        raise ServiceError("rounds must be between 0 and 100000.", code="bad_option")
    split_seeds = options.pop("split_seeds", None)
    if split_seeds is None:
        split_seeds = [0]
    if isinstance(split_seeds, (int, str)) and not isinstance(split_seeds, bool):
        split_seeds = [p for p in str(split_seeds).replace(" ", "").split(",") if p]
    try:
        split_seeds = [int(v) for v in split_seeds if not isinstance(v, bool)]
    except (TypeError, ValueError):
        raise ServiceError("split seeds must be whole numbers, separated by commas (e.g. 0,1,2).", code="bad_option") from None
    if not 1 <= len(split_seeds) <= MAX_SPLIT_SEEDS or len(set(split_seeds)) != len(split_seeds) or not all(0 <= v < 2**31 for v in split_seeds):
        raise ServiceError(f"split seeds must be 1 to {MAX_SPLIT_SEEDS} distinct whole numbers from 0 to 2147483647.", code="bad_option")
    device = str(options.pop("device", "") or "")
    weight_by = options.pop("weight_by", "confidence") or "confidence"
    if weight_by not in WEIGHT_MODES:
        raise ServiceError(f"weight_by must be one of {', '.join(WEIGHT_MODES)}; got {weight_by!r}.", code="bad_option")
    if weight_by == "reliability":
        if options.get("confidence_weight") in (True, "true", "on", 1):
            raise ServiceError("Weight votes either by stated confidence or by annotator reliability, not both.", code="bad_option")
        # The reliability weights travel in the per-vote weight column, which the network reads only with confidence_weight on.
        options["confidence_weight"] = True
    stages = stages_options_clean(options.pop("stages", None))
    try:
        config = TrainConfig.parse(options)
    except TrainingError as exc:
        raise ServiceError(f"{exc}.", code="bad_option") from None
    cleaned = {"split": split, "split_seeds": split_seeds, "text": text, **shares, "rounds": rounds, "device": device, "weight_by": weight_by, "train": config.as_dict()}
    if stages:
        cleaned["stages"] = stages
    return cleaned


# --- Votes ------------------------------------------------------------------------------------------


def study_vote_rows(*, study: Study) -> tuple[list[dict], dict]:
    """One row per counted vote on a regular pair (data.py's shape), and what was left out and why."""
    everything = Judgment.objects.filter(pair__study=study)
    base = judgments_without_seeded(everything)
    counted = Q(
        annotator__annotator_profile__isnull=False,
        annotator__annotator_profile__withdrawn_at__isnull=True,
        annotator__annotator_profile__excluded_at__isnull=True,
    )
    left_out = {
        SEEDED_LEFT_OUT: everything.count() - base.count(),
        "annotator withdrew consent": base.filter(annotator__annotator_profile__withdrawn_at__isnull=False).count(),
        "annotator excluded": base.filter(annotator__annotator_profile__withdrawn_at__isnull=True, annotator__annotator_profile__excluded_at__isnull=False).count(),
        "gold or catch pair": base.filter(counted).exclude(pair__kind=Pair.Kind.REGULAR).count(),
    }
    fields = (
        "pair_id", "annotator_id", "alignment_choice_id", "musicality_choice_id", "alignment_tie", "musicality_tie", "alignment_confidence",
        "musicality_confidence", "pair__clip_a_id", "pair__clip_b_id", "pair__clip_a__sha256", "pair__clip_b__sha256",
        "pair__condition__content_key", "pair__split", "pair__condition__modality", "pair__condition__prompt", "pair__clip_a__system__name",
        "pair__clip_b__system__name", "created_at",
    )  # fmt: skip
    rows = []
    for pair_id, annotator, align, music, tie_a, tie_m, conf_a, conf_m, clip_a_id, clip_b_id, sha_a, sha_b, condition, split, modality, prompt, system_a, system_b, at in (
        base.filter(counted, pair__kind=Pair.Kind.REGULAR).order_by("pk").values_list(*fields)
    ):
        side = {clip_a_id: MODEL_A, clip_b_id: MODEL_B}
        rows.append(
            {
                "pair_id": pair_id,
                "annotator": annotator,
                "condition": condition,
                "clip_a": sha_a,
                "clip_b": sha_b,
                "split": split,
                "modality": modality,
                "prompt": prompt,
                "system_a": system_a,
                "system_b": system_b,
                "time": at.timestamp(),
                # Imported both / neither votes keep their label: a 0.5 target, as the evaluation scores them.
                "label_alignment": side.get(align) or tie_a or None,
                "label_musicality": side.get(music) or tie_m or None,
                "confidence_alignment": float(conf_a),
                "confidence_musicality": float(conf_m),
            }
        )
    return rows, {k: v for k, v in left_out.items() if v}


def feature_table(*, featurizer: Featurizer, rows: list[dict], progress=None) -> tuple[FeatureTable, dict, dict]:
    """Features of every clip, reference and condition the rows name: (table, clip sha -> row, condition key -> row)."""
    conditions = {c.content_key: c for c in Condition.objects.filter(content_key__in={r["condition"] for r in rows}).select_related("reference")}
    shas = list(dict.fromkeys([s for r in rows for s in (r["clip_a"], r["clip_b"])] + [c.reference.sha256 for c in conditions.values() if c.reference_id]))
    clips = {c.sha256: c for c in Clip.objects.filter(sha256__in=shas)}
    vectors = []
    for start in range(0, len(shas), FEATURE_BATCH):
        batch = shas[start : start + FEATURE_BATCH]
        vectors.append(featurizer.clip_vectors([scoring.clip_audio(clips[s]) for s in batch]))
        if progress is not None:
            progress(min(start + FEATURE_BATCH, len(shas)), len(shas))
    keys = sorted(conditions)
    clip_index = {s: i for i, s in enumerate(shas)}
    table = FeatureTable(
        clips=np.concatenate(vectors, axis=0),
        conditions=featurizer.condition_vectors([scoring.condition_input(conditions[k]) for k in keys]),
        reference=[clip_index[conditions[k].reference.sha256] if conditions[k].reference_id else -1 for k in keys],
    )
    return table, clip_index, {k: i for i, k in enumerate(keys)}


def heldout_rows(trained: RewardModel, table: FeatureTable, votes, rows: list[dict]) -> list[dict]:
    """The held-out votes with the model's label per dimension (the tie rule of scoring.evaluation)."""
    score_a = trained.scores(table, votes.clip_a, votes.condition)
    score_b = trained.scores(table, votes.clip_b, votes.condition)
    out = []
    for i, row in enumerate(rows):
        out.append({**row, **{f"pred_{dim}": prefer(score_a[i, j], score_b[i, j]) for j, dim in enumerate(DIMENSIONS)}})
    return out


# --- Training runs ------------------------------------------------------------------------------------


def training_create(*, study: Study, feature_judge: Judge, seed: int = 0, options: dict | None = None, user=None, queue: bool = True) -> TrainingRun:
    """A training run, queued on the gpu queue once committed (queue=False: the caller runs it).

    With a user (the pages and the API), the user must be allowed to change the study (its owner, a collaborator
    the owner named, an admin) and may have at most AUDITORIUM_MAX_QUEUED_TRAININGS runs waiting or running.
    """
    if user is not None and not study_writable_by(study=study, user=user):
        raise ServiceError(
            f"Only the owner of study {study.name}, the collaborators the owner names, or an administrator can train on its votes.", code="forbidden", status=403
        )
    if feature_judge.kind not in FEATURE_KINDS:
        raise ServiceError(f"Judge {feature_judge.key} ({feature_judge.kind}) gives no clip features; choose a judge of kind {', '.join(FEATURE_KINDS)}.", code="bad_features")
    if not feature_judge.enabled:
        raise ServiceError(f"Judge {feature_judge.key} is disabled.", code="judge_disabled")
    state = adapter_for(feature_judge).availability()
    if not state.available:
        raise ServiceError(f"Judge {feature_judge.key} is unavailable: {models_relative(state.reason)}", code="judge_unavailable", status=409)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**31:
        raise ServiceError("seed must be a whole number from 0 to 2147483647.", code="bad_seed")
    cleaned = training_options_clean(options)
    rows, left_out = study_vote_rows(study=study)
    if len(rows) < MIN_VOTES:
        seeded = f" ({left_out[SEEDED_LEFT_OUT]} {SEEDED_LEFT_OUT} are not counted)" if left_out.get(SEEDED_LEFT_OUT) else ""
        raise ServiceError(f"Study {study.name} has {len(rows)} counted vote(s) on regular pairs{seeded}; a reward model needs at least {MIN_VOTES}.", code="too_few_votes")
    creator = user if getattr(user, "is_authenticated", False) else None
    with transaction.atomic():
        if creator is not None:
            # The user's row is locked while counting, so parallel requests cannot all slip under the limit.
            get_user_model().objects.select_for_update().filter(pk=creator.pk).first()
            limit = int(settings.AUDITORIUM_MAX_QUEUED_TRAININGS)
            waiting = TrainingRun.objects.filter(created_by=creator, state__in=(TrainingRun.State.PENDING, TrainingRun.State.RUNNING)).count()
            if waiting >= limit:
                raise ServiceError(
                    f"You have {waiting} training run(s) waiting or running; the limit is {limit}. Start another when one has finished.", code="too_many_trainings", status=429
                )
        run = TrainingRun.objects.create(study=study, feature_judge=feature_judge, seed=seed, options=cleaned, created_by=creator)
        if queue:
            transaction.on_commit(lambda: queueing.task(queueing.REWARD_TRAIN).apply_async((run.pk,), queue=Judge.Queue.GPU))
    return run


class _Progress:
    """Saves a run's stage and step and pushes them, at most every PUSH_SECONDS (always on a stage change)."""

    def __init__(self, run: TrainingRun):
        self.run, self.last = run, 0.0

    def __call__(self, *, stage: str, step: int, steps: int, force: bool = False) -> None:
        changed = stage != self.run.stage
        self.run.stage, self.run.step, self.run.steps = stage, step, steps
        now = time.monotonic()
        if not (force or changed or now - self.last >= PUSH_SECONDS):
            return
        self.last = now
        TrainingRun.objects.filter(pk=self.run.pk).update(stage=stage, step=step, steps=steps, state=self.run.state)
        broadcast.training_progress_broadcast(training_progress(self.run))


def training_execute(*, training_id: int) -> TrainingRun:
    """Train, evaluate and register. Idempotent: a finished run is returned as is; a rerun rebuilds the same model."""
    run = TrainingRun.objects.select_related("study", "feature_judge", "judge").get(pk=training_id)
    if run.state == TrainingRun.State.DONE:
        return run
    run.state, run.error = TrainingRun.State.RUNNING, ""
    run.save(update_fields=["state", "error"])
    progress = _Progress(run)
    try:
        summary = _train_and_register(run, progress)
    except Exception as exc:
        if not isinstance(exc, EXPECTED_ERRORS + (ValueError,)):
            logger.exception("training %s failed", run.pk)
        message = exc.message if isinstance(exc, ServiceError) else str(exc)
        run.state, run.error, run.finished_at = TrainingRun.State.FAILED, f"{type(exc).__name__}: {message}"[:5000], timezone.now()
        run.save(update_fields=["state", "error", "finished_at"])
        progress(stage="failed", step=run.step, steps=run.steps, force=True)
        return run
    run.state, run.finished_at, run.metrics = TrainingRun.State.DONE, timezone.now(), summary
    run.judge = Judge.objects.get(key=summary["key"])
    run.save(update_fields=["state", "finished_at", "metrics", "judge"])
    progress(stage="done", step=run.steps, steps=run.steps, force=True)
    return run


def _train_and_register(run: TrainingRun, progress: _Progress) -> dict:
    options = run.options or training_options_clean({})
    rows, left_out = study_vote_rows(study=run.study)
    split_seeds = options.get("split_seeds") or [run.seed]
    splits = [split_rows(rows, mode=options["split"], seed=s, val_share=options["val_share"], test_share=options["test_share"]) for s in split_seeds]
    featurizer = Featurizer(scoring.judge_adapter(run.feature_judge), text=options["text"])
    # How the prompt enters follows from the features (attributes crossed, or text-audio similarity).
    config = dataclasses.replace(TrainConfig(**options["train"]), **featurizer.prompt_inputs())
    stages = options.get("stages")
    extra_pseudo = pseudo_vote_rows(run_ids=stages["pseudo_runs"]) if stages else []
    extra_mos = mos_rows(study_names=stages["mos_studies"]) if stages else []
    table, clip_index, condition_index = feature_table(
        featurizer=featurizer, rows=rows + extra_pseudo + extra_mos, progress=lambda done, total: progress(stage="features", step=done, steps=total)
    )
    votes = votes_from_rows(rows, clip_index=clip_index, condition_index=condition_index, weight_by=options.get("weight_by", "confidence"))
    judge_scores, judge_note = feature_judge_scores(featurizer=featurizer, table=table, votes=votes, rows=rows)
    device = pick_device(options.get("device") or None)
    per_seed, first = [], None
    for k, split in enumerate(splits):

        def step(done, steps, *_, k=k):
            progress(stage="training", step=k * steps + done, steps=len(splits) * steps)

        # Reliability that weights training is fitted on the training votes of this split only.
        split_votes = with_reliability_weights(votes, rows, split.train) if options.get("weight_by") == "reliability" else votes
        staged = None
        if stages:
            staged = stage_data(
                stages=stages, pseudo_rows=extra_pseudo, mos=extra_mos, clip_index=clip_index, condition_index=condition_index, test_rows=[rows[i] for i in split.test]
            )
        measured = measure_split(
            table, split_votes, rows, split, config=config, seed=run.seed, judge_scores=judge_scores, feature_kind=featurizer.adapter.kind,
            rounds=options["rounds"], device=device, progress=step, stages=staged,
        )  # fmt: skip
        per_seed.append(measured.figures)
        first = first or (measured, split)
    progress(stage="evaluating", step=0, steps=1, force=True)
    measured, split = first
    trained = measured.registered
    test_rows = [rows[i] for i in split.test]
    scored = heldout_rows(trained, table, votes.subset(split.test), test_rows)  # weights play no part in scoring
    metrics = {view: evaluate_clustered(scored, view=view, rounds=options["rounds"], seed=run.seed) for view in (VOTE, MAJORITY)}
    seeds = summarise(per_seed)
    registered = {
        "split_seed": split.info["seed"],
        "picks": measured.picks,
        "rule": "per dimension, the best validation accuracy among the two logistic models, the low-rank clip x prompt model and the network (ties to the simpler)",
        "validation": per_seed[0]["validation"],
    }
    card = model_card(
        run=run, rows=rows, left_out=left_out, split=split, featurizer=featurizer, trained=trained, metrics=metrics, options=options, device=device,
        network=measured.network, registered=registered, seeds=seeds, per_seed=per_seed, judge_note=judge_note,
    )  # fmt: skip
    judge = model_register(run=run, featurizer=featurizer, trained=trained, card=card)
    heldout_run(judge=judge, pair_ids=sorted({r["pair_id"] for r in test_rows}))
    summary = {
        "key": judge.key,
        "heldout": _headline(metrics[VOTE]),
        "heldout_majority": _headline(metrics[MAJORITY]),
        # What was trained on and what was left out (seeded demo votes among it), as the card says.
        "data": card["data"],
        "split": split.info,
        "training_seed": run.seed,
        "split_seeds": list(split_seeds),
        "registered": registered,
        "seeds": seeds,
        "per_seed": per_seed,
        "judge_score": judge_note,
        "best_epoch": measured.network.best_epoch,
        "epochs_run": _epochs_run(measured.network),
        "stages": card.get("stages"),
    }
    if run.study.selection == "uncertainty":
        # The study serves pairs where its latest model is least sure: this model now.
        summary["priorities"] = selection_refresh(study=run.study)
    return jsonable(summary)


def feature_judge_scores(*, featurizer: Featurizer, table: FeatureTable, votes, rows: list[dict]) -> tuple[tuple | None, str]:
    """The feature judge's own scores of each vote's two clips per dimension (its baseline), and a note on what they are.

    The signal judge's musicality score is the last entry of its clip vector (no alignment); a
    judge with a text tower is asked for its scores under each condition, once per condition.
    """
    n = len(rows)
    a, b = np.full((n, len(DIMENSIONS)), np.nan), np.full((n, len(DIMENSIONS)), np.nan)
    adapter = featurizer.adapter
    if adapter.kind == "signal":
        a[:, 1], b[:, 1] = table.clips[votes.clip_a, -1], table.clips[votes.clip_b, -1]
        return (a, b), "the signal judge's technical score (musicality only; it gives no alignment)"
    conditions = {c.content_key: c for c in Condition.objects.filter(content_key__in={r["condition"] for r in rows})}
    clips = {c.sha256: c for c in Clip.objects.filter(sha256__in={r[k] for r in rows for k in ("clip_a", "clip_b")})}
    by_condition: dict[str, list[int]] = {}
    for i, row in enumerate(rows):
        by_condition.setdefault(row["condition"], []).append(i)
    try:
        for key, indices in by_condition.items():
            shas = list(dict.fromkeys(rows[i][k] for i in indices for k in ("clip_a", "clip_b")))
            scores = scoring.clip_scores_get_or_compute(adapter=adapter, clips=[clips[s] for s in shas], condition=conditions[key])
            for i in indices:
                for j, dim in enumerate(DIMENSIONS):
                    a[i, j] = _score(scores[rows[i]["clip_a"]].get(dim))
                    b[i, j] = _score(scores[rows[i]["clip_b"]].get(dim))
    except (JudgeUnavailable, AudioDecodeError, RuntimeError, ValueError) as exc:
        return None, f"unavailable: {exc}"
    return (a, b), f"judge {adapter.config.key}'s own per-clip scores under each condition"


def _score(value) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and np.isfinite(value) else np.nan


def _epochs_run(trained: RewardModel) -> dict:
    return {dim: sum(1 for h in trained.history if h["dimension"] == dim) for dim in DIMENSIONS}


def _headline(figures: dict) -> dict:
    out = {dim: {"accuracy": figures[dim]["all"]["accuracy"], "n": figures[dim]["all"]["n"], "ci": figures[dim]["all"].get("ci")} for dim in DIMENSIONS}
    out["headline"] = figures["headline"]
    return out


# --- The registry -------------------------------------------------------------------------------------


def _code_hash() -> str:
    """Hash of the reward model's own source files: which code trained a model, without relying on git."""
    folder = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for name in ("data.py", "features.py", "model.py", "baselines.py", "measure.py", "prompted.py"):
        digest.update((folder / name).read_bytes())
    return digest.hexdigest()[:16]


def _torch_version() -> str:
    import torch

    return torch.__version__


def _vote_weights_text(options: dict) -> str:
    if not options["train"]["confidence_weight"]:
        return "none: every vote weighs the same"
    if options.get("weight_by") == "reliability":
        return "annotator reliability: 2r - 1 (floor 0.01) of the annotator's Dawid-Skene reliability r, per dimension, fitted on the training votes only"
    return "stated confidence over the mean confidence"


def model_card(
    *, run: TrainingRun, rows, left_out, split, featurizer: Featurizer, trained: RewardModel, metrics: dict, options: dict, device: str,
    network: RewardModel | None = None, registered: dict | None = None, seeds: dict | None = None, per_seed: list | None = None, judge_note: str = "",
) -> dict:  # fmt: skip
    seen = sorted(split.conditions(rows, "train") | split.conditions(rows, "val"))
    network = network or trained
    best = {h["dimension"]: h for h in network.history if h["epoch"] == network.best_epoch.get(h["dimension"])}
    return jsonable(
        {
            "kind": "reward",
            "study": run.study.name,
            "data": {
                "votes": len(rows),
                "pairs": len({r["pair_id"] for r in rows}),
                "conditions": len({r["condition"] for r in rows}),
                "annotators": len({r["annotator"] for r in rows}),
                "left_out_votes": left_out,
                "labels": "human choices in clip terms (side-corrected); both / neither votes are a 0.5 target",
                "confidence_weight": options["train"]["confidence_weight"],
                "vote_weights": _vote_weights_text(options),
            },
            "split": {
                **split.info,
                "seen_conditions": seen,
                "test_conditions": sorted(split.conditions(rows, "test")),
                **_seen_clips(rows, split),
            },
            "features": {**featurizer.describe(), "clip_dims": int(trained.mean.shape[0])},
            "hyperparameters": options["train"],
            "seed": run.seed,
            "seeds": {"training": run.seed, "split": split.info["seed"], "split_seeds": options.get("split_seeds") or [run.seed]},
            "training": {
                "device": device, "best_epoch": network.best_epoch, "epochs_run": _epochs_run(network), "best": best,
                # Weight decay and width per dimension, chosen on the validation loss among what was tried.
                "capacity": network.capacity,
                "prompt_inputs": {
                    "crossed_attributes": list(PROMPT_ATTRIBUTES) if network.config.crossed else [], "text_audio_similarity": network.config.similarity,
                    "learned": _learned_prompt(featurizer, per_seed or [], registered or {}),
                },
            },
            "registered": registered or {},
            "metrics": {
                "rules": "CMI-RewardBench (scoring.evaluation): ties predict B; both scores 0.5",
                "intervals": "95% percentile bootstrap resampling whole test conditions (pairs when each condition has one)",
                "rounds": options["rounds"],
                **metrics,
            },
            "baselines": {"judge_score": judge_note, "per_seed": per_seed or [], "summary": seeds or {}},
            "stages": stages_card(options, per_seed or [], rows),
            "code_version": {"reward": CODE_VERSION, "source_sha256": _code_hash(), "torch": _torch_version()},
            "weights_sha256": trained.digest(),
            "trained_at": timezone.now().isoformat(),
            "training_run": run.pk,
        }
    )


def _learned_prompt(featurizer: Featurizer, per_seed: list, registered: dict) -> dict:
    """What the low-rank clip x prompt model read and, per dimension, the rank and C validation chose (first split)."""
    fitted = ((per_seed[0] if per_seed else {}).get("linear") or {}).get("prompt_lowrank") or {}
    source = "the feature judge's text-tower embedding of the prompt" if featurizer.text == "judge" else "the prompt's hashed words and bigrams"
    return {
        "model": "prompt_lowrank",
        "representation": f"{source}, with lyrics, flags and reference (the whole context vector), centred on the training conditions",
        "context_columns": fitted.get("context_columns"),
        "chosen": {dim: {k: v for k, v in block.items() if k != "tried"} for dim, block in (fitted.get("chosen") or {}).items()},
        "tried": {dim: block.get("tried", []) for dim, block in (fitted.get("chosen") or {}).items()},
        "registered": [dim for dim, pick in (registered.get("picks") or {}).items() if pick == "prompt_lowrank"],
    }


def _seen_clips(rows, split) -> dict:
    """In a split by system the judge refuses the clips training and validation saw (their prompts may recur in the test)."""
    if split.info["mode"] != "system":
        return {"refuses": "conditions"}
    return {"refuses": "clips", "seen_clips": sorted({rows[i][k] for i in split.train + split.val for k in ("clip_a", "clip_b")})}


def model_key(*, study: Study, feature_judge: Judge, digest: str) -> str:
    return f"reward-{slugify(study.name)[:40]}-{slugify(feature_judge.key)[:30]}-{digest[:12]}"


def model_register(*, run: TrainingRun, featurizer: Featurizer, trained: RewardModel, card: dict) -> Judge:
    """Weights and card under AUDITORIUM_MODEL_DIR/reward/<key>/, and the Judge row (found, if this model exists)."""
    digest = trained.digest()
    key = model_key(study=run.study, feature_judge=run.feature_judge, digest=digest)
    card = {**card, "key": key}
    directory = Path(settings.AUDITORIUM_MODEL_DIR) / "reward" / key
    trained.save(directory)
    (directory / CARD_FILE).write_text(json.dumps(card, indent=2, sort_keys=True))
    feature = run.feature_judge
    judge, _ = Judge.objects.get_or_create(
        key=key,
        defaults={
            "kind": Judge.Kind.REWARD,
            "version": digest[:12],
            "weights": f"reward/{key}",
            "queue": feature.queue,
            "options": {
                "features": {
                    "key": feature.key,
                    "kind": feature.kind,
                    "version": feature.version,
                    "weights": feature.weights,
                    "options": dict(feature.options or {}),
                    "cache_version": featurizer.adapter.cache_version(),
                },
                "text": featurizer.text,
                "study": run.study.name,
            },
        },
    )
    return judge


def heldout_run(*, judge: Judge, pair_ids: list[int]) -> ScoringRun:
    """The model's scoring run over the held-out pairs (once per model)."""
    existing = ScoringRun.objects.filter(judge=judge, label=HELDOUT_LABEL).first()
    if existing is not None:
        return existing
    return scoring.run_create(judge=judge, pair_ids=pair_ids, label=HELDOUT_LABEL)


def latest_model(*, study: Study) -> Judge | None:
    run = TrainingRun.objects.filter(study=study, state=TrainingRun.State.DONE, judge__isnull=False).select_related("judge").order_by("-finished_at", "-pk").first()
    return run.judge if run is not None else None


# --- Active selection ---------------------------------------------------------------------------------


def _open_pairs(study: Study) -> list[Pair]:
    """Regular pairs still short of their votes."""
    return list(
        Pair.objects.filter(study=study, kind=Pair.Kind.REGULAR)
        .annotate(votes=Count("judgments"))
        .filter(votes__lt=F("overlap"))
        .select_related("condition__reference", "clip_a", "clip_b")
        .order_by("pk")
    )


def uncertainty_refresh(*, study: Study) -> dict:
    """Rank the open pairs by how unsure the study's latest reward model is (selection.uncertainty)."""
    judge = latest_model(study=study)
    if judge is None:
        return {"mode": "uncertainty", "pairs": 0, "reason": "no reward model has been trained on this study yet"}
    pairs = _open_pairs(study)
    if not pairs:
        return {"mode": "uncertainty", "pairs": pair_priorities_replace(study=study, mode="uncertainty", values={}, source=judge.key)}
    adapter = scoring.judge_adapter(judge)
    conditions = [scoring.condition_input(p.condition) for p in pairs]
    values = adapter.scores_for([scoring.clip_audio(p.clip_a) for p in pairs] + [scoring.clip_audio(p.clip_b) for p in pairs], conditions + conditions)
    margin = values[: len(pairs)] - values[len(pairs) :]
    priority = uncertainty(1.0 / (1.0 + np.exp(-margin)))
    written = pair_priorities_replace(study=study, mode="uncertainty", values={p.pk: float(v) for p, v in zip(pairs, priority)}, source=judge.key)
    return {"mode": "uncertainty", "pairs": written, "model": judge.key}


_LABEL_VALUE = {MODEL_A: 1.0, MODEL_B: 0.0, "both": 0.5, "neither": 0.5}


def disagreement_refresh(*, study: Study) -> dict:
    """Rank regular pairs by how much the judges' latest finished runs on the study disagree (selection.disagreement)."""
    latest: dict[int, int] = {}
    for run_id, judge_id in ScoringRun.objects.filter(study=study, state=ScoringRun.State.DONE).order_by("-created_at", "-pk").values_list("pk", "judge_id"):
        latest.setdefault(judge_id, run_id)
    runs = sorted(latest.values())
    if len(runs) < 2:
        return {"mode": "disagreement", "pairs": 0, "reason": f"{len(runs)} judge(s) have finished a run on this study; disagreement needs two"}
    pair_ids = list(Pair.objects.filter(study=study, kind=Pair.Kind.REGULAR).order_by("pk").values_list("pk", flat=True))
    row = {pid: i for i, pid in enumerate(pair_ids)}
    column = {run_id: j for j, run_id in enumerate(runs)}
    labels = np.full((len(pair_ids), len(runs), len(DIMENSIONS)), np.nan)
    for run_id, pair_id, details in Verdict.objects.filter(run_id__in=runs, pair_id__in=pair_ids, status=Verdict.Status.OK).values_list("run_id", "pair_id", "details"):
        given = (details or {}).get("labels", {})
        for k, dim in enumerate((ALIGNMENT, MUSICALITY)):
            if given.get(dim) in _LABEL_VALUE:
                labels[row[pair_id], column[run_id], k] = _LABEL_VALUE[given[dim]]
    values = disagreement(labels)
    ranked = {pid: float(values[i]) for pid, i in row.items() if np.isfinite(values[i])}
    written = pair_priorities_replace(study=study, mode="disagreement", values=ranked, source=",".join(sorted(Judge.objects.filter(runs__in=runs).values_list("key", flat=True))))
    return {"mode": "disagreement", "pairs": written, "judges": len(runs)}


def selection_refresh(*, study: Study, reason: str = "") -> dict:
    """Recompute the priorities of the study's selection mode (nothing for random)."""
    study.refresh_from_db(fields=["selection"])
    if study.selection == "uncertainty":
        return uncertainty_refresh(study=study)
    if study.selection == "disagreement":
        return disagreement_refresh(study=study)
    return {"mode": study.selection, "pairs": 0}


def selection_refresh_by_id(*, study_id: int, reason: str = "") -> dict:
    """selection_refresh for a study id (the queued form); a deleted study or a random order is a no-op."""
    study = Study.objects.filter(pk=study_id).first()
    if study is None or study.selection == "random":
        return {"pairs": 0}
    return selection_refresh(study=study, reason=reason)
