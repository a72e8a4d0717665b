"""HTML pages for benchmark teams: researchers make teams and add members; members see their teams and register outside judges."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from common.errors import ServiceError
from common.roles import is_researcher

from . import team_services
from .models import Benchmark, Team


def _team_visible(request: HttpRequest, name: str) -> Team:
    # 404, not 403, for a team the user is not in: its existence is not told.
    team = get_object_or_404(Team.objects.select_related("benchmark"), name=name)
    if not (is_researcher(request.user) or team_services.is_member(request.user, team)):
        raise Http404("No such team.")
    return team


@login_required
def team_list(request: HttpRequest) -> HttpResponse:
    researcher = is_researcher(request.user)
    teams = Team.objects.select_related("benchmark").prefetch_related("members")
    teams = teams.all() if researcher else teams.filter(members=request.user)
    if not researcher and not teams.exists():
        return render(request, "benchmarks/forbidden.html", status=403)
    form = {"name": request.POST.get("name", "").strip(), "benchmark": request.POST.get("benchmark", "")}
    status = 200
    if request.method == "POST":
        try:
            bench = Benchmark.objects.filter(name=form["benchmark"]).first()
            if bench is None:
                raise ServiceError("Pick the benchmark the team is for.")
            team = team_services.team_for_benchmark(name=form["name"], benchmark=bench, user=request.user)
        except ServiceError as exc:
            messages.error(request, exc.message)
            status = exc.status if exc.status in (400, 403, 409) else 400
        else:
            messages.success(request, f"Team {team.name} made for {bench.name}; add its members below.")
            return redirect("benchmarks:team-detail", team=team.name)
    context = {"teams": teams, "researcher": researcher, "benchmarks": Benchmark.objects.filter(state=Benchmark.State.OPEN) if researcher else [], "form": form}
    return render(request, "benchmarks/teams.html", context, status=status)


@login_required
def team_detail(request: HttpRequest, team: str) -> HttpResponse:
    team_obj = _team_visible(request, team)
    context = {
        "team": team_obj,
        "members": team_obj.members.order_by("username"),
        "endpoints": team_obj.endpoints.order_by("name"),
        "researcher": is_researcher(request.user),
    }
    return render(request, "benchmarks/team.html", context)


@login_required
@require_POST
def team_members_add(request: HttpRequest, team: str) -> HttpResponse:
    team_obj = _team_visible(request, team)
    try:
        added = team_services.team_members_add(team=team_obj, usernames=request.POST.get("usernames", "").split(","), user=request.user)
    except ServiceError as exc:
        if exc.status == 403:
            return render(request, "benchmarks/forbidden.html", status=403)
        messages.error(request, exc.message)
    else:
        messages.success(request, f"Added to {team_obj.name}: {', '.join(u.username for u in added)}.")
    return redirect("benchmarks:team-detail", team=team_obj.name)


@login_required
@require_POST
def team_endpoint_register(request: HttpRequest, team: str) -> HttpResponse:
    team_obj = _team_visible(request, team)
    try:
        endpoint = team_services.endpoint_register(team=team_obj, name=request.POST.get("name", ""), url=request.POST.get("url", ""), user=request.user)
    except ServiceError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"Endpoint {endpoint.name} registered; its shared secret is below.")
    return redirect("benchmarks:team-detail", team=team_obj.name)
