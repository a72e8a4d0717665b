"""Best-of-N pages: the list with the form that starts an experiment, and an experiment's page with its human check."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_safe

from annotation.access import studies_visible_to, study_required
from annotation.models import Judgment
from common.errors import ServiceError
from common.guards import researcher_required

from . import best_of_n, selectors
from .evaluation import DIMENSIONS
from .models import BestOfNExperiment, Judge

FORM = {"name": "", "prompts": "", "n": "4", "systems": "", "source_study": "", "ranker": "", "dimension": "musicality", "seconds": "6", "seed": "0"}


def _page(request: HttpRequest, form: dict, *, status: int = 200) -> HttpResponse:
    from arena.models import ArenaSystem

    context = {
        "experiments": best_of_n.experiments_visible_to(user=request.user),
        "form": form,
        "rankers": [j for j in selectors.judge_list() if j["available"]],
        "arena_systems": ArenaSystem.objects.filter(is_active=True).select_related("system").order_by("system__name"),
        "studies": studies_visible_to(user=request.user).order_by("name"),
        "dimensions": DIMENSIONS,
    }
    return render(request, "scoring/best_of_n_list.html", context, status=status)


@require_http_methods(["GET", "HEAD", "POST"])
@researcher_required
def best_of_n_list(request: HttpRequest) -> HttpResponse:
    if request.method != "POST":
        return _page(request, dict(FORM))
    form = {k: request.POST.get(k, "").strip() for k in FORM}
    ranker = Judge.objects.filter(key=form["ranker"]).first()
    source = None
    if form["source_study"]:
        source = studies_visible_to(user=request.user).filter(name=form["source_study"]).first()
        if source is None:
            messages.error(request, "Choose a study of yours for the candidates, or leave it empty to generate them.")
            return _page(request, form, status=400)
    if ranker is None:
        messages.error(request, "Choose the judge that ranks the candidates.")
        return _page(request, form, status=400)
    try:
        n, seed, seconds = int(form["n"]), int(form["seed"] or 0), float(form["seconds"] or 6)
    except ValueError:
        messages.error(request, "N and the seed are whole numbers; the length is in seconds.")
        return _page(request, form, status=400)
    try:
        experiment = best_of_n.best_of_n_create(
            name=form["name"], owner=request.user, prompts=form["prompts"].splitlines(), n=n, ranker=ranker,
            systems=[s for s in form["systems"].replace("\n", ",").split(",")], source_study=source, dimension=form["dimension"] or "musicality", seconds=seconds, seed=seed,
        )  # fmt: skip
    except ServiceError as exc:
        messages.error(request, exc.message)
        return _page(request, form, status=exc.status if exc.status in (403, 409) else 400)
    return redirect("scoring:best-of-n-detail", name=experiment.study.name)


@require_safe
@study_required
def best_of_n_detail(request: HttpRequest, name: str) -> HttpResponse:
    experiment = get_object_or_404(BestOfNExperiment.objects.select_related("study", "ranker", "source_study"), study__name=name)
    include_seeded = request.GET.get("include_seeded") == "1"
    report = best_of_n.best_of_n_report(experiment=experiment, include_seeded=include_seeded) if experiment.state == BestOfNExperiment.State.DONE else None
    context = {
        "experiment": experiment,
        "study": experiment.study,
        "prompts": best_of_n.candidate_rows(experiment=experiment),
        "report": report,
        "include_seeded": include_seeded,
        "seeded_votes": Judgment.objects.filter(pair__study=experiment.study, source=Judgment.Source.SEEDED).count(),
    }
    return render(request, "scoring/best_of_n.html", context)
