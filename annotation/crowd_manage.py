"""Study page actions for the crowd-quality steps: naming practice pairs and opening or closing recruitment links.

Each is a change to the study, so only its owner, named collaborators and admins may post them;
a refusal re-renders the study page with the message beside the form and stores nothing.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from common.errors import ServiceError

from . import services
from .crowd_forms import PracticeItemForm, RecruitmentLinkForm
from .crowd_selectors import practice_candidates
from .models import Study
from .access import study_required
from .views import _form_error, _not_writable, _study_manage_render


def _writable_study(request: HttpRequest, name: str) -> tuple[Study, HttpResponse | None]:
    study = get_object_or_404(Study, name=name)
    return study, _not_writable(request, study)


def _back(study: Study, anchor: str) -> HttpResponse:
    return redirect(f"{reverse('study-manage', kwargs={'name': study.name})}#{anchor}")


@study_required
@require_POST
def practice_add(request: HttpRequest, name: str) -> HttpResponse:
    study, refused = _writable_study(request, name)
    if refused is not None:
        return refused
    form = PracticeItemForm(request.POST, candidates=practice_candidates(study=study))
    if form.is_valid():
        try:
            item = services.practice_add(study=study, **form.cleaned_data)
        except ServiceError as exc:
            _form_error(form, exc)
        else:
            messages.success(request, f"Pair {item.from_pair_id} is now practice pair {item.position + 1}.")
            return _back(study, "practice")
    return _study_manage_render(request, study, None, status=400, crowd_forms={"practice_form": form})


@study_required
@require_POST
def practice_remove(request: HttpRequest, name: str, item_id: int) -> HttpResponse:
    study, refused = _writable_study(request, name)
    if refused is not None:
        return refused
    try:
        answers = services.practice_remove(study=study, item_id=item_id)
    except ServiceError as exc:
        messages.error(request, exc.message)
        return _study_manage_render(request, study, None, status=exc.status)
    messages.success(request, f"Practice pair removed{f', with the {answers} practice answer(s) given to it' if answers else ''}.")
    return _back(study, "practice")


@study_required
@require_POST
def recruitment_link_add(request: HttpRequest, name: str) -> HttpResponse:
    study, refused = _writable_study(request, name)
    if refused is not None:
        return refused
    form = RecruitmentLinkForm(request.POST)
    if form.is_valid():
        try:
            services.recruitment_link_create(study=study, **form.cleaned_data)
        except ServiceError as exc:
            _form_error(form, exc)
        else:
            messages.success(request, "Recruitment link opened. Paste its URL into the recruitment platform.")
            return _back(study, "recruitment")
    return _study_manage_render(request, study, None, status=400, crowd_forms={"link_form": form})


@study_required
@require_POST
def recruitment_link_close(request: HttpRequest, name: str, link_id: int) -> HttpResponse:
    study, refused = _writable_study(request, name)
    if refused is not None:
        return refused
    try:
        services.recruitment_link_close(study=study, link_id=link_id)
    except ServiceError as exc:
        messages.error(request, exc.message)
        return _study_manage_render(request, study, None, status=exc.status)
    messages.success(request, "Recruitment link closed: it admits no one from now on.")
    return _back(study, "recruitment")
