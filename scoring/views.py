"""HTML pages for researchers: the judges and their availability, runs (launch, list), a run's live page."""

from __future__ import annotations

from functools import wraps

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_safe

from annotation.models import Study
from auditorium.errors import ServiceError
from auditorium.roles import is_researcher

from . import selectors, services
from .models import Judge, ScoringRun


def researcher_required(view):
    @wraps(view)
    @login_required
    def wrapper(request, *args, **kwargs):
        if not is_researcher(request.user):
            return render(request, "scoring/forbidden.html", status=403)
        return view(request, *args, **kwargs)

    return wrapper


@require_safe
@researcher_required
def judge_list(request: HttpRequest) -> HttpResponse:
    return render(request, "scoring/judges.html", {"judges": selectors.judge_list()})


@require_http_methods(["GET", "POST"])
@researcher_required
def run_list(request: HttpRequest) -> HttpResponse:
    judges = [j for j in selectors.judge_list() if j["available"]]
    studies = Study.objects.order_by("name")
    form = {"judge": "", "study": "", "template": "", "label": ""}
    if request.method == "POST":
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
            else:
                return redirect("scoring:run-detail", run_id=run.pk)
    return render(
        request,
        "scoring/runs.html",
        {"runs": selectors.run_list(), "judges": judges, "studies": studies, "form": form},
        status=400 if request.method == "POST" else 200,
    )


@require_safe
@researcher_required
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
            "progress": services.run_progress(run),
            "rows": rows,
            "summary": summary,
            "comparison": comparison_table(summary.get("preference", {})),
            "stats": summary.get("verdicts", {}),
            "spread": summary.get("template_spread"),
            "ws_path": f"/ws/scoring/runs/{run.pk}/",
        },
    )


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
    for name in ("text", "text+lyrics", "text+ref", "text+lyrics+ref"):
        if "by_modality" in align:
            rows.append({"label": f"modality {name}", "alignment": _cell(align["by_modality"][name]), "musicality": _cell(music["by_modality"][name])})
    for key, label in (("no_ref", "without reference"), ("ref", "with reference"), ("instrumental", "instrumental"), ("vocal", "vocal"), ("w/o audio", "w/o audio (mean)"), ("w/ audio", "w/ audio (mean)")):
        if key in align:
            rows.append({"label": label, "alignment": _cell(align[key]), "musicality": _cell(music[key])})
    for bucket in ("<3", "=3", ">3"):
        rows.append(
            {
                "label": f"confidence {bucket}",
                "alignment": _cell(align.get("by_confidence", {}).get("all", {}).get(bucket)),
                "musicality": _cell(music.get("by_confidence", {}).get("all", {}).get(bucket)),
            }
        )
    rows.append({"label": "judge answered (share of votes)", "alignment": {"accuracy": align.get("coverage", {}).get("share"), "n": align.get("coverage", {}).get("labelled")}, "musicality": {"accuracy": music.get("coverage", {}).get("share"), "n": music.get("coverage", {}).get("labelled")}})
    return rows
