"""The rating page (a static shell over the rating API) and the audio it plays."""

from __future__ import annotations

import logging

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_safe

from annotation.models import Study
from annotation.views import annotator_page_gate, api_url_template, clip_audio_served
from common.audio_render import RenderError
from common.roles import is_researcher

from . import selectors, services

logger = logging.getLogger(__name__)


@require_safe
def clip_audio(request: HttpRequest, token: str) -> HttpResponse:
    """A letter's (or the open reference's) audio by its opaque per-assignment name (selectors.audio_of_token), on a
    multi-stimulus page in the page's one shape (services.page_audio_render); a clip's own public id is answered too,
    as stored, for whom the clip rule lets hear it."""
    audio = selectors.audio_of_token(token)
    if audio is None or audio.shape is None:
        return clip_audio_served(request, audio.clip if audio is not None else None, served_as=audio.served_as if audio is not None else "")
    try:
        return clip_audio_served(request, audio.clip, rendered=lambda: services.page_audio_render(audio=audio), served_as=audio.served_as)
    except RenderError as exc:
        logger.error("Rating audio: clip %s cannot be rendered: %s", audio.clip.pk, exc)
        # Not a 500: the client is told what is wrong, and that asking again will not help until the file is mended.
        return HttpResponse(f"This clip cannot be played: {exc}", status=503, content_type="text/plain; charset=utf-8")


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
