"""The rating page (a static shell over the rating API) and the audio it plays."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_safe

from annotation import selectors as annotation_selectors
from annotation.models import Clip, Study
from annotation.services import audio_fetch_record, crowd_step
from auditorium.ranged import ranged_file_response
from common.guards import forbidden
from common.roles import is_researcher

from . import selectors


@require_safe
def clip_audio(request: HttpRequest, public_id) -> HttpResponse:
    clip = get_object_or_404(Clip, public_id=public_id)
    if not selectors.clip_audible_by(user=request.user, clip=clip):
        raise Http404("No such audio.")
    user, started = request.user, timezone.now()

    def sent(first: int, last: int, total: int) -> None:
        # The same record the pairwise page's audio keeps: the submit checks listening against it.
        audio_fetch_record(user=user, clip=clip, served=(first, last, total), now=started)

    return ranged_file_response(request, clip.file.path, etag=clip.sha256, on_sent=sent)


def _template(name: str) -> str:
    sentinel = 987654321
    return reverse(name, kwargs={"assignment_id": sentinel}).replace(str(sentinel), "{id}")


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
        "submitUrl": _template("ratings:api-submit"),
        "listeningUrl": _template("ratings:api-listening"),
        "skipUrl": _template("ratings:api-skip"),
        "homeUrl": reverse("home"),
    }
    return render(request, "ratings/rate.html", {"study": study, "task": task, "config": config, "is_researcher": is_researcher(request.user)})
