"""Reads for the scoring app: judges with availability, runs, verdicts, and rows for comparison."""

from __future__ import annotations

from django.db.models import Count, IntegerField, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce
from django.http import Http404

from annotation.access import runs_visible_to, studies_visible_to, trainings_visible_to
from annotation.models import Judgment, Study
from annotation.selectors import judgments_without_seeded

from .evaluation import ALIGNMENT, MODEL_A, MODEL_B, MUSICALITY
from .judges import adapter_for, templates_for
from .judges.base import models_relative
from .models import ExternalResultSet, Judge, ScoringRun, TrainingRun, Verdict


def gpu_precision(adapter) -> str:
    """"bf16" / "fp32" / "fp16": what the judge runs in on a GPU (its dtype option, else its cuda_dtype); "" for
    judges without a model."""
    from .judges.device import SHORT, dtype_name

    if not adapter.needs_weights or adapter.kind in ("external", "reward"):
        return ""
    try:
        return SHORT[dtype_name(adapter.options.get("dtype"), "cuda", cuda_default=adapter.cuda_dtype)]
    except ValueError:
        return ""


def judge_list() -> list[dict]:
    """Every configured judge with what it measures and whether it can run here (and if not, why)."""
    out = []
    for judge in Judge.objects.all():
        adapter = adapter_for(judge)
        state = adapter.availability()
        out.append(
            {
                "judge": judge,
                "key": judge.key,
                "kind": judge.kind,
                "title": adapter.title,
                "measures": adapter.measures,
                "dimensions": list(adapter.dimensions),
                "modalities": list(adapter.modalities),
                "pairwise": adapter.pairwise,
                "queue": judge.queue,
                "weights": models_relative(judge.weights),
                "version": judge.version,
                "enabled": judge.enabled,
                "available": state.available and judge.enabled,
                "reason": models_relative(state.reason) if state.available is False else ("" if judge.enabled else "disabled"),
                "templates": list(templates_for(judge.kind)),
                "gpu_precision": gpu_precision(adapter),
            }
        )
    return out


def judges_runnable() -> list[Judge]:
    """Judges a run can be started for now (what services.run_create checks: enabled, and the adapter finds its
    weights and runtime); imported results are never run."""
    judges = Judge.objects.filter(enabled=True).exclude(kind=Judge.Kind.EXTERNAL).order_by("key")
    return [judge for judge in judges if adapter_for(judge).availability().available]


def run_list(*, study=None, user=None, limit: int = 100):
    """The latest runs; with `user`, only those of studies the user may reach (annotation.access)."""
    query = ScoringRun.objects.select_related("judge", "study")
    if study is not None:
        query = query.filter(study=study)
    if user is not None:
        query = runs_visible_to(query, user=user)
    return query[:limit]


def run_allowed(kwargs: dict, user) -> bool:
    """The study rule for a URL naming a run (`run_id`); a run that does not exist is 404."""
    if not ScoringRun.objects.filter(pk=kwargs.get("run_id")).exists():
        raise Http404("No such run.")
    return runs_visible_to(ScoringRun.objects.filter(pk=kwargs.get("run_id")), user=user).exists()


def training_allowed(kwargs: dict, user) -> bool:
    """The study rule for a URL naming a training (`training_id`); a training that does not exist is 404."""
    if not TrainingRun.objects.filter(pk=kwargs.get("training_id")).exists():
        raise Http404("No such training.")
    return trainings_visible_to(TrainingRun.objects.filter(pk=kwargs.get("training_id")), user=user).exists()


def run_progress(run: ScoringRun) -> dict:
    """What a run page shows live: state and counts (also pushed by broadcast.run_progress_broadcast)."""
    return {
        "run": run.pk,
        "state": run.state,
        "total": run.total,
        "done": run.done,
        "failed": run.failed,
        "remaining": max(run.total - run.done - run.failed, 0),
        "finished_at": run.finished_at.isoformat() if run.finished_at else None,
    }


def training_list(*, user=None, limit: int = 20):
    query = TrainingRun.objects.select_related("study", "feature_judge", "judge")
    if user is not None:
        query = trainings_visible_to(query, user=user)
    return query[:limit]


def training_progress(run: TrainingRun) -> dict:
    """What a training page shows live (also pushed by broadcast.training_progress_broadcast)."""
    heldout = (run.metrics or {}).get("heldout", {})
    return {
        "training": run.pk,
        "state": run.state,
        "stage": run.stage,
        "step": run.step,
        "steps": run.steps,
        "judge": run.judge.key if run.judge_id else None,
        "headline": heldout.get("headline"),
        "error": run.error[:500],
    }


def run_verdicts(*, run: ScoringRun, limit: int = 500):
    return run.verdicts.select_related("pair__condition", "alignment_choice", "musicality_choice").order_by("id")[:limit]


def run_verdict_stats(*, run: ScoringRun) -> dict:
    """Status counts, the share discarded for position inconsistency, and per-dimension consistency."""
    statuses = {s: 0 for s in Verdict.Status.values}
    inconsistent = {ALIGNMENT: 0, MUSICALITY: 0}
    asked = 0
    catch_hits = {ALIGNMENT: [], MUSICALITY: []}
    # Catch pairs by what makes the wrong answer wrong: a judge that hears noise may not hear a wrong instrument.
    by_kind: dict[str, dict[str, list[bool]]] = {}
    for status, details, kind, exp_a, exp_m, choice_a, choice_m, spec in run.verdicts.values_list(
        "status",
        "details",
        "pair__kind",
        "pair__expected_alignment_id",
        "pair__expected_musicality_id",
        "alignment_choice_id",
        "musicality_choice_id",
        "pair__catch_spec",
    ):
        statuses[status] += 1
        consistent = (details or {}).get("consistent")
        if consistent:
            asked += 1
            for dim in inconsistent:
                inconsistent[dim] += 0 if consistent.get(dim) else 1
        if kind in ("catch", "gold") and status == Verdict.Status.OK:
            for dim, expected, choice in ((ALIGNMENT, exp_a, choice_a), (MUSICALITY, exp_m, choice_m)):
                if expected is not None and choice is not None:
                    catch_hits[dim].append(choice == expected)
                    if kind == "catch":
                        label = catch_kind_label(spec)
                        by_kind.setdefault(label, {ALIGNMENT: [], MUSICALITY: []})[dim].append(choice == expected)
    total = sum(statuses.values())
    return {
        "counts": statuses,
        "total": total,
        "discarded_share": (statuses["discarded"] / total) if total else None,
        "failed_share": (statuses["failed"] / total) if total else None,
        # Among pairs asked in both orders: share whose label flipped with the order, per dimension.
        "inconsistent_share": {dim: (n / asked) if asked else None for dim, n in inconsistent.items()},
        "catch_accuracy": {dim: ({"accuracy": sum(v) / len(v), "n": len(v)} if v else None) for dim, v in catch_hits.items()},
        "catch_by_kind": {label: {dim: _share_with_interval(v) for dim, v in hits.items()} for label, hits in sorted(by_kind.items())},
    }


def _share_with_interval(hits: list[bool]) -> dict | None:
    """Share right with its Wilson 95 % interval (scipy's): a handful of catch pairs per kind is common."""
    if not hits:
        return None
    from scipy.stats import binomtest

    k, n = sum(hits), len(hits)
    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    return {"accuracy": k / n, "n": n, "ci": [float(ci.low), float(ci.high)]}


def catch_kind_label(spec: dict | None) -> str:
    """"noise", "semantic: instrument", ...; "unlabelled" for catch pairs made before kinds were recorded or imported."""
    spec = spec or {}
    kind = spec.get("kind")
    if not kind:
        return "unlabelled"
    return f"{kind}: {spec['attribute']}" if kind == "semantic" and spec.get("attribute") else str(kind)


def run_endpoint_usage(*, run: ScoringRun) -> dict | None:
    """Cost and latency of an endpoint judge's requests behind a run's verdicts; None for judges run here.

    A pairwise judge stores its requests' records on each verdict; a per-clip judge on each clip score, which
    pairs share, so each clip counts once (a clip score cached by an earlier run counts with its original
    requests). Tokens are the server's `usage`; the estimated cost uses the judge's options
    `usd_per_1k_prompt_tokens` and `usd_per_1k_completion_tokens` when set."""
    parts: list[dict] = []
    seen: set[int] = set()
    for details, clip_a, clip_b in run.verdicts.values_list("details", "pair__clip_a_id", "pair__clip_b_id"):
        details = details or {}
        if isinstance(details.get("endpoint"), dict):
            parts.append(details["endpoint"])
        for side, clip in (("clip_a", clip_a), ("clip_b", clip_b)):
            usage = (details.get(side) or {}).get("endpoint") if isinstance(details.get(side), dict) else None
            if isinstance(usage, dict) and clip not in seen:
                seen.add(clip)
                parts.append(usage)
    if not parts:
        return None
    import numpy as np

    latencies = np.asarray([x for p in parts for x in p.get("latency_s", [])], dtype=float)
    total = {k: sum(int(p.get(k, 0)) for p in parts) for k in ("requests", "failed", "attempts", "prompt_tokens", "completion_tokens")}
    options = run.judge.options or {}
    prices = [options.get("usd_per_1k_prompt_tokens"), options.get("usd_per_1k_completion_tokens")]
    cost = None
    if any(isinstance(p, (int, float)) for p in prices):
        cost = sum(float(p or 0) * total[k] / 1000 for p, k in zip(prices, ("prompt_tokens", "completion_tokens")))
    statuses = dict(run.verdicts.values_list("status").annotate(n=Count("id")).values_list("status", "n"))
    return {
        **total,
        "retries": total["attempts"] - total["requests"],
        "total_tokens": total["prompt_tokens"] + total["completion_tokens"],
        "latency_p50_s": float(np.percentile(latencies, 50)) if len(latencies) else None,
        "latency_p95_s": float(np.percentile(latencies, 95)) if len(latencies) else None,
        "bounded_yes_no": sum(int(p.get("bounded", 0)) for p in parts),
        "failed_verdicts": int(statuses.get(Verdict.Status.FAILED, 0)),
        "estimated_cost_usd": cost,
    }


def _label_for(pair_clip_a: int, pair_clip_b: int, clip_id: int | None) -> str | None:
    if clip_id == pair_clip_a:
        return MODEL_A
    if clip_id == pair_clip_b:
        return MODEL_B
    return None


def seeded_votes_on(*, run: ScoringRun) -> int:
    """The demo's seeded votes on the pairs a run judged: left out of its comparison with humans."""
    judged = Verdict.objects.filter(run=run).values("pair_id")
    return Judgment.objects.filter(pair_id__in=judged, source=Judgment.Source.SEEDED).count()


def run_comparison_rows(*, run: ScoringRun) -> list[dict]:
    """One row per counted human vote on a pair the run judged: evaluation's plain rows.

    Votes of annotators who withdrew consent or were excluded by a researcher are left out, and so are the demo's
    seeded votes (`seeded_votes_on` counts them for the page).
    """
    verdicts = {
        v.pair_id: v
        for v in Verdict.objects.filter(run=run).select_related("pair__condition")
    }
    if not verdicts:
        return []
    judgments = (
        judgments_without_seeded(Judgment.objects.filter(pair_id__in=verdicts.keys()))
        .exclude(Q(annotator__annotator_profile__withdrawn_at__isnull=False) | Q(annotator__annotator_profile__excluded_at__isnull=False))
        .values_list(
            "pair_id", "annotator_id", "alignment_choice_id", "musicality_choice_id", "alignment_tie", "musicality_tie", "alignment_confidence", "musicality_confidence"
        )
    )
    rows = []
    for pair_id, annotator_id, align_choice, music_choice, align_tie, music_tie, align_conf, music_conf in judgments:
        verdict = verdicts[pair_id]
        pair = verdict.pair
        labels = (verdict.details or {}).get("labels", {}) if verdict.status == Verdict.Status.OK else {}
        rows.append(
            {
                "pair_id": pair_id,
                "annotator_id": annotator_id,
                "modality": pair.condition.modality,
                "pred_alignment": labels.get(ALIGNMENT),
                "pred_musicality": labels.get(MUSICALITY),
                # An imported both / neither stays as given; evaluation reads either as BOTH.
                "label_alignment": align_tie or _label_for(pair.clip_a_id, pair.clip_b_id, align_choice),
                "label_musicality": music_tie or _label_for(pair.clip_a_id, pair.clip_b_id, music_choice),
                "confidence_alignment": float(align_conf),
                "confidence_musicality": float(music_conf),
                "status": verdict.status,
            }
        )
    return rows


def external_set_rows(*, result_set: ExternalResultSet) -> list[dict]:
    """Rows of an imported set in the shape compare.external_summary takes."""
    return list(result_set.rows.values("row_index", "subset", "audio_a", "audio_b", "scores_a", "scores_b", "human", "pair_id"))


def _count_per_study(queryset, field: str = "study"):
    # One subquery per figure: joining pairs, votes and runs at once would multiply the rows.
    counted = queryset.filter(**{field: OuterRef("pk")}).order_by().values(field).annotate(n=Count("pk")).values("n")
    return Coalesce(Subquery(counted, output_field=IntegerField()), 0)


def studies_for_reports(*, user=None):
    """Every study (with `user`: every study the user may reach) with what its report rests on: pairs (the study's own counter), human votes and scoring runs."""
    studies = Study.objects.all() if user is None else studies_visible_to(user=user)
    return studies.annotate(
        n_judgments=_count_per_study(Judgment.objects.all(), "pair__study"),
        n_runs=_count_per_study(ScoringRun.objects.all()),
    ).order_by("name")
