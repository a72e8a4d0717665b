"""HTML views and audio serving for the annotation app.

The listening page itself is a static shell: it talks to the JSON API
(annotation/api.py) for assignments and judgments, so the rules live in one
place (annotation/services.py) for the page and for API clients alike.
"""

from __future__ import annotations

import statistics
from functools import wraps

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db import transaction
from django.db.models import Count, Q, Sum
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import NoReverseMatch, reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from auditorium.ranged import ranged_file_response
from auditorium.roles import is_researcher

from .forms import ConsentForm, ConsentWithdrawForm, StudyAnnotatorAddForm, StudyForm
from .models import AnnotatorProfile, Assignment, Clip, Judgment, Pair, Study, StudyAnnotator
from .selectors import clip_audible_by
from .services import CONSENT_VERSION, annotator_progress, consent_give, consent_withdraw, study_annotator_add

PAIRS_PER_PAGE = 50

# The two CMI-Pref questions, in the order the page asks them; keys match the judgment API fields.
QUESTIONS = (
    {
        "key": "alignment",
        "title": "Which clip follows the instruction better?",
        "hint": "Instruments, mood, genre and era, rhythm and tempo; the lyrics and the reference when given. Judge the fit, not the sound quality.",
        "key_a": "Q",
        "key_b": "W",
    },
    {
        "key": "musicality",
        "title": "Which clip is better music?",
        "hint": "Forget the instruction: melody, structure, steady rhythm, clean production without artifacts, natural vocals.",
        "key_a": "E",
        "key_b": "R",
    },
)
CONFIDENCE_VALUES = tuple(
    {"value": f"{v / 2:.1f}", "label": f"{v // 2}½" if v % 2 else str(v // 2), "half": bool(v % 2)} for v in range(2, 11)
)


def _render(request: HttpRequest, template: str, context: dict, status: int = 200) -> HttpResponse:
    context.setdefault("is_researcher", is_researcher(request.user))
    return render(request, template, context, status=status)


def _forbidden(request: HttpRequest, message: str) -> HttpResponse:
    return _render(request, "annotation/forbidden.html", {"message": message}, status=403)


def researcher_required(view):
    """Management pages: signed-in researchers and admins only; everyone else gets a 403 page."""

    @login_required
    @wraps(view)
    def wrapped(request: HttpRequest, *args, **kwargs):
        if not is_researcher(request.user):
            return _forbidden(request, "This page is for researchers. Ask an administrator if you need access.")
        return view(request, *args, **kwargs)

    return wrapped


def _has_consented(user) -> bool:
    profile = AnnotatorProfile.objects.filter(user=user).first()
    return profile is not None and profile.has_consented


def _safe_next(request: HttpRequest, fallback: str) -> str:
    target = request.POST.get("next") or request.GET.get("next") or ""
    if url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        return target
    return fallback


# --- Audio ----------------------------------------------------------------------


@require_safe
def clip_audio(request: HttpRequest, public_id) -> HttpResponse:
    clip = get_object_or_404(Clip, public_id=public_id)
    # 404 rather than 403: an unauthorised caller learns nothing about which ids exist.
    if not clip_audible_by(user=request.user, clip=clip):
        raise Http404("No such audio.")
    return ranged_file_response(request, clip.file.path, etag=clip.sha256)


# --- Annotator pages --------------------------------------------------------------


@login_required
def home(request: HttpRequest) -> HttpResponse:
    memberships = (
        StudyAnnotator.objects.filter(annotator=request.user, is_active=True, study__is_active=True).select_related("study").order_by("study__name")
    )
    now = timezone.now()
    live = set(
        Assignment.objects.filter(annotator=request.user, state=Assignment.State.ACTIVE, lock_expires_at__gt=now).values_list("pair__study_id", flat=True)
    )
    studies = []
    for membership in memberships:
        progress = annotator_progress(study=membership.study, annotator=request.user)
        studies.append(
            {
                "study": membership.study,
                "progress": progress,
                "percent": round(100 * progress["done"] / progress["target"]) if progress["target"] else 0,
                "finished": progress["target"] > 0 and progress["done"] >= progress["target"],
                "in_progress": membership.study_id in live,
            }
        )
    profile = AnnotatorProfile.objects.filter(user=request.user).first()
    return _render(
        request,
        "annotation/home.html",
        {"studies": studies, "profile": profile, "has_consented": bool(profile and profile.has_consented)},
    )


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def consent(request: HttpRequest) -> HttpResponse:
    next_url = _safe_next(request, reverse("home"))
    if request.method == "POST":
        form = ConsentForm(request.POST)
        if form.is_valid():
            consent_give(user=request.user, version=CONSENT_VERSION)
            messages.success(request, "Thank you: your consent is recorded. You can withdraw it at any time from the top bar.")
            return redirect(next_url)
    else:
        form = ConsentForm()
    studies = Study.objects.filter(memberships__annotator=request.user).distinct().order_by("name")
    profile = AnnotatorProfile.objects.filter(user=request.user).first()
    return _render(
        request,
        "annotation/consent.html",
        {"form": form, "studies": studies, "profile": profile, "next": next_url, "consent_version": CONSENT_VERSION},
    )


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def consent_withdraw_view(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        form = ConsentWithdrawForm(request.POST)
        if form.is_valid():
            excluded = consent_withdraw(user=request.user)
            noun = "judgment" if excluded == 1 else "judgments"
            messages.success(
                request,
                f"Your consent is withdrawn. Your {excluded} {noun} will be left out of every export and analysis made from now on, "
                "and no new pairs will be given to you.",
            )
            return redirect("home")
    else:
        form = ConsentWithdrawForm()
    profile = AnnotatorProfile.objects.filter(user=request.user).first()
    judged = Judgment.objects.filter(annotator=request.user).count()
    return _render(request, "annotation/consent_withdraw.html", {"form": form, "profile": profile, "judged": judged})


def _api_url_template(name: str, *, arg_name: str) -> str:
    # The page fills in the id; reversing with a sentinel keeps the URL shape owned by urls.py.
    sentinel = 987654321
    return reverse(name, kwargs={arg_name: sentinel}).replace(str(sentinel), "{id}")


@login_required
@require_safe
def annotate(request: HttpRequest, name: str) -> HttpResponse:
    study = get_object_or_404(Study, name=name)
    if not StudyAnnotator.objects.filter(study=study, annotator=request.user, is_active=True).exists():
        return _forbidden(request, "You are not an annotator of this study. Ask the researcher running it to add you.")
    if not _has_consented(request.user):
        return redirect(f"{reverse('consent')}?next={request.path}")
    config = {
        "study": study.name,
        "nextUrl": reverse("api-assignment-next", kwargs={"name": study.name}),
        "judgmentUrl": _api_url_template("api-judgment-submit", arg_name="assignment_id"),
        "skipUrl": _api_url_template("api-assignment-skip", arg_name="assignment_id"),
        "consentUrl": f"{reverse('consent')}?next={request.path}",
        "homeUrl": reverse("home"),
    }
    return _render(
        request, "annotation/annotate.html", {"study": study, "config": config, "questions": QUESTIONS, "confidence_values": CONFIDENCE_VALUES}
    )


# --- Researcher pages ---------------------------------------------------------------


IMPORT_URL_NAMES = ("admin:annotation_study_import", "admin:annotation_study_import_pairs")


def _import_url(study: Study) -> str:
    """The admin's pairs import page if the admin provides one, else the Study changelist."""
    for name in IMPORT_URL_NAMES:
        for args in ((), (study.pk,)):
            try:
                return reverse(name, args=args)
            except NoReverseMatch:
                continue
    return reverse("admin:annotation_study_changelist")


def _study_annotator_rows(study: Study) -> list[dict]:
    """Progress per annotator: done / target, skips, live locks, median time on page."""
    now = timezone.now()
    memberships = StudyAnnotator.objects.filter(study=study).select_related("annotator", "annotator__annotator_profile").order_by("annotator__username")
    target_default = study.annotator_target or study.pairs.count()
    times: dict[int, list[int]] = {}
    done: dict[int, int] = {}
    for annotator_id, ms in Judgment.objects.filter(pair__study=study).values_list("annotator_id", "time_on_page_ms"):
        done[annotator_id] = done.get(annotator_id, 0) + 1
        if ms is not None:
            times.setdefault(annotator_id, []).append(ms)
    states = {
        row["annotator_id"]: row
        for row in Assignment.objects.filter(pair__study=study)
        .values("annotator_id")
        .annotate(
            skipped=Count("id", filter=Q(state=Assignment.State.SKIPPED)),
            live=Count("id", filter=Q(state=Assignment.State.ACTIVE, lock_expires_at__gt=now)),
        )
    }
    rows = []
    for membership in memberships:
        user = membership.annotator
        profile = getattr(user, "annotator_profile", None)
        n_done = done.get(user.pk, 0)
        median_ms = statistics.median(times[user.pk]) if user.pk in times else None
        rows.append(
            {
                "username": user.username,
                "pseudonym": profile.pseudonym if profile else "",
                "consented": bool(profile and profile.has_consented),
                "withdrawn": bool(profile and profile.withdrawn_at),
                "active": membership.is_active,
                "done": n_done,
                "target": max(target_default, n_done),
                "skipped": states.get(user.pk, {}).get("skipped", 0),
                "live": states.get(user.pk, {}).get("live", 0),
                "median_seconds": None if median_ms is None else median_ms / 1000,
            }
        )
    return rows


def _study_pair_page(study: Study, page_number):
    now = timezone.now()
    pairs = (
        Pair.objects.filter(study=study)
        .select_related("condition")
        .annotate(
            votes=Count("judgments", distinct=True),
            live=Count("assignments", filter=Q(assignments__state=Assignment.State.ACTIVE, assignments__lock_expires_at__gt=now), distinct=True),
            skips=Count("assignments", filter=Q(assignments__state=Assignment.State.SKIPPED), distinct=True),
        )
        .order_by("id")
    )
    return Paginator(pairs, PAIRS_PER_PAGE).get_page(page_number)


def _study_totals(study: Study) -> dict:
    now = timezone.now()
    pairs = study.pairs.aggregate(n=Count("id"), wanted=Sum("overlap"))
    return {
        "pairs": pairs["n"] or 0,
        "votes_wanted": pairs["wanted"] or 0,
        "judgments": Judgment.objects.filter(pair__study=study).count(),
        "live_locks": Assignment.objects.filter(pair__study=study, state=Assignment.State.ACTIVE, lock_expires_at__gt=now).count(),
        "skips": Assignment.objects.filter(pair__study=study, state=Assignment.State.SKIPPED).count(),
    }


@researcher_required
@require_safe
def study_manage_list(request: HttpRequest) -> HttpResponse:
    studies = Study.objects.annotate(
        n_pairs=Count("pairs", distinct=True),
        n_annotators=Count("memberships", filter=Q(memberships__is_active=True), distinct=True),
        n_judgments=Count("pairs__judgments", distinct=True),
    ).order_by("name")
    return _render(request, "annotation/manage/study_list.html", {"studies": studies})


@researcher_required
@require_http_methods(["GET", "HEAD", "POST"])
def study_create(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        form = StudyForm(request.POST)
        if form.is_valid():
            study = form.save()
            messages.success(request, f"Study “{study.name}” created. Add annotators and import pairs next.")
            return redirect("study-manage", name=study.name)
    else:
        form = StudyForm()
    return _render(request, "annotation/manage/study_form.html", {"form": form, "creating": True})


@researcher_required
@require_http_methods(["GET", "HEAD", "POST"])
def study_edit(request: HttpRequest, name: str) -> HttpResponse:
    study = get_object_or_404(Study, name=name)
    if request.method == "POST":
        form = StudyForm(request.POST, instance=study)
        if form.is_valid():
            form.save()
            messages.success(request, "Study parameters saved. They apply to pairs served from now on.")
            return redirect("study-manage", name=study.name)
    else:
        form = StudyForm(instance=study)
    return _render(request, "annotation/manage/study_form.html", {"form": form, "study": study, "creating": False})


@researcher_required
@require_safe
def study_manage(request: HttpRequest, name: str) -> HttpResponse:
    study = get_object_or_404(Study, name=name)
    return _study_manage_render(request, study, StudyAnnotatorAddForm())


def _study_manage_render(request: HttpRequest, study: Study, add_form: StudyAnnotatorAddForm, status: int = 200) -> HttpResponse:
    context = {
        "study": study,
        "add_form": add_form,
        "annotators": _study_annotator_rows(study),
        "pairs": _study_pair_page(study, request.GET.get("page")),
        "totals": _study_totals(study),
        "import_url": _import_url(study),
    }
    return _render(request, "annotation/manage/study_detail.html", context, status=status)


@researcher_required
@require_POST
def study_annotators_add(request: HttpRequest, name: str) -> HttpResponse:
    study = get_object_or_404(Study, name=name)
    form = StudyAnnotatorAddForm(request.POST)
    if not form.is_valid():
        return _study_manage_render(request, study, form, status=400)
    users = form.cleaned_data["usernames"]
    with transaction.atomic():
        for user in users:
            study_annotator_add(study=study, user=user)
    messages.success(request, f"Added to “{study.name}”: {', '.join(u.username for u in users)}.")
    return redirect("study-manage", name=study.name)
