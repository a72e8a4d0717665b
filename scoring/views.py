"""HTML pages for researchers: the judges and their availability, runs (launch, list), a run's live page, a study's report."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.dateparse import parse_datetime
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from annotation.access import studies_visible_to, study_required
from annotation.models import AnnotatorProfile, Study
from common.errors import ServiceError
from common.guards import researcher_required

from . import selectors, services
from .agreement import THRESHOLD_HELP
from .evaluation import BUCKETS, DIMENSIONS, MODALITIES
from .models import Judge, ScoringRun, TrainingRun
from .report import ReportOptions, report_build, report_options_parse
from .report_tables import TABLES
from .results_section import compare_section, plan_section, study_systems
from .results_view import DIMENSION_TITLES, compare_view, plan_sentence, results_view
from .reward import services as reward_services
from .reward.features import FEATURE_KINDS

TRAIN_FORM = {"study": "", "features": "", "seed": "0", "split_seeds": "0", "split": "condition", "confidence_weight": "", "weight_by_reliability": ""}


def _judges_page(request: HttpRequest, form: dict, *, status: int = 200) -> HttpResponse:
    judges = selectors.judge_list()
    context = {
        "judges": judges,
        "feature_judges": [j for j in judges if j["available"] and j["kind"] in FEATURE_KINDS],
        "studies": studies_visible_to(user=request.user).order_by("name"),
        "trainings": selectors.training_list(user=request.user),
        "form": form,
    }
    return render(request, "scoring/judges.html", context, status=status)


@require_safe
@researcher_required
def judge_list(request: HttpRequest) -> HttpResponse:
    return _judges_page(request, dict(TRAIN_FORM))


@require_POST
@researcher_required
def reward_train(request: HttpRequest) -> HttpResponse:
    """Start a reward-model training from the judges page; its page shows live progress."""
    form = {k: request.POST.get(k, "").strip() for k in TRAIN_FORM}
    study = Study.objects.filter(name=form["study"]).first()
    judge = Judge.objects.filter(key=form["features"]).first()
    if study is None or judge is None:
        messages.error(request, "Choose a study and a feature judge.")
        return _judges_page(request, form, status=400)
    try:
        seed = int(form["seed"] or 0)
    except ValueError:
        messages.error(request, "The seed is a whole number.")
        return _judges_page(request, form, status=400)
    options = {"split": form["split"] or "condition", "split_seeds": form["split_seeds"] or "0", "confidence_weight": form["confidence_weight"] == "on",
               "weight_by": "reliability" if form["weight_by_reliability"] == "on" else "confidence"}  # fmt: skip
    try:
        run = reward_services.training_create(study=study, feature_judge=judge, seed=seed, options=options, user=request.user)
    except ServiceError as exc:
        messages.error(request, exc.message)
        return _judges_page(request, form, status=exc.status if exc.status in (403, 429) else 400)
    return redirect("scoring:training-detail", training_id=run.pk)


@require_safe
@study_required(allowed=selectors.training_allowed)
def training_detail(request: HttpRequest, training_id: int) -> HttpResponse:
    run = get_object_or_404(TrainingRun.objects.select_related("study", "feature_judge", "judge"), pk=training_id)
    metrics = run.metrics or {}
    rows = []
    for view, label in (("heldout", "held-out votes"), ("heldout_majority", "held-out pair majorities")):
        block = metrics.get(view)
        if block:
            rows.append({"label": label, "cells": [{"dimension": d, "accuracy": block[d]["accuracy"], "n": block[d]["n"], "ci": _interval(block[d].get("ci"))} for d in DIMENSIONS]})
    heldout = ScoringRun.objects.filter(judge=run.judge, label=reward_services.HELDOUT_LABEL).first() if run.judge_id else None
    context = {
        "run": run,
        "progress": selectors.training_progress(run),
        "rows": rows,
        "metrics": metrics,
        "heldout": heldout,
        "baselines": _baseline_rows(metrics),
        "ws_path": f"/ws/scoring/training/{run.pk}/",
    }
    return render(request, "scoring/training.html", context)


_PREDICTOR_NAMES = {
    "network": "network (the reward model)",
    "majority": "majority label",
    "judge_score": "feature judge's own score",
    "best_feature": "best single feature (chosen on train+val)",
    "logistic": "logistic regression",
    "logistic_interactions": "logistic regression × condition",
    "prompt_lowrank": "low-rank clip × prompt (learned from the prompts)",
}


def _spread_text(figure: dict, single: bool) -> str:
    if figure.get("mean") is None:
        return "—"
    if single or figure.get("sd") is None:
        return f"{figure['mean']:.3f}"
    return f"{figure['mean']:.3f}\u00a0±\u00a0{figure['sd']:.3f}"


def _baseline_rows(metrics: dict) -> list[dict]:
    """Per dimension: the network and each baseline, mean (± sd over split seeds), the paired difference with one interval per seed."""
    seeds = metrics.get("seeds")
    if not seeds:
        return []
    single = seeds["single_seed"]
    out = []
    for dim in DIMENSIONS:
        block = seeds["dimensions"][dim]
        network_cis = [f"[{_interval(ci, lambda v: f'{v:.3f}')}]" for ci in block["ci"] if ci and ci[0] is not None]
        lines = [{"name": _PREDICTOR_NAMES["network"], "accuracy": _spread_text(block["model"], single), "difference": "", "intervals": network_cis, "coverage": _pct(block["coverage"]["network"][0]["share"])}]
        for name, figure in block["baselines"].items():
            diff = block["differences"][name]
            lines.append(
                {
                    "name": _PREDICTOR_NAMES.get(name, name) + (" (gives no score on this dimension)" if not block["coverage"][name][0]["answered"] else ""),
                    "accuracy": _spread_text(figure, single),
                    "difference": "—" if diff["mean"] is None else f"{diff['mean']:+.3f}",
                    "intervals": [f"[{_interval(ci, lambda v: f'{v:+.3f}')}]" for ci in diff["ci"] if ci and ci[0] is not None],
                    "coverage": _pct(block["coverage"][name][0]["share"]),
                }
            )
        out.append({"dimension": dim, "lines": lines, "picked": (metrics.get("registered") or {}).get("picks", {}).get(dim), "picks": block["picks"]})
    return out


@require_http_methods(["GET", "POST"])
@researcher_required
def run_list(request: HttpRequest) -> HttpResponse:
    judges = [j for j in selectors.judge_list() if j["available"]]
    studies = studies_visible_to(user=request.user).order_by("name")
    form = {"judge": "", "study": "", "template": "", "label": ""}
    status = 200
    if request.method == "POST":
        status = 400
        form = {k: request.POST.get(k, "").strip() for k in form}
        judge = Judge.objects.filter(key=form["judge"]).first()
        study = Study.objects.filter(name=form["study"]).first()
        if judge is None or study is None:
            messages.error(request, "Choose a judge and a study.")
        else:
            try:
                run = services.run_create(judge=judge, study=study, template=form["template"], label=form["label"], user=request.user)
            except ServiceError as exc:
                messages.error(request, exc.message)
                status = exc.status if exc.status == 403 else 400
            else:
                return redirect("scoring:run-detail", run_id=run.pk)
    return render(
        request,
        "scoring/runs.html",
        {"runs": selectors.run_list(user=request.user), "judges": judges, "studies": studies, "form": form},
        status=status,
    )


@require_safe
@study_required(allowed=selectors.run_allowed)
def run_detail(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(ScoringRun.objects.select_related("judge", "study"), pk=run_id)
    verdicts = list(selectors.run_verdicts(run=run, limit=300))
    rows = []
    for verdict in verdicts:
        pair = verdict.pair
        details = verdict.details or {}
        rows.append(
            {
                "verdict": verdict,
                "pair": pair,
                "labels": details.get("labels", {}),
                "rubric": {side: (details.get(f"clip_{side}") or {}).get("items") for side in ("a", "b")},
                "spread": details.get("template_spread"),
                "error": details.get("error", ""),
                "consistent": details.get("consistent"),
            }
        )
    summary = run.summary or {}
    return render(
        request,
        "scoring/run.html",
        {
            "run": run,
            "progress": selectors.run_progress(run),
            "rows": rows,
            "summary": summary,
            "comparison": comparison_table(summary.get("preference", {})),
            "stats": summary.get("verdicts", {}),
            "spread": summary.get("template_spread"),
            "bias": _bias_rows(summary.get("position_bias")),
            "ws_path": f"/ws/scoring/runs/{run.pk}/",
        },
    )


def _bias_rows(table) -> list[dict]:
    """The stored position-bias table (scoring.pseudo.bias_table) as template rows."""
    rows = []
    for dim, block in (table or {}).items():
        cells = [block.get(k) for k in ("a_share", "b_share", "tie_share", "consistency")]
        rows.append({"dimension": dim, "pairs": block.get("pairs"), "cells": cells, "kept": block.get("kept")})
    return rows


def _cell(block) -> dict:
    if isinstance(block, dict):
        return {"accuracy": block.get("accuracy"), "n": block.get("n")}
    return {"accuracy": block, "n": None}


def comparison_table(preference: dict) -> list[dict]:
    """The comparison summary as rows (breakdown, alignment cell, musicality cell) for the template."""
    if not preference:
        return []
    align, music = preference.get("alignment", {}), preference.get("musicality", {})
    rows = [{"label": "all votes", "alignment": _cell(align.get("all")), "musicality": _cell(music.get("all"))}]
    for name in MODALITIES:
        if "by_modality" in align:
            rows.append({"label": f"modality {name}", "alignment": _cell(align["by_modality"][name]), "musicality": _cell(music["by_modality"][name])})
    for key, label in (("no_ref", "without reference"), ("ref", "with reference"), ("instrumental", "instrumental"), ("vocal", "vocal"), ("w/o audio", "w/o audio (mean)"), ("w/ audio", "w/ audio (mean)")):
        if key in align:
            rows.append({"label": label, "alignment": _cell(align[key]), "musicality": _cell(music[key])})
    for bucket in BUCKETS:
        rows.append(
            {
                "label": f"confidence {bucket}",
                "alignment": _cell(align.get("by_confidence", {}).get("all", {}).get(bucket)),
                "musicality": _cell(music.get("by_confidence", {}).get("all", {}).get(bucket)),
            }
        )
    rows.append({"label": "judge answered (share of votes)", "alignment": {"accuracy": align.get("coverage", {}).get("share"), "n": align.get("coverage", {}).get("labelled")}, "musicality": {"accuracy": music.get("coverage", {}).get("share"), "n": music.get("coverage", {}).get("labelled")}})
    return rows


# --- Study report -------------------------------------------------------------------------------


def _pct(value) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


def _fixed(value, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _interval(ci, fmt=_pct) -> str:
    if not ci or ci[0] is None:
        return ""
    return f"{fmt(ci[0])} – {fmt(ci[1])}"


def report_context(report: dict) -> dict:
    """Rows pre-formatted for the template (Django templates cannot index keys such as "<3")."""
    agreement = []
    for dim in DIMENSIONS:
        block = report["agreement"][dim]
        agreement.append(
            {
                "dimension": dim,
                "pairs": block["pairs"],
                "votes": block["votes"],
                "vote_pairs": block["vote_pairs"],
                "agreements": block["agreements"],
                "disagreements": block["disagreements"],
                "rate": _pct(block["agreement_rate"]),
                "rate_ci": _interval(block["agreement_ci"]),
                "alpha": _fixed(block["alpha"]),
                "alpha_ci": _interval(block["alpha_ci"], _fixed),
                "confidence_alpha": _fixed(block["confidence_alpha_ordinal"]),
                "by_confidence": [
                    {**row, "rate": _pct(row["agreement_rate"]), "rate_ci": _interval(row["agreement_ci"]), "alpha_fmt": _fixed(row["alpha"]), "alpha_ci_fmt": _interval(row["alpha_ci"], _fixed)}
                    for row in block["by_confidence"]
                ],
            }
        )
    cross = report["confidence"]["cross_dimension"]
    bias = [{"dimension": d, **report["position_bias"][d], "share_fmt": _pct(report["position_bias"][d]["share"]), "ci_fmt": _interval(report["position_bias"][d]["ci"])} for d in DIMENSIONS]
    annotators = []
    for row in report["annotators"]:
        annotators.append(
            {
                **row,
                "flag_codes_unique": sorted({f["code"] for f in row["flags"]}),
                "agreement_fmt": _pct(row["majority_agreement"]),
                "agreement_alignment_fmt": _pct(row["majority_agreement_alignment"]),
                "agreement_musicality_fmt": _pct(row["majority_agreement_musicality"]),
                "gold_fmt": _pct(row["gold_accuracy"]),
                "a_alignment_fmt": _pct(row["a_share_alignment"]),
                "a_musicality_fmt": _pct(row["a_share_musicality"]),
                "rationale_fmt": _pct(row["rationale_rate"]),
            }
        )
    judges = []
    for judge in report["judges"]:
        dims = []
        for dim in DIMENSIONS:
            block = judge["dimensions"][dim]
            dims.append(
                {
                    "dimension": dim,
                    "n": block["n"],
                    "accuracy": _pct(block["accuracy"]),
                    "ci": _interval(block["ci"]),
                    "modalities": [(m, _pct(block["by_modality"][m]["accuracy"]), block["by_modality"][m]["n"]) for m in MODALITIES],
                    "with_ref": _pct(block["reference"]["with"]["accuracy"]),
                    "without_ref": _pct(block["reference"]["without"]["accuracy"]),
                    "instrumental": _pct(block["type"]["instrumental"]["accuracy"]),
                    "vocal": _pct(block["type"]["vocal"]["accuracy"]),
                    "buckets": [(b, _pct(block["by_confidence"][b]["accuracy"]), block["by_confidence"][b]["n"]) for b in BUCKETS],
                    "w_audio": _pct(block["w_audio"]),
                    "wo_audio": _pct(block["wo_audio"]),
                    "alpha_with_judge": _fixed(block["alpha_with_judge"]),
                    "alpha_humans": _fixed(block["alpha_humans_same_pairs"]),
                    "ties_dropped": block["ties_dropped"],
                    "coverage": _pct(block.get("coverage")),
                }
            )
        judges.append({**judge, "dims": dims, "headline_fmt": _pct(judge["headline"]), "discard_fmt": _pct(judge["discard_rate"]), "failure_fmt": _pct(judge["failure_rate"])})
    external = []
    for result_set in report["external"]:
        # One row per subset, human label and score column; the accuracy or the three correlations side by side.
        grouped: dict[tuple, dict] = {}
        for f in result_set["figures"]:
            row = grouped.setdefault((f["subset"], f["dimension"], f["score"]), {"subset": f["subset"], "dimension": f["dimension"], "score": f["score"], "n": f["n"], "published": []})
            row[f["metric"]] = _fixed(f["value"], 4)
            if f["published"] is not None:
                row["published"].append(f"{f['metric']} {_fixed(f['published'], 4)}")
        rows = [{**r, "published": ", ".join(r["published"])} for r in grouped.values()]
        external.append({**result_set, "table_rows": rows})
    generated = parse_datetime(report["generated_at"])
    return {
        "generated": generated.strftime("%Y-%m-%d %H:%M:%S UTC") if generated else report["generated_at"],
        "agreement": agreement,
        "cross": {**cross, "rate_fmt": _pct(cross["agreement_rate"])},
        "bias": bias,
        "annotators": annotators,
        "judges": judges,
        "external": external,
        "triage": _triage_groups(report["triage"]),
        "crowd": crowd_context(report.get("crowd")),
        "results": results_view(report.get("systems")),
        "drift": report.get("drift"),
        "drift_tables": [("By day", (report.get("drift") or {}).get("by_day", [])), ("By batch", (report.get("drift") or {}).get("by_batch", []))],
        "passes": report.get("passes"),
    }


def crowd_context(crowd: dict | None) -> dict | None:
    """The aggregation section: per dimension how the models differ from the majority; per annotator reliability and calibration."""
    if not crowd or not crowd.get("annotators"):
        return None
    people = []
    for person in crowd["annotators"]:
        dims = []
        for dim in DIMENSIONS:
            methods = person["dimensions"].get(dim, {})
            ds, mace = methods.get("dawid_skene", {}), methods.get("mace", {})
            calib = person["calibration"].get(dim, [])
            dims.append(
                {
                    "dimension": dim,
                    "ds": _pct(ds.get("estimate")),
                    "ds_ci": _interval(ds.get("ci")),
                    "mace": _fixed(mace.get("estimate"), 2),
                    "mace_ci": _interval(mace.get("ci"), lambda v: _fixed(v, 2)),
                    "calibration": [{"level": c["level"], "n": c["n"], "rate": _pct(c["rate"]) if c["n"] else "–"} for c in calib],
                }
            )
        people.append({"pseudonym": person["pseudonym"], "votes": person["votes"], "dims": dims})
    return {"rounds": crowd["rounds"], "interval": crowd.get("interval", "bootstrap"), "dimensions": [{"dimension": d, **crowd["dimensions"][d]} for d in DIMENSIONS if d in crowd["dimensions"]], "annotators": people}


def _triage_groups(items: list[dict]) -> list[dict]:
    groups: dict[str, list] = {}
    for item in items:
        groups.setdefault(item["source"], []).append(item)
    return [{"source": source, "items": rows} for source, rows in groups.items()]


@require_safe
@researcher_required
def report_list(request: HttpRequest) -> HttpResponse:
    return render(request, "scoring/reports.html", {"studies": selectors.studies_for_reports(user=request.user)})


@study_required
@require_safe
def study_report(request: HttpRequest, name: str) -> HttpResponse:
    study = get_object_or_404(Study, name=name)
    query = request.GET.urlencode()
    try:
        options = report_options_parse(request.GET)
        report = report_build(study=study, options=options)
    except ServiceError as exc:
        defaults = ReportOptions()
        return render(request, "scoring/report.html", {"study": study, "error": exc.message, "options": defaults, "query": ""}, status=400)
    context = {
        "study": study,
        "report": report,
        "view": report_context(report),
        "options": options,
        "query": query,
        "tables": TABLES,
        "threshold_help": THRESHOLD_HELP,
        "ws_path": f"/ws/scoring/studies/{study.name}/report/",
    }
    template = "scoring/report_body.html" if request.headers.get("X-Report-Refresh") else "scoring/report.html"
    return render(request, template, context)


@study_required
@require_safe
def study_compare(request: HttpRequest, name: str) -> HttpResponse:
    """Two systems of the study side by side: the paired figures per dimension, and where they differ most, to listen to."""
    study = get_object_or_404(Study, name=name)
    systems = study_systems(study=study)
    a, b = request.GET.get("a", ""), request.GET.get("b", "")
    context = {"study": study, "systems": systems, "a": a, "b": b, "comparison": None}
    if not (a or b):
        # The form first, with the two strongest-looking defaults: the study's first two systems.
        context.update(a=systems[0] if systems else "", b=systems[1] if len(systems) > 1 else "")
        return render(request, "scoring/compare.html", context)
    try:
        options = report_options_parse(request.GET)
        comparison = compare_section(study=study, a=a, b=b, rounds=options.rounds, seed=options.seed, include_seeded=options.include_seeded)
    except ServiceError as exc:
        return render(request, "scoring/compare.html", {**context, "error": exc.message}, status=exc.status)
    return render(request, "scoring/compare.html", {**context, "comparison": compare_view(comparison)})


@study_required
@require_POST
def annotator_exclusion(request: HttpRequest, name: str, pseudonym: str) -> HttpResponse:
    study = get_object_or_404(Study, name=name)
    profile = get_object_or_404(AnnotatorProfile, pseudonym=pseudonym)
    action = request.POST.get("action")
    try:
        if action == "exclude":
            services.annotator_exclude(profile=profile, by=request.user, reason=request.POST.get("reason", ""), study=study)
            messages.success(request, f"{pseudonym} is now left out of analysis and export.")
        elif action == "include":
            services.annotator_include(profile=profile, by=request.user, reason=request.POST.get("reason", ""), study=study)
            messages.success(request, f"{pseudonym} is included again.")
        else:
            messages.error(request, "Choose exclude or include.")
    except ServiceError as exc:
        if exc.status == 403:
            return render(request, "annotation/forbidden.html", {"message": exc.message}, status=403)
        messages.error(request, exc.message)
    back = reverse("scoring:study-report", kwargs={"name": study.name})
    query = request.POST.get("query", "")
    return HttpResponseRedirect(f"{back}?{query}#annotators" if query else f"{back}#annotators")


PLAN_FIELDS = ("effect", "condition_sd", "tie_rate", "rating_sd", "power", "alpha")


@study_required
@require_safe
def study_plan(request: HttpRequest, name: str) -> HttpResponse:
    """How many conditions and votes the next study needs to separate two systems, from this study's votes or a typed effect."""
    from annotation.ratings.models import RatingTask

    study = get_object_or_404(Study, name=name)
    systems = study_systems(study=study)
    task = RatingTask.objects.filter(study=study).first()
    dimensions = list(task.dimensions) if task else list(DIMENSIONS)
    values = {k: request.GET.get(k, "") for k in ("a", "b", "dimension", *PLAN_FIELDS)}
    context = {
        "study": study,
        "systems": systems,
        "kind": "rating" if task else "pairwise",
        "dimensions": [(d, DIMENSION_TITLES.get(d, d)) for d in dimensions],
        "values": values,
        "plan": None,
    }
    if not (values["a"] or values["b"]):
        values.update(a=systems[0] if systems else "", b=systems[1] if len(systems) > 1 else "", dimension=dimensions[-1] if dimensions else "")
        return render(request, "scoring/plan.html", context)
    values["dimension"] = values["dimension"] or (dimensions[-1] if dimensions else "")
    try:
        plan = plan_section(study=study, a=values["a"], b=values["b"], dimension=values["dimension"], **{k: values[k] for k in PLAN_FIELDS})
    except ServiceError as exc:
        return render(request, "scoring/plan.html", {**context, "error": exc.message}, status=exc.status)
    return render(request, "scoring/plan.html", {**context, "plan": plan, "sentence": plan_sentence(plan)})
