"""Writes for the scoring app: runs, per-clip cache, verdicts, comparisons, imports, hard negatives.

Work is idempotent by construction: a verdict is unique per (run, pair) and a clip score per
(judge, version, content hash, context), so a job that runs twice (a redelivered message after a
worker died) finds the first result and writes nothing new.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from pathlib import Path

import numpy as np
from django.db import IntegrityError, transaction
from django.db.models import Count, Exists, OuterRef, Q
from django.db.models.functions import Substr
from django.utils import timezone

from annotation.dataset.keys import export_hash_stem, export_path_names
from annotation.models import Clip, Condition, Judgment, Pair, Study
from common.errors import ServiceError

from . import broadcast, compare, pseudo, queueing
from . import study_rule as study_rule_check
from .catch_pairs import hard_negative_create, semantic_negative_create  # noqa: F401
from .evaluation import ALIGNMENT, MODEL_A, MODEL_B, MUSICALITY, VOTE, evaluate
from .exclusion import annotator_exclude, annotator_include  # noqa: F401
from .judges import ClipAudio, ConditionInput, JudgeOutputError, JudgeUnavailable, PairOutcome, adapter_for, models_relative, templates_for
from .judges.base import jsonable, pair_outcome, store_fill
from .models import ClipScore, ExternalResultRow, ExternalResultSet, Judge, ScoringRun, Verdict
from .selectors import run_comparison_rows, run_endpoint_usage, run_progress, run_verdict_stats, seeded_votes_on

logger = logging.getLogger(__name__)

# Errors that will not go away on retry: recorded as a failed verdict at once.
PERMANENT_ERRORS = (JudgeUnavailable, JudgeOutputError, ServiceError, ValueError, FileNotFoundError)


# --- Inputs ---------------------------------------------------------------------------------


def clip_audio(clip: Clip) -> ClipAudio:
    return ClipAudio(path=clip.file.path, sha256=clip.sha256, clip_id=clip.pk)


def condition_input(condition: Condition) -> ConditionInput:
    reference = clip_audio(condition.reference) if condition.reference_id else None
    return ConditionInput(prompt=condition.prompt, lyrics=condition.lyrics, reference=reference)


class ClipStore:
    """The ClipScore cache for one judge version: get_many / put_many by content hash and context."""

    def __init__(self, judge: Judge, version: str):
        self.judge, self.version = judge, version

    def get_many(self, shas: list[str], context: str) -> dict[str, dict]:
        rows = ClipScore.objects.filter(judge=self.judge, judge_version=self.version, context_key=context, clip_sha256__in=set(shas))
        return {sha: scores for sha, scores in rows.values_list("clip_sha256", "scores")}

    def put_many(self, scores: dict[str, dict], context: str) -> None:
        # ignore_conflicts: a concurrent worker that stored the same clip first wins; values are equal.
        ClipScore.objects.bulk_create(
            [ClipScore(judge=self.judge, judge_version=self.version, clip_sha256=sha, context_key=context, scores=jsonable(s)) for sha, s in scores.items()],
            ignore_conflicts=True,
        )


def judge_adapter(judge: Judge, *, template: str = ""):
    """The adapter with the ClipScore cache attached (unless the judge's options say cache: false)."""
    use_cache = (judge.options or {}).get("cache", True)
    adapter = adapter_for(judge, template=template)
    if use_cache:
        adapter.store = ClipStore(judge, adapter.cache_version())
    return adapter


def clip_scores_get_or_compute(*, adapter, clips: list[Clip], condition: Condition) -> dict[str, dict]:
    """Scores per clip hash under the condition, computing only clips the cache lacks (in one batch)."""
    cond = condition_input(condition)
    return store_fill(adapter.store, clips, adapter.context_key(cond), lambda missing: adapter.score_clips([clip_audio(c) for c in missing], cond))


# --- Verdicts --------------------------------------------------------------------------------


def outcome_from_scores(*, adapter, scores_a: dict, scores_b: dict) -> PairOutcome:
    """Per-clip scores -> pair labels with the tie-goes-to-B rule (the judges library's rule, shared with its offline command)."""
    return pair_outcome(adapter, scores_a, scores_b)


def _choice(pair: Pair, label: str | None) -> int | None:
    return {MODEL_A: pair.clip_a_id, MODEL_B: pair.clip_b_id}.get(label)


def verdict_store(*, run: ScoringRun, pair: Pair, outcome: PairOutcome) -> tuple[Verdict, bool]:
    """Store a pair's outcome in clip terms; the second call for the same (run, pair) stores nothing."""
    existing = Verdict.objects.filter(run=run, pair=pair).first()
    if existing is not None:
        return existing, False
    details = dict(outcome.details)
    # Labels in the pair's stored order, including both/neither, which no clip FK can hold.
    details["labels"] = dict(outcome.labels)
    details["template"] = run.template
    values = {}
    for dim in (ALIGNMENT, MUSICALITY):
        values[f"{dim}_choice_id"] = _choice(pair, outcome.labels.get(dim)) if outcome.status == "ok" else None
        a, b = outcome.scores.get(dim, (None, None))
        values[f"{dim}_score_a"], values[f"{dim}_score_b"] = a, b
    try:
        with transaction.atomic():
            verdict = Verdict.objects.create(
                run=run, pair=pair, status=outcome.status, rationale=outcome.rationale[:20000], details=jsonable(details), **values
            )
    except IntegrityError:
        return Verdict.objects.get(run=run, pair=pair), False
    return verdict, True


def pair_score(*, run_id: int, pair_id: int) -> Verdict:
    """Judge one pair of a run and store the verdict. Idempotent: a stored verdict is returned as is."""
    run = ScoringRun.objects.select_related("judge").get(pk=run_id)
    pair = Pair.objects.select_related("condition__reference", "clip_a", "clip_b").get(pk=pair_id)
    existing = Verdict.objects.filter(run=run, pair=pair).first()
    if existing is not None:
        return existing
    judge = run.judge
    _test_delay(judge)
    try:
        adapter = judge_adapter(judge, template=run.template)
        adapter.require()
        if adapter.pairwise:
            outcome = adapter.compare(clip_audio(pair.clip_a), clip_audio(pair.clip_b), condition_input(pair.condition))
        else:
            scores = clip_scores_get_or_compute(adapter=adapter, clips=[pair.clip_a, pair.clip_b], condition=pair.condition)
            outcome = outcome_from_scores(adapter=adapter, scores_a=scores[pair.clip_a.sha256], scores_b=scores[pair.clip_b.sha256])
    except PERMANENT_ERRORS as exc:
        outcome = PairOutcome(status="failed", details={"error": f"{type(exc).__name__}: {exc}", "raw": getattr(exc, "raw", "")})
    verdict, _ = verdict_store(run=run, pair=pair, outcome=outcome)
    run_progress_update(run_id=run.pk)
    return verdict


def pairs_score(*, run_id: int, pair_ids: list[int]) -> list[Verdict]:
    """Judge a chunk of a run's pairs in one job, storing each verdict and the run's progress once.

    A pairwise judge gets the chunk in one batched call (compare_many); a per-clip judge scores the
    chunk's missing clips in one batch per condition. Pairs that already have a verdict are skipped,
    so a redelivered chunk only finishes the rest. A malformed answer or an unreadable clip fails its
    own pair; an error that stops a pairwise call fails the chunk.
    """
    run = ScoringRun.objects.select_related("judge").get(pk=run_id)
    done = set(Verdict.objects.filter(run=run, pair_id__in=pair_ids).values_list("pair_id", flat=True))
    by_id = Pair.objects.select_related("condition__reference", "clip_a", "clip_b").in_bulk([p for p in pair_ids if p not in done])
    pairs = [by_id[p] for p in dict.fromkeys(pair_ids) if p in by_id]
    if pairs:
        _test_delay(run.judge)
        try:
            adapter = judge_adapter(run.judge, template=run.template)
            adapter.require()
            if adapter.pairwise:
                outcomes = adapter.compare_many([(clip_audio(p.clip_a), clip_audio(p.clip_b), condition_input(p.condition)) for p in pairs])
            else:
                outcomes = _per_clip_outcomes(adapter=adapter, pairs=pairs)
        except PERMANENT_ERRORS as exc:
            failed = {"error": f"{type(exc).__name__}: {exc}", "raw": getattr(exc, "raw", "")}
            outcomes = [PairOutcome(status="failed", details=dict(failed)) for _ in pairs]
        # One transaction for the chunk's verdicts: one commit instead of one per pair.
        with transaction.atomic():
            for pair, outcome in zip(pairs, outcomes):
                verdict_store(run=run, pair=pair, outcome=outcome)
        run_progress_update(run_id=run.pk)
    return list(Verdict.objects.filter(run=run, pair_id__in=pair_ids))


def _per_clip_outcomes(*, adapter, pairs: list[Pair]) -> list[PairOutcome]:
    """Outcomes of pairs under a per-clip judge: the missing clips of each condition in one batch.

    A batch that fails (an unreadable clip) is scored again pair by pair, so only the pairs whose
    clips cannot be scored fail, as they would in jobs of their own.
    """
    by_condition: dict[int, list[Pair]] = {}
    for pair in pairs:
        by_condition.setdefault(pair.condition_id, []).append(pair)
    outcomes: dict[int, PairOutcome] = {}
    for group in by_condition.values():
        clips = list({c.pk: c for p in group for c in (p.clip_a, p.clip_b)}.values())
        try:
            scores = clip_scores_get_or_compute(adapter=adapter, clips=clips, condition=group[0].condition)
        except PERMANENT_ERRORS:
            for pair in group:
                outcomes[pair.pk] = _per_clip_outcome_alone(adapter=adapter, pair=pair)
            continue
        for pair in group:
            outcomes[pair.pk] = outcome_from_scores(adapter=adapter, scores_a=scores[pair.clip_a.sha256], scores_b=scores[pair.clip_b.sha256])
    return [outcomes[p.pk] for p in pairs]


def _per_clip_outcome_alone(*, adapter, pair: Pair) -> PairOutcome:
    try:
        scores = clip_scores_get_or_compute(adapter=adapter, clips=[pair.clip_a, pair.clip_b], condition=pair.condition)
    except PERMANENT_ERRORS as exc:
        return PairOutcome(status="failed", details={"error": f"{type(exc).__name__}: {exc}", "raw": getattr(exc, "raw", "")})
    return outcome_from_scores(adapter=adapter, scores_a=scores[pair.clip_a.sha256], scores_b=scores[pair.clip_b.sha256])


def _test_delay(judge: Judge) -> None:
    """Test hook for the worker-recovery check: makes a job last long enough to kill its worker."""
    delay = float((judge.options or {}).get("sleep", 0) or 0)
    if delay > 0:
        time.sleep(min(delay, 600.0))


def pair_fail(*, run_id: int, pair_id: int, error: str) -> Verdict:
    """Record a pair whose job gave up after its retries, so the run can finish."""
    run = ScoringRun.objects.get(pk=run_id)
    pair = Pair.objects.get(pk=pair_id)
    verdict, _ = verdict_store(run=run, pair=pair, outcome=PairOutcome(status="failed", details={"error": error[:5000]}))
    run_progress_update(run_id=run_id)
    return verdict


def clips_prewarm(*, run_id: int, condition_id: int, clip_ids: list[int]) -> int:
    """Fill the clip cache for a batch of clips under one condition (one batched model call). Returns clips computed."""
    run = ScoringRun.objects.select_related("judge").get(pk=run_id)
    adapter = judge_adapter(run.judge, template=run.template)
    if adapter.pairwise or adapter.store is None:
        return 0
    condition = Condition.objects.select_related("reference").get(pk=condition_id)
    clips = list(Clip.objects.filter(pk__in=clip_ids))
    before = len(adapter.store.get_many([c.sha256 for c in clips], adapter.context_key(condition_input(condition))))
    try:
        clip_scores_get_or_compute(adapter=adapter, clips=clips, condition=condition)
    except PERMANENT_ERRORS as exc:
        # The pair jobs meet the same error and record it per pair; nothing to store here.
        logger.warning("prewarm of run %s failed: %s", run_id, exc)
        return 0
    return len(clips) - before


# --- Runs ------------------------------------------------------------------------------------


def _scope_pairs(*, study: Study | None, pair_ids, external_set: ExternalResultSet | None) -> list[int]:
    given = [x is not None for x in (study, pair_ids, external_set)]
    if sum(given) != 1:
        raise ServiceError("Choose what to score: a study, a list of pair ids, or an imported result set (exactly one).", code="bad_scope")
    if pair_ids is not None:
        if not isinstance(pair_ids, (list, tuple)) or not pair_ids or not all(isinstance(p, int) and not isinstance(p, bool) for p in pair_ids):
            raise ServiceError("pair_ids must be a non-empty list of integer pair ids.", code="bad_pairs")
        wanted = list(dict.fromkeys(pair_ids))
        found = set(Pair.objects.filter(pk__in=wanted).values_list("pk", flat=True))
        missing = [p for p in wanted if p not in found]
        if missing:
            raise ServiceError(f"Unknown pair id(s): {', '.join(map(str, missing[:20]))}.", code="unknown_pairs")
        return wanted
    if study is not None:
        ids = list(Pair.objects.filter(study=study).order_by("pk").values_list("pk", flat=True))
        if not ids:
            raise ServiceError(f"Study {study.name} has no pairs to score.", code="empty_scope")
        return ids
    ids = list(dict.fromkeys(external_set.rows.filter(pair__isnull=False).order_by("row_index").values_list("pair_id", flat=True)))
    if not ids:
        raise ServiceError(f"No row of {external_set.name} is linked to a stored pair (import the dataset's audio first).", code="empty_scope")
    return ids


def run_create(
    *,
    judge: Judge,
    study: Study | None = None,
    pair_ids: list[int] | None = None,
    external_set: ExternalResultSet | None = None,
    template: str = "",
    group: str = "",
    label: str = "",
    user=None,
    study_rule: bool = True,
) -> ScoringRun:
    """Create a run and queue it once the transaction commits. Refuses judges that cannot run here, and a signed-in
    user who may not change a study in scope (study_rule=False only where the caller has its own rule: benchmarks)."""
    if not judge.enabled:
        raise ServiceError(f"Judge {judge.key} is disabled.", code="judge_disabled")
    adapter = adapter_for(judge)
    state = adapter.availability()
    if not state.available:
        raise ServiceError(f"Judge {judge.key} is unavailable: {models_relative(state.reason)}", code="judge_unavailable", status=409)
    allowed = templates_for(judge.kind)
    template = (template or "").strip()
    if template and template not in allowed:
        hint = f"use one of {', '.join(allowed)}" if allowed else "this judge has no prompt templates"
        raise ServiceError(f"Unknown template {template!r}: {hint}.", code="bad_template")
    ids = _scope_pairs(study=study, pair_ids=pair_ids, external_set=external_set)
    if study_rule and getattr(user, "is_authenticated", False):
        study_rule_check.run_scope_check(user=user, study=study, pair_ids=ids)
    if study is None:
        studies = set(Pair.objects.filter(pk__in=ids).values_list("study_id", flat=True))
        study = Study.objects.get(pk=studies.pop()) if len(studies) == 1 else None
    with transaction.atomic():
        run = ScoringRun.objects.create(
            judge=judge,
            study=study,
            label=label[:200],
            template=template,
            group=group[:60],
            pair_ids=ids,
            total=len(ids),
            created_by=user if getattr(user, "is_authenticated", False) else None,
        )
        transaction.on_commit(lambda: queueing.task(queueing.RUN_START).delay(run.pk))
    return run


def run_create_templates(*, judge: Judge, templates: list[str], user=None, label: str = "", **scope) -> list[ScoringRun]:
    """One run per paraphrased template, sharing a group so their spread is measured when all finish."""
    allowed = templates_for(judge.kind)
    if not templates or not isinstance(templates, (list, tuple)):
        raise ServiceError("templates must be a non-empty list.", code="bad_template")
    unknown = [t for t in templates if t not in allowed]
    if unknown or len(set(templates)) != len(templates):
        raise ServiceError(f"templates must be distinct names from: {', '.join(allowed) or '(none for this judge)'}.", code="bad_template")
    group = f"{judge.key}-{timezone.now():%Y%m%d%H%M%S}-{hashlib.sha256(repr(sorted(templates)).encode()).hexdigest()[:6]}"
    with transaction.atomic():
        return [run_create(judge=judge, template=t, group=group, label=label or f"template {t}", user=user, **scope) for t in templates]


def unvoted_pair_ids(*, study: Study) -> list[int]:
    """The study's regular pairs that have no vote at all (seeded, imported or cast here)."""
    voted = Judgment.objects.filter(pair=OuterRef("pk"))
    return list(Pair.objects.filter(study=study, kind=Pair.Kind.REGULAR).exclude(Exists(voted)).order_by("pk").values_list("pk", flat=True))


def pseudo_run_create(*, judge: Judge, study: Study | None = None, pair_ids: list[int] | None = None, user=None, label: str = "") -> ScoringRun:
    """A pseudo-label run over a study's unvoted pairs or the given pairs (which must have no votes)."""
    if (study is None) == (pair_ids is None):
        raise ServiceError("Choose the pool: a study (its pairs without votes) or a list of pair ids (exactly one).", code="bad_scope")
    if study is not None:
        pair_ids = unvoted_pair_ids(study=study)
        if not pair_ids:
            raise ServiceError(f"Study {study.name} has no regular pairs without votes to pseudo-label.", code="empty_scope")
    elif isinstance(pair_ids, (list, tuple)):
        voted = sorted(set(Judgment.objects.filter(pair_id__in=[p for p in pair_ids if isinstance(p, int)]).values_list("pair_id", flat=True)))
        if voted:
            raise ServiceError(f"Pseudo-labels are for pairs without votes; these have votes: {', '.join(map(str, voted[:20]))}.", code="voted_pairs")
    run = run_create(judge=judge, pair_ids=pair_ids, user=user, label=label or "pseudo-labels")
    ScoringRun.objects.filter(pk=run.pk).update(purpose=ScoringRun.Purpose.PSEUDO)
    run.purpose = ScoringRun.Purpose.PSEUDO
    return run



def run_dispatch(*, run_id: int) -> dict:
    """Queue a run's jobs: clip-cache batches first (per-clip judges on a GPU), then one job per chunk of pairs."""
    run = ScoringRun.objects.select_related("judge").get(pk=run_id)
    if run.state in (ScoringRun.State.DONE, ScoringRun.State.FAILED):
        return {"queued": 0}
    ScoringRun.objects.filter(pk=run.pk, state=ScoringRun.State.PENDING).update(state=ScoringRun.State.RUNNING)
    queue = run.judge.options.get("queue") or run.judge.queue
    adapter = adapter_for(run.judge)
    done = set(run.verdicts.values_list("pair_id", flat=True))
    todo = [p for p in run.pair_ids if p not in done]
    jobs: list[tuple[str, tuple]] = []
    options = run.judge.options or {}
    # Prewarm fills the clip cache in device-sized batches across conditions; a CPU judge gains nothing
    # from that (its chunks score their own clips in one batch) and would compute clips twice meanwhile.
    prewarm = options.get("prewarm", run.judge.queue == Judge.Queue.GPU)
    if not adapter.pairwise and options.get("cache", True) and prewarm:
        # Clips per prewarm job: more than one GPU batch (option batch_size, read by the adapter),
        # so a job keeps the device busy for a while instead of paying its overhead per batch.
        size = max(1, int(options.get("prewarm_clips", 64)))
        by_condition: dict[int, list[int]] = {}
        for pid, cond, a, b in Pair.objects.filter(pk__in=todo).values_list("pk", "condition_id", "clip_a_id", "clip_b_id"):
            bucket = by_condition.setdefault(cond, [])
            bucket += [c for c in (a, b) if c not in bucket]
        for cond, clip_ids in by_condition.items():
            jobs += [(queueing.CLIPS_PREWARM, (run.pk, cond, clip_ids[start : start + size])) for start in range(0, len(clip_ids), size)]
    batches = len(jobs)
    for chunk in queueing.run_chunks(run=run, pair_ids=todo, pairwise=adapter.pairwise):
        # A chunk of one goes out as the single-pair job, which records a pair's failure on its own.
        jobs.append((queueing.PAIRS_SCORE, (run.pk, chunk)) if len(chunk) > 1 else (queueing.PAIR_SCORE, (run.pk, chunk[0])))
    for name, args in jobs:
        queueing.task(name).apply_async(args, queue=queue)
    if not todo:
        run_progress_update(run_id=run.pk)
    return {"queued": len(todo), "prewarm_batches": batches}


def run_progress_update(*, run_id: int) -> dict:
    """Recount from the verdicts (not +1 per job, so a repeated job cannot count twice) and push to open run pages."""
    finished = False
    with transaction.atomic():
        run = ScoringRun.objects.select_for_update().get(pk=run_id)
        counts = run.verdicts.aggregate(failed=Count("id", filter=Q(status=Verdict.Status.FAILED)), total=Count("id"))
        run.failed = counts["failed"]
        run.done = counts["total"] - counts["failed"]
        fields = ["done", "failed"]
        if run.done + run.failed >= run.total and run.state != ScoringRun.State.DONE:
            run.state, run.finished_at = ScoringRun.State.DONE, timezone.now()
            fields += ["state", "finished_at"]
            finished = True
        run.save(update_fields=fields)
        progress = run_progress(run)
        transaction.on_commit(lambda: broadcast.run_progress_broadcast(progress))
    if finished:
        run_compare(run=run)
        if run.group:
            group_spread_update(group=run.group)
        if run.study_id:  # a study served where judges disagree re-ranks once a judge has answered
            transaction.on_commit(lambda: queueing.task(queueing.SELECTION_REFRESH).delay(run.study_id, "run"), robust=True)
        # After the comparison is stored: open report pages fetch the new judge with its figures.
        transaction.on_commit(lambda: broadcast.report_run_finished(study_id=run.study_id, pair_ids=run.pair_ids), robust=True)
    return progress


# --- Comparison with humans --------------------------------------------------------------------


def run_compare(*, run: ScoringRun) -> dict:
    """Compute and store the run's comparison with the human votes on its pairs (one unit per vote)."""
    rows = run_comparison_rows(run=run)
    summary = {
        "computed_at": timezone.now().isoformat(),
        "judge": run.judge.key,
        "dimensions": list(adapter_for(run.judge).dimensions),
        "human_rows": len(rows),
        "seeded_left_out": seeded_votes_on(run=run),
        "preference": evaluate(rows, view=VOTE),
        "verdicts": run_verdict_stats(run=run),
        # Both orders of each verdict: the judge's first / second / tie shares and its consistency rate (scoring/pseudo.py).
        "position_bias": pseudo.run_bias(run)["table"],
    }
    usage = run_endpoint_usage(run=run)
    if usage is not None:
        summary["endpoint"] = usage
    if run.group and run.summary.get("template_spread"):
        summary["template_spread"] = run.summary["template_spread"]
    ScoringRun.objects.filter(pk=run.pk).update(summary=jsonable(summary))
    run.summary = summary
    return summary


def group_spread_update(*, group: str) -> dict | None:
    """When every run of a template group is done: per-pair spread of the judge's margin across templates.

    The margin is score(A) - score(B) per dimension; its std and range across templates, and the
    share of templates agreeing with the most common label, are stored on each verdict
    (details["template_spread"]) and summarised on each run (summary["template_spread"]).
    """
    runs = list(ScoringRun.objects.filter(group=group).order_by("template"))
    if len(runs) < 2 or any(r.state != ScoringRun.State.DONE for r in runs):
        return None
    by_pair: dict[int, list[Verdict]] = {}
    for verdict in Verdict.objects.filter(run__in=runs).select_related("run"):
        by_pair.setdefault(verdict.pair_id, []).append(verdict)
    per_dim: dict[str, dict[str, list[float]]] = {d: {"std": [], "range": [], "agreement": []} for d in (ALIGNMENT, MUSICALITY)}
    updates = []
    for pair_id, verdicts in by_pair.items():
        spread = {}
        for dim in (ALIGNMENT, MUSICALITY):
            margins = [
                getattr(v, f"{dim}_score_a") - getattr(v, f"{dim}_score_b")
                for v in verdicts
                if getattr(v, f"{dim}_score_a") is not None and getattr(v, f"{dim}_score_b") is not None
            ]
            labels = [(v.details or {}).get("labels", {}).get(dim) for v in verdicts]
            labels = [lab for lab in labels if lab]
            if len(margins) < 2 and len(labels) < 2:
                continue
            entry = {"n_templates": len(verdicts)}
            if len(margins) >= 2:
                entry["margin_std"] = float(np.std(margins, ddof=1))
                entry["margin_range"] = float(max(margins) - min(margins))
                per_dim[dim]["std"].append(entry["margin_std"])
                per_dim[dim]["range"].append(entry["margin_range"])
            if labels:
                top = max(set(labels), key=labels.count)
                entry["label_agreement"] = labels.count(top) / len(verdicts)
                per_dim[dim]["agreement"].append(entry["label_agreement"])
            spread[dim] = entry
        for verdict in verdicts:
            verdict.details = {**(verdict.details or {}), "template_spread": spread}
            updates.append(verdict)
    Verdict.objects.bulk_update(updates, ["details"], batch_size=500)
    summary = {
        "group": group,
        "templates": [r.template or "default" for r in runs],
        "runs": [r.pk for r in runs],
        "pairs": len(by_pair),
        **{
            dim: {
                "mean_margin_std": float(np.mean(v["std"])) if v["std"] else None,
                "mean_margin_range": float(np.mean(v["range"])) if v["range"] else None,
                "mean_label_agreement": float(np.mean(v["agreement"])) if v["agreement"] else None,
            }
            for dim, v in per_dim.items()
        },
    }
    for run in runs:
        run.summary = {**(run.summary or {}), "template_spread": summary}
        run.save(update_fields=["summary"])
    return summary


# --- External results (TuneJury-shaped) ---------------------------------------------------------


def external_results_import(*, path: str | Path, name: str = "", judge_name: str = "") -> tuple[ExternalResultSet, bool]:
    """Import a per-row results file. The same file again returns the stored set and changes nothing."""
    path = Path(path)
    if not path.is_file():
        raise ServiceError(f"No such file: {path}", code="missing_file")
    data = path.read_bytes()
    sha = hashlib.sha256(data).hexdigest()
    existing = ExternalResultSet.objects.filter(sha256=sha).first()
    if existing is not None:
        return existing, False
    try:
        parsed = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ServiceError(f"{path.name} is not valid JSON: {exc}", code="bad_json") from None
    raw_rows = parsed.get("rows") if isinstance(parsed, dict) else parsed
    if not isinstance(raw_rows, list) or not raw_rows:
        raise ServiceError(f"{path.name} holds no rows (expected a list, or an object with a 'rows' list).", code="no_rows")
    rows = [compare.external_row_parse(i, r) for i, r in enumerate(raw_rows)]
    name = (name or path.stem).strip()[:200]
    if ExternalResultSet.objects.filter(name=name).exists():
        raise ServiceError(f"A result set named {name!r} exists with different content; choose another name.", code="name_taken", status=409)
    published = parsed.get("summary", {}) if isinstance(parsed, dict) else {}
    with transaction.atomic():
        result_set = ExternalResultSet.objects.create(
            name=name,
            judge_name=judge_name[:200] or name,
            source_file=str(path)[:500],
            sha256=sha,
            published_summary=jsonable(published) if isinstance(published, dict) else {},
            computed_summary=jsonable(compare.external_summary(rows)),
        )
        ExternalResultRow.objects.bulk_create([ExternalResultRow(result_set=result_set, **row) for row in rows], batch_size=1000)
        _external_link_pairs(result_set)
    return result_set, True


def _clips_by_export_name(names: set[str]) -> dict[str, int]:
    """Clips named by the paths an export gives them (`gen-audio/<hash><ext>`); a prefix naming two clips links neither."""
    stems = {name: stem for name in names if (stem := export_hash_stem(name))}
    if not stems:
        return {}
    found: dict[str, list[tuple[int, str, str]]] = {}
    query = Clip.objects.annotate(prefix=Substr("sha256", 1, 16)).filter(prefix__in={s[:16] for s in stems.values()})
    for pk, sha, extension in query.values_list("pk", "sha256", "extension"):
        found.setdefault(sha[:16], []).append((pk, sha, extension))
    out = {}
    for name, stem in stems.items():
        matches = [pk for pk, sha, extension in found.get(stem[:16], []) if export_path_names(name, sha256=sha, extension=extension)]
        if len(matches) == 1:
            out[name] = matches[0]
    return out


def _external_link_pairs(result_set: ExternalResultSet) -> int:
    """Link rows whose two audio paths name the clips of a stored pair: by their import names, or as an export names them."""
    rows = list(result_set.rows.exclude(audio_b=""))
    names = {r.audio_a for r in rows} | {r.audio_b for r in rows}
    clip_by_name: dict[str, int] = {}
    names_list = list(names)
    for start in range(0, len(names_list), 500):
        for pk, original in Clip.objects.filter(original_name__in=names_list[start : start + 500]).values_list("pk", "original_name"):
            clip_by_name.setdefault(original, pk)
    for name, pk in _clips_by_export_name(names - clip_by_name.keys()).items():
        clip_by_name[name] = pk
    if not clip_by_name:
        return 0
    keys = {}
    for row in rows:
        a, b = clip_by_name.get(row.audio_a), clip_by_name.get(row.audio_b)
        if a and b and a != b:
            keys[row.pk] = Pair.key_for(a, b)
    pair_by_key = dict(Pair.objects.filter(clip_key__in=set(keys.values())).values_list("clip_key", "pk"))
    linked = []
    for row in rows:
        pair_id = pair_by_key.get(keys.get(row.pk))
        if pair_id:
            row.pair_id = pair_id
            linked.append(row)
    ExternalResultRow.objects.bulk_update(linked, ["pair"], batch_size=1000)
    return len(linked)


# --- Hard negatives and catch pairs: scoring/catch_pairs.py (re-exported here for callers of services.*) ---------


# --- Annotator exclusion: scoring/exclusion.py (re-exported here for callers of services.*) ---------------


# --- Judges ------------------------------------------------------------------------------------

DEFAULT_JUDGES = [
    {"key": "signal-technical", "kind": Judge.Kind.SIGNAL, "queue": Judge.Queue.CPU},
    # Learned judges, weights looked up under AUDITORIUM_MODEL_DIR in their authors' layout;
    # listed as unavailable, with the layout they expect, until the weights are there.
    {"key": "muq-mulan", "kind": Judge.Kind.MUQ_MULAN, "queue": Judge.Queue.GPU, "weights": "MuQ-MuLan-large"},
    {"key": "songeval", "kind": Judge.Kind.SONGEVAL, "queue": Judge.Queue.GPU, "weights": "SongEval"},
    {"key": "cmi-rm", "kind": Judge.Kind.CMI_RM, "queue": Judge.Queue.GPU, "weights": "CMI-RM"},
    {"key": "audiobox-aesthetics", "kind": Judge.Kind.AESTHETICS, "queue": Judge.Queue.GPU, "weights": "audiobox-aesthetics"},
]


def judges_warm(*, keys: list[str]) -> dict[str, str]:
    """Load the named judges' models into this worker process and run a tiny input through each.

    Returns {key: "ok" or why not}. A judge that asks for CUDA on a machine without it is refused
    here with the reason, and its jobs fail with the same message.
    """
    results = {}
    for key in keys:
        judge = Judge.objects.filter(key=key).first()
        if judge is None:
            results[key] = "no such judge"
            continue
        try:
            judge_adapter(judge).warm()
        except PERMANENT_ERRORS as exc:
            results[key] = f"{type(exc).__name__}: {exc}"
        else:
            results[key] = "ok"
    return results


def judges_ensure_defaults() -> list[Judge]:
    """The default judges: the weight-free signal judge, and the learned ones that load from
    AUDITORIUM_MODEL_DIR (unavailable, with the reason, until their weights are there)."""
    out = []
    for spec in DEFAULT_JUDGES:
        judge, _ = Judge.objects.get_or_create(key=spec["key"], defaults={k: v for k, v in spec.items() if k != "key"})
        out.append(judge)
    return out


