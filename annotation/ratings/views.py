"""The rating page (a static shell over the rating API) and the audio it plays."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_safe

from annotation.models import Study
from annotation.views import annotator_page_gate, api_url_template, clip_audio_served
from common.roles import is_researcher

from . import selectors


@require_safe
def clip_audio(request: HttpRequest, token: str) -> HttpResponse:
    """A letter's (or the open reference's) audio by its opaque per-assignment name (selectors.audio_of); a clip's own
    public id is answered too, for whom the clip rule lets hear it."""
    return clip_audio_served(request, selectors.clip_of_token(token))


@login_required
@require_safe
def rate(request: HttpRequest, name: str) -> HttpResponse:
    study = get_object_or_404(Study, name=name)
    gate = annotator_page_gate(request, study, rating_page=True)
    if gate is not None:
        return gate
    task = study.rating_task
    config = {
        "nextUrl": reverse("ratings:api-next", kwargs={"name": study.name}),
        "submitUrl": api_url_template("ratings:api-submit"),
        "listeningUrl": api_url_template("ratings:api-listening"),
        "skipUrl": api_url_template("ratings:api-skip"),
        "homeUrl": reverse("home"),
    }
    return render(request, "ratings/rate.html", {"study": study, "task": task, "config": config, "is_researcher": is_researcher(request.user)})
