"""What two-stage training reads from the database: pseudo-label runs (stage 1), rating studies' MOS (stage 2), and the card's account of both."""

from __future__ import annotations

import numpy as np

from annotation.models import Clip, Study
from common.errors import ServiceError

from ..evaluation import DIMENSIONS
from ..models import ScoringRun
from .data import TARGET
from .model import MOSTargets, Votes, mos_normalise
from .stages import DEFAULT_SMOOTHING, StageData


def stages_options_clean(stages: dict | None) -> dict | None:
    """Two-stage training's inputs: pseudo-label runs (stage 1), rating studies whose MOS join stage 2, smoothing, MOS weight."""
    if not stages:
        return None
    if not isinstance(stages, dict):
        raise ServiceError("stages must be an object with pseudo_runs, mos_studies, smoothing, mos_weight.", code="bad_option")
    stages = dict(stages)
    unknown = sorted(set(stages) - {"pseudo_runs", "mos_studies", "smoothing", "mos_weight"})
    if unknown:
        raise ServiceError(f"unknown stage option(s) {', '.join(unknown)}.", code="bad_option")
    runs = stages.get("pseudo_runs") or []
    if not isinstance(runs, list) or not all(isinstance(r, int) and not isinstance(r, bool) for r in runs):
        raise ServiceError("pseudo_runs must be a list of scoring run ids.", code="bad_option")
    for run_id in runs:
        run = ScoringRun.objects.filter(pk=run_id).first()
        if run is None or run.purpose != ScoringRun.Purpose.PSEUDO:
            raise ServiceError(f"Scoring run {run_id} is not a pseudo-label run.", code="bad_option")
        if run.state != ScoringRun.State.DONE:
            raise ServiceError(f"Pseudo-label run {run_id} has not finished ({run.state}).", code="bad_option")
    names = stages.get("mos_studies") or []
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise ServiceError("mos_studies must be a list of rating study names.", code="bad_option")
    for name in names:
        if not Study.objects.filter(name=name, rating_task__isnull=False).exists():
            raise ServiceError(f"{name!r} is not a rating study.", code="bad_option")
    try:
        smoothing, mos_weight = float(stages.get("smoothing", DEFAULT_SMOOTHING)), float(stages.get("mos_weight", 1.0))
    except (TypeError, ValueError):
        raise ServiceError("smoothing and mos_weight must be numbers.", code="bad_option") from None
    if not 0.0 <= smoothing < 1.0:
        raise ServiceError(f"smoothing must be at least 0 and below 1; got {smoothing}.", code="bad_option")
    if not 0.0 <= mos_weight <= 100.0:
        raise ServiceError(f"mos_weight must be between 0 and 100; got {mos_weight}.", code="bad_option")
    if not runs and not names:
        return None
    return {"pseudo_runs": runs, "mos_studies": names, "smoothing": smoothing, "mos_weight": mos_weight}


def pseudo_vote_rows(*, run_ids: list[int]) -> list[dict]:
    """The kept labels of pseudo-label runs, one row per pair and run (clip shas, condition key, labels in clip terms)."""
    from .. import pseudo

    rows = []
    for run in ScoringRun.objects.filter(pk__in=run_ids).select_related("judge").order_by("pk"):
        for verdict, labels in pseudo.pseudo_labels(run):
            pair = verdict.pair
            rows.append(
                {
                    "run": run.pk, "pair_id": pair.pk, "clip_a": pair.clip_a.sha256, "clip_b": pair.clip_b.sha256, "condition": pair.condition.content_key,
                    **{f"label_{dim}": labels.get(dim) for dim in DIMENSIONS},
                }
            )  # fmt: skip
    return rows


def mos_rows(*, study_names: list[str]) -> list[dict]:
    """Mean rating per (clip, condition, dimension) of rating studies, normalised to [-1, 1] by each study's scale."""
    from annotation.ratings.models import RatingItem

    from ..ratings_report import ratings_frame

    out = {}
    for study in Study.objects.filter(name__in=study_names).select_related("rating_task").order_by("name"):
        frame = ratings_frame(study=study)
        # Regular items' rated clips only: gold, traps, hidden references and anchors are checks, not data.
        frame = frame[(frame["kind"] == RatingItem.Kind.REGULAR) & (frame["role"] == "test")]
        if frame.empty:
            continue
        low, high = study.rating_task.scale
        conditions = dict(RatingItem.objects.filter(pk__in=set(frame["item_id"])).values_list("pk", "condition__content_key"))
        shas = dict(Clip.objects.filter(pk__in=set(frame["clip_id"])).values_list("pk", "sha256"))
        frame = frame.assign(condition=[conditions[i] for i in frame["item_id"]])
        for (clip_id, condition, dim), value in frame.groupby(["clip_id", "condition", "dimension"])["value"].mean().items():
            if dim in DIMENSIONS:
                row = out.setdefault((shas[clip_id], condition), {"clip_a": shas[clip_id], "clip_b": shas[clip_id], "condition": condition})
                row[f"mos_{dim}"] = mos_normalise(value, low, high)
    return list(out.values())


def stage_data(*, stages: dict, pseudo_rows: list[dict], mos: list[dict], clip_index: dict, condition_index: dict, test_rows: list[dict]) -> StageData:
    """The stages' inputs for one split: pseudo-labels and MOS sharing no condition or clip with the split's test votes."""
    held = {r["condition"] for r in test_rows}
    held_clips = {r[k] for r in test_rows for k in ("clip_a", "clip_b")}
    free = lambda r: r["condition"] not in held and r["clip_a"] not in held_clips and r["clip_b"] not in held_clips  # noqa: E731
    kept = [r for r in pseudo_rows if free(r)]
    rated = [r for r in mos if free(r)]
    pseudo_votes = None
    if kept:
        target = [[TARGET.get(r[f"label_{dim}"], np.nan) for dim in DIMENSIONS] for r in kept]
        pseudo_votes = Votes([clip_index[r["clip_a"]] for r in kept], [clip_index[r["clip_b"]] for r in kept], [condition_index[r["condition"]] for r in kept], target)
    mos_targets = None
    if rated:
        mos_targets = MOSTargets([clip_index[r["clip_a"]] for r in rated], [condition_index[r["condition"]] for r in rated], [[r.get(f"mos_{dim}", np.nan) for dim in DIMENSIONS] for r in rated])
    return StageData(pseudo=pseudo_votes, mos=mos_targets, smoothing=stages["smoothing"], mos_weight=stages["mos_weight"])




def stages_card(options: dict, per_seed: list, rows) -> dict:
    """Both stages as trained: data sizes, sources, smoothing and losses (the first split seed's sizes)."""
    stages = options.get("stages")
    expert = {"votes": len(rows), "source": "the study's counted human votes", "loss": "Bradley–Terry log-loss"}
    if not stages:
        return {"two_stage": False, "stage2": expert}
    sizes = (per_seed[0].get("stages") if per_seed else None) or {}
    stage1 = None
    if stages["pseudo_runs"]:
        stage1 = {
            "source": [f"pseudo-label run {r} ({ScoringRun.objects.filter(pk=r).values_list('judge__key', flat=True).first()})" for r in stages["pseudo_runs"]],
            "votes": sizes.get("stage1_votes"),
            "label_smoothing": stages["smoothing"],
            "loss": "Bradley–Terry log-loss on smoothed targets y (1 - s) + s / 2",
            "note": "pseudo pairs sharing a condition or a clip with the test votes are left out",
        }
    stage2 = {
        **expert,
        "training_votes": sizes.get("stage2_votes"),
        "mos_studies": stages["mos_studies"],
        "mos_clips": sizes.get("mos_clips"),
        "mos_weight": stages["mos_weight"],
        "loss": "Bradley–Terry log-loss + mos_weight x mean squared error of tanh(a s + b) against MOS on [-1, 1]" if stages["mos_studies"] else "Bradley–Terry log-loss",
        "start": "the stage-1 network (its weights, standardiser and capacity), learning rate x 0.2" if stage1 else "from scratch",
    }
    return {"two_stage": stage1 is not None, "stage1": stage1, "stage2": stage2, "baselines": ["stage1_only", "stage2_only"] if stage1 else ["stage2_only"]}
