"""Study page actions for the crowd-quality steps: naming practice pairs and opening or closing recruitment links.

Each is a change to the study, so only its owner, named collaborators and admins may post them;
a refusal re-renders the study page with the message beside the form and stores nothing.
"""

from __future__ import annotations

from collections.abc import Callable

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


def _created_from_form(request: HttpRequest, name: str, *, form: Callable[[Study], object], create: Callable, success: Callable[[object], str], anchor: str, form_key: str) -> HttpResponse:
    """Stores what a valid form describes and goes back to its section; an invalid form or a refused
    change re-renders the study page with the form and its errors (400)."""
    study, refused = _writable_study(request, name)
    if refused is not None:
        return refused
    bound = form(study)
    if bound.is_valid():
        try:
            created = create(study=study, **bound.cleaned_data)
        except ServiceError as exc:
            _form_error(bound, exc)
        else:
            messages.success(request, success(created))
            return _back(study, anchor)
    return _study_manage_render(request, study, None, status=400, crowd_forms={form_key: bound})


def _changed(request: HttpRequest, name: str, *, change: Callable[[Study], object], success: Callable[[object], str], anchor: str) -> HttpResponse:
    """Applies a change that needs no form; a refusal re-renders the study page with its message and status."""
    study, refused = _writable_study(request, name)
    if refused is not None:
        return refused
    try:
        result = change(study)
    except ServiceError as exc:
        messages.error(request, exc.message)
        return _study_manage_render(request, study, None, status=exc.status)
    messages.success(request, success(result))
    return _back(study, anchor)


@study_required
@require_POST
def practice_add(request: HttpRequest, name: str) -> HttpResponse:
    return _created_from_form(
        request, name, form=lambda study: PracticeItemForm(request.POST, candidates=practice_candidates(study=study)), create=services.practice_add,
        success=lambda item: f"Pair {item.from_pair_id} is now practice pair {item.position + 1}.", anchor="practice", form_key="practice_form",
    )


@study_required
@require_POST
def practice_remove(request: HttpRequest, name: str, item_id: int) -> HttpResponse:
    return _changed(
        request, name, change=lambda study: services.practice_remove(study=study, item_id=item_id), anchor="practice",
        success=lambda answers: f"Practice pair removed{f', with the {answers} practice answer(s) given to it' if answers else ''}.",
    )


@study_required
@require_POST
def recruitment_link_add(request: HttpRequest, name: str) -> HttpResponse:
    return _created_from_form(
        request, name, form=lambda _study: RecruitmentLinkForm(request.POST), create=services.recruitment_link_create,
        success=lambda _link: "Recruitment link opened. Paste its URL into the recruitment platform.", anchor="recruitment", form_key="link_form",
    )


@study_required
@require_POST
def recruitment_link_close(request: HttpRequest, name: str, link_id: int) -> HttpResponse:
    return _changed(
        request, name, change=lambda study: services.recruitment_link_close(study=study, link_id=link_id), anchor="recruitment",
        success=lambda _closed: "Recruitment link closed: it admits no one from now on.",
    )


@study_required
@require_POST
def recruitment_link_resume(request: HttpRequest, name: str, link_id: int) -> HttpResponse:
    return _changed(
        request, name, change=lambda study: services.recruitment_link_resume(study=study, link_id=link_id), anchor="recruitment",
        success=lambda _link: "Recruitment link resumed: it admits new participants again, and those who joined before now no longer count towards a pause.",
    )
