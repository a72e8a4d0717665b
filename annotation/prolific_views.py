"""The study's Prolific page: the API token (write-only), links tied to Prolific studies, their submissions, and
approving, rejecting and paying bonuses singly or by rule. Only those who may change the study see or use it.

Each post parses a form and calls one service; a bad form or a refused request re-renders the page with the
message and stores nothing.
"""

from __future__ import annotations

from collections.abc import Callable

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST, require_safe

from common.errors import ServiceError

from .access import study_required
from .crowd_manage import _writable_study
from .crowd_models import RecruitmentLink
from .prolific_models import Decision
from .prolific_selectors import prolific_page
from .services import prolific as service
from .views import _render


class TokenForm(forms.Form):
    # Never rendered back: the field is empty on every page, whatever was posted.
    token = forms.CharField(
        label="Prolific API token", max_length=400, strip=True, widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off", "spellcheck": "false"}),
        error_messages={"required": "Paste the API token from Prolific's settings (API tokens)."},
        help_text="Stored encrypted; it is never shown again. Entering a new one replaces it.",
    )  # fmt: skip


class TieForm(forms.Form):
    link_id = forms.TypedChoiceField(label="Recruitment link", coerce=int, error_messages={"required": "Choose the recruitment link.", "invalid_choice": "Choose one of this study's links."})
    prolific_study_id = forms.CharField(label="Prolific study id", max_length=64, error_messages={"required": "Enter the Prolific study's id (from its URL)."})

    def __init__(self, *args, study, **kwargs):
        super().__init__(*args, **kwargs)
        links = RecruitmentLink.objects.filter(study=study).order_by("-created_at", "-id")
        self.fields["link_id"].choices = [("", "Choose a link…"), *((link.pk, link.label or f"link {link.token[:6]}") for link in links)]


class RuleForm(forms.Form):
    submission = forms.IntegerField(required=False, widget=forms.HiddenInput)
    completed = forms.BooleanField(label="Completed the study", required=False)
    screen_passed = forms.BooleanField(label="Passed the headphone check", required=False)
    gold_min = forms.FloatField(label="Gold accuracy at least", min_value=0.0, max_value=1.0, required=False, help_text="A share from 0 to 1.")
    gold_below = forms.FloatField(label="Gold accuracy below", min_value=0.0, max_value=1.0, required=False, help_text="A share from 0 to 1.")

    def rule(self) -> service.Rule:
        data = self.cleaned_data
        return service.Rule(completed=data["completed"], screen_passed=data["screen_passed"], gold_min=data["gold_min"], gold_below=data["gold_below"])


class DecideForm(RuleForm):
    action = forms.ChoiceField(choices=Decision.choices, widget=forms.HiddenInput)
    rejection_category = forms.ChoiceField(label="Rejection category", required=False, choices=[("", "Choose…"), *service.REJECTION_CATEGORIES])
    message = forms.CharField(label="Message to the participant", required=False, max_length=2000, widget=forms.Textarea(attrs={"rows": 3}),
                              help_text=f"At least {service.MIN_REJECT_MESSAGE} characters (Prolific's rule): why the submission is rejected.")  # fmt: skip


class BonusForm(RuleForm):
    amount = forms.DecimalField(label="Bonus per participant", min_value=0.01, max_digits=8, decimal_places=2, error_messages={"required": "Enter the amount, e.g. 0.50."})
    reason = forms.CharField(label="Reason", max_length=100, error_messages={"required": "Name the reason; each participant gets one bonus per reason."})


def _page(request: HttpRequest, study, *, status: int = 200, **bound) -> HttpResponse:
    context = {"study": study, **prolific_page(study=study), "token_form": TokenForm(), "tie_form": bound.pop("tie_form", None) or TieForm(study=study)}
    context.update(bound)
    context.setdefault("decide_form", DecideForm(initial={"action": Decision.APPROVE}))
    context.setdefault("bonus_form", BonusForm())
    context["categories"] = service.REJECTION_CATEGORIES
    return _render(request, "annotation/manage/prolific.html", context, status=status)


def _back(study) -> HttpResponse:
    return redirect(reverse("study-prolific", kwargs={"name": study.name}))


def _post(request: HttpRequest, name: str, *, form: Callable, act: Callable, success: Callable[[object], str], key: str) -> HttpResponse:
    study, refused = _writable_study(request, name)
    if refused is not None:
        return refused
    bound = form(study)
    if bound.is_valid():
        try:
            result = act(study, bound)
        except ServiceError as exc:
            messages.error(request, exc.message)
            return _page(request, study, status=exc.status, **{key: bound})
        messages.success(request, success(result))
        return _back(study)
    return _page(request, study, status=400, **{key: bound})


@study_required
@require_safe
@never_cache
def prolific_manage(request: HttpRequest, name: str) -> HttpResponse:
    study, refused = _writable_study(request, name)
    return refused if refused is not None else _page(request, study)


@study_required
@require_POST
def prolific_token(request: HttpRequest, name: str) -> HttpResponse:
    if request.POST.get("clear"):
        return _post(request, name, form=lambda _s: forms.Form(request.POST), act=lambda study, _f: service.prolific_token_clear(study=study),
                     success=lambda n: "Prolific token removed." if n else "No Prolific token was stored.", key="token_form")  # fmt: skip
    return _post(
        request, name, form=lambda _s: TokenForm(request.POST), key="token_form",
        act=lambda study, f: service.prolific_token_set(study=study, token=f.cleaned_data["token"], user=request.user),
        success=lambda _c: "Prolific token stored (encrypted). It is not shown again.",
    )  # fmt: skip


@study_required
@require_POST
def prolific_tie(request: HttpRequest, name: str) -> HttpResponse:
    return _post(
        request, name, form=lambda study: TieForm(request.POST, study=study), key="tie_form",
        act=lambda study, f: service.prolific_tie(study=study, **f.cleaned_data),
        success=lambda tie: f"Link tied to Prolific study {tie.prolific_study_id}. Fetch its submissions next.",
    )  # fmt: skip


@study_required
@require_POST
def prolific_fetch(request: HttpRequest, name: str, tie_id: int) -> HttpResponse:
    return _post(
        request, name, form=lambda _s: forms.Form(request.POST), key="fetch_form", act=lambda study, _f: service.prolific_submissions_fetch(study=study, tie_id=tie_id),
        success=lambda got: f"{got['submissions']} submission(s) fetched from Prolific, {got['matched']} matched to this study's participants.",
    )  # fmt: skip


@study_required
@require_POST
def prolific_decide(request: HttpRequest, name: str, tie_id: int) -> HttpResponse:
    def act(study, f):
        data = f.cleaned_data
        return service.prolific_decide(
            study=study, tie_id=tie_id, action=data["action"], rule=f.rule(), submission_pk=data["submission"],
            rejection_category=data["rejection_category"], message=data["message"], user=request.user,
        )  # fmt: skip

    return _post(
        request, name, form=lambda _s: DecideForm(request.POST), act=act, key="decide_form",
        success=lambda r: f"{r['queued']} decision(s) queued for Prolific" + (f"; {r['skipped']} chosen submission(s) were not awaiting review or already decided" if r["skipped"] else "") + ".",
    )  # fmt: skip


@study_required
@require_POST
def prolific_bonus(request: HttpRequest, name: str, tie_id: int) -> HttpResponse:
    def act(study, f):
        data = f.cleaned_data
        return service.prolific_bonus(study=study, tie_id=tie_id, amount=data["amount"], reason=data["reason"], rule=f.rule(), submission_pk=data["submission"], user=request.user)

    return _post(
        request, name, form=lambda _s: BonusForm(request.POST), act=act, key="bonus_form",
        success=lambda r: f"{r['created']} bonus(es) queued for Prolific" + (f"; {r['already']} participant(s) already have a bonus for this reason" if r["already"] else "") + ".",
    )  # fmt: skip


@study_required
@require_POST
def prolific_queue(request: HttpRequest, name: str, tie_id: int) -> HttpResponse:
    return _post(
        request, name, form=lambda _s: forms.Form(request.POST), key="queue_form", act=lambda study, _f: service.prolific_work_queue(study=study, tie_id=tie_id),
        success=lambda n: f"{n} waiting item(s) sent to Prolific again." if n else "Nothing is waiting to be sent.",
    )  # fmt: skip
