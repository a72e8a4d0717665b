"""HTML views and audio serving for the annotation app."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_safe

from .audio import ranged_file_response
from .models import Clip
from .selectors import clip_audible_by


@require_safe
def clip_audio(request: HttpRequest, public_id) -> HttpResponse:
    clip = get_object_or_404(Clip, public_id=public_id)
    # 404 rather than 403: an unauthorised caller learns nothing about which ids exist.
    if not clip_audible_by(user=request.user, clip=clip):
        raise Http404("No such audio.")
    return ranged_file_response(request, clip.file.path, etag=clip.sha256)


@login_required
def home(request: HttpRequest) -> HttpResponse:
    return render(request, "annotation/home.html", {})
