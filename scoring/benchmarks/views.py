"""HTML pages: benchmark list and creation, the judge leaderboard, uploads, submission pages, signed audio."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core import signing
from django.db.models import Q
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST, require_safe

from annotation.models import Clip, Study
from common.errors import ServiceError
from common.guards import forbidden
from common.ranged import ranged_file_response
from common.roles import is_researcher
from scoring import selectors as scoring_selectors
from scoring.evaluation import DIMENSIONS, MODALITIES

from . import audio, plots, runners, selectors, services
from .models import Benchmark, JudgeEndpoint, Submission, Team

CREATE_FORM = {"name": "", "title": "", "study": "", "arena": "", "seed": "0", "public_share": "0.5", "dev": "", "demo": "", "rounds": "1000", "kind": "pairs"}
LABELS = {0: "A", 1: "B", 2: "both"}


def _forbidden(request: HttpRequest) -> HttpResponse:
    return forbidden(request, "Judge benchmarks are open to researchers and to members of a benchmark team.")


@require_safe
def benchmark_list(request: HttpRequest) -> HttpResponse:
    if not selectors.can_view_leaderboard(request.user):
        return _forbidden(request) if request.user.is_authenticated else redirect(f"/accounts/login/?next={request.path}")
    return render(request, "benchmarks/list.html", {"benchmarks": selectors.benchmarks_visible(request.user), "researcher": is_researcher(request.user)})


@login_required
def benchmark_create(request: HttpRequest) -> HttpResponse:
    if not is_researcher(request.user):
        return _forbidden(request)
    form = dict(CREATE_FORM)
    status = 200
    if request.method == "POST":
        form.update({k: request.POST.get(k, "").strip() for k in CREATE_FORM})
        try:
            study = Study.objects.filter(name=form["study"]).first() if form["study"] else None
            if form["study"] and study is None:
                raise ServiceError(f"No study named {form['study']!r}.")
            try:
                seed, share, rounds = int(form["seed"] or 0), float(form["public_share"] or 0.5), int(form["rounds"] or 1000)
            except ValueError:
                raise ServiceError("Seed and rounds must be whole numbers and the public share a number such as 0.5.") from None
            if not form["name"] or not all(c.isalnum() or c in "-_" for c in form["name"]):
                raise ServiceError("The name must be letters, digits, hyphens or underscores (it appears in every item id).")
            bench = services.benchmark_create(
                name=form["name"],
                title=form["title"],
                study=study,
                include_arena=bool(form["arena"]),
                seed=seed,
                public_share=share,
                is_dev=bool(form["dev"]),
                demo=bool(form["demo"]),
                bootstrap_rounds=rounds,
                kind=form["kind"] or Benchmark.Kind.PAIRS,
                user=request.user,
            )
        except ServiceError as exc:
            messages.error(request, exc.message)
            status = exc.status if exc.status in (403, 409) else 400
        else:
            messages.success(request, f"Benchmark {bench.name} created with {bench.n_items} items.")
            return redirect("benchmarks:benchmark-detail", name=bench.name)
    context = {"form": form, "studies": Study.objects.order_by("name"), "kinds": Benchmark.Kind.choices}
    return render(request, "benchmarks/create.html", context, status=status)


def _filters(request: HttpRequest) -> tuple[str, str | None]:
    dim = request.GET.get("dim", "musicality")
    modality = request.GET.get("modality") or None
    if dim not in DIMENSIONS:
        dim = "musicality"
    if modality not in MODALITIES:
        modality = None
    return dim, modality


@require_safe
def benchmark_detail(request: HttpRequest, name: str) -> HttpResponse:
    bench = get_object_or_404(Benchmark, name=name)
    if not selectors.can_view_leaderboard(request.user):
        return _forbidden(request) if request.user.is_authenticated else redirect(f"/accounts/login/?next={request.path}")
    dim, modality = _filters(request)
    if bench.is_mos:
        return _mos_detail(request, bench, dim, modality)
    board = selectors.leaderboard(bench, request.user, dim=dim, modality=modality)
    ceiling = board["ceiling"]["accuracy"]
    for row in board["rows"]:
        # Interval bars drawn as SVG on a 0-100 scale (attributes, not inline styles: the CSP refuses those).
        if row["ci"] and row["accuracy"] is not None:
            low, high = row["ci"]
            row["bar"] = {
                "x": round(100 * low, 2),
                "w": round(max(100 * (high - low), 0.5), 2),
                "acc": round(100 * row["accuracy"], 2),
                "ceiling": None if ceiling is None else round(100 * ceiling, 2),
            }
    # A team made for another benchmark does not submit here.
    teams = selectors.entered_teams(request.user, bench)
    context = {
        "bench": bench,
        "board": board,
        "dims": DIMENSIONS,
        "modalities": MODALITIES,
        "teams": teams,
        "endpoints": JudgeEndpoint.objects.filter(team__in=teams).select_related("team").order_by("team__name", "name"),
        "all_teams": Team.objects.filter(Q(benchmark__isnull=True) | Q(benchmark=bench)) if is_researcher(request.user) else [],
        "judges": scoring_selectors.judges_runnable() if is_researcher(request.user) else [],
        "researcher": is_researcher(request.user),
        "can_download": selectors.can_download_export(request.user, bench),
        "can_close": selectors.can_close(request.user, bench),
    }
    return render(request, "benchmarks/detail.html", context)


def _mos_detail(request: HttpRequest, bench: Benchmark, dim: str, modality: str | None) -> HttpResponse:
    board = selectors.mos_leaderboard(bench, request.user, dim=dim, modality=modality)
    ceiling = board["ceiling"]["srcc"]
    for row in board["rows"]:
        # SRCC runs from -1 to 1: the bar's scale maps it onto 0-100.
        if row["ci"] and row["ci"][0] is not None and row["srcc"] is not None:
            low, high = row["ci"]
            row["bar"] = {
                "x": round(50 * (low + 1), 2),
                "w": round(max(50 * (high - low), 0.5), 2),
                "acc": round(50 * (row["srcc"] + 1), 2),
                "ceiling": None if ceiling is None else round(50 * (ceiling + 1), 2),
            }
    context = {
        "bench": bench,
        "board": board,
        "dims": DIMENSIONS,
        "modalities": MODALITIES,
        "teams": selectors.entered_teams(request.user, bench),
        "researcher": is_researcher(request.user),
        "can_download": selectors.can_download_export(request.user, bench),
        "can_close": selectors.can_close(request.user, bench),
    }
    return render(request, "benchmarks/mos_detail.html", context)


@require_safe
@login_required
def benchmark_export(request: HttpRequest, name: str) -> HttpResponse:
    bench = get_object_or_404(Benchmark, name=name)
    if not selectors.can_download_export(request.user, bench):
        raise Http404("No such benchmark.")
    response = HttpResponse(services.export_zip(benchmark=bench), content_type="application/zip")
    response["Content-Disposition"] = f'attachment; filename="{bench.name}-v{bench.version}.zip"'
    return response


@login_required
@require_POST
def benchmark_submit(request: HttpRequest, name: str) -> HttpResponse:
    bench = get_object_or_404(Benchmark, name=name)
    try:
        submission = services.submission_upload(benchmark=bench, user=request.user, team=request.POST.get("team", ""), upload=request.FILES.get("file"), label=request.POST.get("label", ""))
    except ServiceError as exc:
        messages.error(request, exc.message)
        return redirect("benchmarks:benchmark-detail", name=bench.name)
    messages.success(request, f"Submission {submission.pk} scored: {submission.predictions.count()} of {bench.n_items} items answered.")
    return redirect("benchmarks:benchmark-submission", submission_id=submission.pk)


@login_required
@require_POST
def benchmark_run(request: HttpRequest, name: str) -> HttpResponse:
    """Run a team's registered outside judge (its members) or an in-platform judge (researchers) as a submission."""
    bench = get_object_or_404(Benchmark, name=name)
    try:
        submission = runners.run_submission_request(
            benchmark=bench,
            user=request.user,
            team=request.POST.get("team", ""),
            judge=request.POST.get("judge", ""),
            endpoint=request.POST.get("endpoint", ""),
            label=request.POST.get("label", ""),
        )
    except ServiceError as exc:
        if exc.code == "forbidden":
            return _forbidden(request)
        messages.error(request, exc.message)
        return redirect("benchmarks:benchmark-detail", name=bench.name)
    messages.success(request, f"Submission {submission.pk} is queued; its scores appear when it has run.")
    return redirect("benchmarks:benchmark-submission", submission_id=submission.pk)


@login_required
@require_POST
def benchmark_close(request: HttpRequest, name: str) -> HttpResponse:
    if not is_researcher(request.user):
        return _forbidden(request)
    bench = get_object_or_404(Benchmark, name=name)
    try:
        services.benchmark_close(benchmark=bench, user=request.user)
    except ServiceError:
        return _forbidden(request)
    messages.success(request, f"{bench.name} is closed: the leaderboard now shows the private part.")
    return redirect("benchmarks:benchmark-detail", name=bench.name)


@require_safe
@login_required
def submission_detail(request: HttpRequest, submission_id: int) -> HttpResponse:
    submission = get_object_or_404(Submission.objects.select_related("benchmark", "team"), pk=submission_id)
    if not selectors.can_view_submission(request.user, submission):
        raise Http404("No such submission.")
    bench = submission.benchmark
    figures = selectors.submission_figures(request.user, submission)
    if bench.is_mos:
        return render(request, "benchmarks/mos_submission.html", {"submission": submission, "bench": bench, "figures": figures, "modalities": MODALITIES})
    for dims in figures.values():
        for values in dims.values():
            values["plot"] = plots.reliability_plot(values.get("calibration"))
    listen = []
    if selectors.can_listen_disagreements(request.user, bench):
        for dim in DIMENSIONS:
            for row in selectors.disagreements(bench, submission, dim=dim, limit=10):
                item = row["item"]
                listen.append(
                    {
                        "dim": dim,
                        "item": item,
                        "truth": LABELS[row["truth"]],
                        "pred": LABELS[row["pred"]],
                        "confidence": row["confidence"],
                        "audio_a": audio.signed_url(request, bench, item.clip_a),
                        "audio_b": audio.signed_url(request, bench, item.clip_b),
                    }
                )
    context = {"submission": submission, "bench": bench, "figures": figures, "listen": listen, "modalities": MODALITIES, "progress": selectors.run_progress(submission)}
    return render(request, "benchmarks/submission.html", context)


@require_safe
def signed_audio(request: HttpRequest, token: str) -> HttpResponse:
    """Audio of a benchmark's clip for whoever holds an unexpired signed link (outside judges, dev listening)."""
    try:
        clip_id = audio.unsign(token)
    except signing.BadSignature:
        raise Http404("This audio link is unknown or has expired.") from None
    clip = get_object_or_404(Clip, public_id=clip_id)
    return ranged_file_response(request, clip.file.path, etag=clip.sha256)
