"""The rating page (a static shell over the rating API) and the audio it plays."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_safe

from annotation import selectors as annotation_selectors
from annotation.models import Study
from annotation.services import crowd_step
from annotation.views import api_url_template, clip_audio_served
from common.guards import forbidden
from common.roles import is_researcher

from . import selectors


@require_safe
def clip_audio(request: HttpRequest, public_id) -> HttpResponse:
    return clip_audio_served(request, public_id, audible=selectors.clip_audible_by)


@login_required
@require_safe
def rate(request: HttpRequest, name: str) -> HttpResponse:
    study = get_object_or_404(Study, name=name)
    # Membership first: whoever is not an annotator of the study learns nothing of it, not even its task type.
    if not annotation_selectors.is_active_member(study=study, user=request.user):
        return forbidden(request, "You are not an annotator of this study. Ask the researcher running it to add you.")
    task = selectors.rating_task_of(study)
    if task is None:
        return redirect("annotate", name=study.name)
    if not annotation_selectors.has_consented(user=request.user):
        return redirect(f"{reverse('consent')}?next={request.path}")
    # The same headphone screen and practice round as pairwise studies, before the first item.
    step = crowd_step(study=study, annotator=request.user)
    if step is not None:
        return redirect(step, name=study.name)
    config = {
        "nextUrl": reverse("ratings:api-next", kwargs={"name": study.name}),
        "submitUrl": api_url_template("ratings:api-submit"),
        "listeningUrl": api_url_template("ratings:api-listening"),
        "skipUrl": api_url_template("ratings:api-skip"),
        "homeUrl": reverse("home"),
    }
    return render(request, "ratings/rate.html", {"study": study, "task": task, "config": config, "is_researcher": is_researcher(request.user)})
