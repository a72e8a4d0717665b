"""Pages of the questionnaires: the participant's questions before and after the study, and the researcher's
editor, answer counts and CSV of answers (the last two on the study page's side).

Where they sit in the participant's steps is services.crowd_step (before the study) and the
completion page (after it): the questions after the study come before the completion code.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_safe

from common.csvfile import csv_text
from common.errors import ServiceError
from common.guards import forbidden

from . import selectors, services
from .access import study_required
from .crowd_views import _member_study, _page, _participant
from .models import Study
from .questionnaire_forms import EXAMPLE_TEXT, QuestionnaireAnswerForm, QuestionnaireEditForm, definition_text
from .questionnaire_models import Phase, Questionnaire
from .questionnaire_selectors import ANSWER_COLUMNS, answer_rows, answer_summary, questionnaire_current, questionnaire_pending
from .services.gate import PRACTICE, SCREENING
from .views import _form_error, _not_writable

TITLES = {Phase.PRE: "A few questions before you start", Phase.POST: "A few questions before you finish"}


def _after(request: HttpRequest, study: Study, phase: str) -> str:
    """Where the participant goes once this phase's questions are answered (or when there are none)."""
    if phase == Phase.PRE:
        return reverse("annotate", kwargs={"name": study.name})
    participant = _participant(request.user)
    if participant is not None and participant.study_id == study.pk:
        return reverse("recruitment-done", kwargs={"name": study.name})
    return reverse("home")


@login_required
@never_cache
@require_http_methods(["GET", "HEAD", "POST"])
def questionnaire_page(request: HttpRequest, name: str, phase: str) -> HttpResponse:
    study = _member_study(request, name)
    if not selectors.has_consented(user=request.user):
        return redirect(f"{reverse('consent')}?next={request.path}")
    if phase == Phase.PRE:
        step = services.crowd_step(study=study, annotator=request.user)
        if step in (SCREENING, PRACTICE):
            return redirect(step, name=study.name)
    else:
        progress = selectors.annotator_progress(study=study, annotator=request.user)
        if progress["state"] == "open" or progress["done"] < 1:
            message = f"You have done {progress['done']} of {progress['target']}; the questions after the study come after the last one."
            return _page(request, "annotation/forbidden.html", {"message": message}, status=409)
    questionnaire = questionnaire_pending(study=study, annotator=request.user, phase=phase)
    if questionnaire is None:
        # None asked, or answered already (a second send of the form lands here and stores nothing).
        return redirect(_after(request, study, phase))
    status = 200
    if request.method == "POST":
        form = QuestionnaireAnswerForm(request.POST, questionnaire=questionnaire)
        if form.is_valid():
            if form.cleaned_data["version"] != questionnaire.version:
                form = QuestionnaireAnswerForm(questionnaire=questionnaire)
                form.add_error(None, "These questions were changed while you answered them; please answer the questions shown now.")
                return _render_answer(request, study, questionnaire, form, status=409)
            try:
                services.questionnaire_answer(questionnaire=questionnaire, annotator=request.user, answers=form.answers())
            except ServiceError as exc:
                _form_error(form, exc)
            else:
                messages.success(request, "Thank you: your answers are saved.")
                return redirect(_after(request, study, phase))
        status = 400
    else:
        form = QuestionnaireAnswerForm(questionnaire=questionnaire)
    return _render_answer(request, study, questionnaire, form, status=status)


def _render_answer(request, study, questionnaire, form, *, status: int) -> HttpResponse:
    errors = sum(1 for name in form.errors if name != "__all__")
    context = {
        "study": study, "questionnaire": questionnaire, "form": form, "title": TITLES[questionnaire.phase], "error_count": errors,
        "participant_study": study if _participant(request.user) is not None else None,
    }  # fmt: skip
    return _page(request, "annotation/questionnaire.html", context, status=status)


# --- Researcher pages ---------------------------------------------------------------------------


def _versions(study: Study) -> list[dict]:
    rows = Questionnaire.objects.filter(study=study).order_by("phase", "-version")
    counts = {q.pk: q.responses.count() for q in rows}
    return [{"phase": q.get_phase_display(), "version": q.version, "questions": len(q.questions), "responses": counts[q.pk], "created_at": q.created_at} for q in rows]


@study_required
@require_http_methods(["GET", "HEAD", "POST"])
def questionnaire_edit(request: HttpRequest, name: str) -> HttpResponse:
    study = get_object_or_404(Study, name=name)
    can_change = selectors.study_writable_by(study=study, user=request.user)
    current = {phase: questionnaire_current(study=study, phase=phase) for phase in Phase.values}
    status = 200
    if request.method == "POST":
        if (refused := _not_writable(request, study)) is not None:
            return refused
        form = QuestionnaireEditForm(request.POST)
        if form.is_valid():
            changed = []
            try:
                for phase in Phase.values:
                    saved, did_change = services.questionnaire_save(study=study, phase=phase, questions=form.cleaned_data[phase], by=request.user)
                    if did_change:
                        changed.append(f"{Phase(phase).label.lower()}: version {saved.version}")
            except ServiceError as exc:
                _form_error(form, exc)
            else:
                messages.success(request, "Questionnaires saved (" + "; ".join(changed) + ")." if changed else "Nothing changed.")
                return redirect("study-questionnaires", name=study.name)
        status = 400
    else:
        form = QuestionnaireEditForm(initial={phase: definition_text(q.questions if q else None) for phase, q in current.items()})
    previews = [{"phase": Phase(phase).label, "form": QuestionnaireAnswerForm(questionnaire=q, auto_id=f"preview-{phase}-%s"), "version": q.version} for phase, q in current.items() if q]
    context = {
        "study": study, "form": form, "can_change": can_change, "example": EXAMPLE_TEXT, "versions": _versions(study),
        "summary": answer_summary(study=study), "can_export": selectors.study_exportable_by(study=study, user=request.user), "previews": previews, "report_url": reverse("scoring:study-report", kwargs={"name": study.name}),
    }  # fmt: skip
    return _page(request, "annotation/manage/questionnaires.html", context, status=status)


@study_required
@require_safe
def questionnaire_answers_csv(request: HttpRequest, name: str) -> HttpResponse:
    study = get_object_or_404(Study, name=name)
    if not selectors.study_exportable_by(study=study, user=request.user):
        return forbidden(request, f"Only the owner of “{study.name}” or an administrator can take its answers out.")
    body = csv_text(answer_rows(study=study), columns=ANSWER_COLUMNS) or ",".join(ANSWER_COLUMNS) + "\r\n"
    response = HttpResponse(body, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{study.name}-questionnaire-answers.csv"'
    response["Cache-Control"] = "private, no-store"
    return response
