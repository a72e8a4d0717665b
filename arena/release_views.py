"""The release page: researchers build the public battle log in a worker and download it; with
ARENA_RELEASE_PUBLIC on, everyone may read the page and download finished builds."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_safe

from common.errors import ServiceError
from common.guards import forbidden
from common.roles import is_researcher

from .models import ReleaseBuild
from .release_builds import release_build_create, release_folder, release_visible
from .selectors import release_build_status, release_builds, voted_battles


def _refused(request: HttpRequest) -> HttpResponse | None:
    if release_visible(request.user):
        return None
    if not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path())
    return forbidden(request, "The battle-log release is open to researchers. Ask an administrator if you need it.")


@require_http_methods(["GET", "HEAD", "POST"])
def release(request: HttpRequest) -> HttpResponse:
    refused = _refused(request)
    if refused is not None:
        return refused
    researcher = is_researcher(request.user)
    if request.method == "POST":
        if not researcher:
            return forbidden(request, "Only researchers can build a release.")
        try:
            release_build_create(
                user=request.user,
                audio=request.POST.get("audio") == "on",
                parquet=request.POST.get("parquet") == "on",
                include_seeded=request.POST.get("include_seeded") == "on",
            )
        except ServiceError as exc:
            messages.error(request, exc.message)
        # No flash message for a build that was queued: the page's own note follows its state (see below).
        return redirect("arena:release")
    builds = release_builds(everyone=not researcher)
    context = {
        "builds": builds,
        "researcher": researcher,
        "public": bool(settings.ARENA_RELEASE_PUBLIC),
        "battles": voted_battles(),
        # Inside the table's section, which the page redraws when a row changes state, so it never outlives the build.
        "active": next((b for b in builds if b.state in (ReleaseBuild.State.PENDING, ReleaseBuild.State.RUNNING)), None),
    }
    context["building"] = context["active"] is not None
    return render(request, "arena/release.html", context)


@require_safe
def release_status(request: HttpRequest) -> HttpResponse:
    if not release_visible(request.user):
        return JsonResponse({"detail": "The battle-log release is open to researchers."}, status=403)
    return JsonResponse({"builds": [release_build_status(b) for b in release_builds(everyone=not is_researcher(request.user))]})


@require_safe
def release_download(request: HttpRequest, build_id: int) -> HttpResponse:
    refused = _refused(request)
    if refused is not None:
        return refused
    build = get_object_or_404(ReleaseBuild, pk=build_id, state=ReleaseBuild.State.DONE)
    path = release_folder() / build.file_name
    if not build.file_name or not path.is_file():
        raise Http404("This release's file is gone; build a new one.")
    return FileResponse(open(path, "rb"), as_attachment=True, filename=build.file_name, content_type="application/zip")
