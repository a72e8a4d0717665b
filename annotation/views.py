"""HTML views and audio serving for the annotation app.

The listening page itself is a static shell: it talks to the JSON API
(annotation/api.py) for assignments and judgments, so the rules live in one
place (annotation/services/) for the page and for API clients alike.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from common.blind import opaque_etag
from common.errors import ServiceError
from common.guards import forbidden, researcher_required
from common.ranged import ranged_file_response
from common.roles import is_researcher

from . import selectors, services
from .access import clip_audible_by, studies_visible_to, study_required
from .adjudication_selectors import adjudication_studies_of
from .adjudication_views import adjudication_context
from .crowd_forms import crowd_manage_context
from .crowd_selectors import annotator_crowd_columns
from .dataset import max_upload_bytes, pairs_import_upload
from .forms import ConsentForm, ConsentWithdrawForm, PairUploadForm, StudyAnnotatorAddForm, StudyCollaboratorsForm, StudyExportForm, StudyForm
from .models import Clip, Study
from .ratings import services as rating_services

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


def _form_error(form, exc: ServiceError) -> None:
    """Show a service's refusal on the form: beside the fields it names, else above them."""
    placed = False
    for field, field_messages in (exc.extra.get("errors") or {}).items():
        if field in form.fields:
            for message in field_messages:
                form.add_error(field, message)
            placed = True
    if not placed:
        form.add_error(None, exc.message)


def _safe_next(request: HttpRequest, fallback: str) -> str:
    target = request.POST.get("next") or request.GET.get("next") or ""
    if url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        return target
    return fallback


# --- Audio ----------------------------------------------------------------------


@require_safe
def clip_audio(request: HttpRequest, public_id) -> HttpResponse:
    return clip_audio_served(request, get_object_or_404(Clip, public_id=public_id))


@login_required
@require_safe
def pair_audio(request: HttpRequest, token: str) -> HttpResponse:
    """A pair page's clip under its assignment's own URL (selectors.pair_audio_path); the clip rule still decides."""
    return clip_audio_served(request, selectors.pair_audio_clip(token=token, user=request.user))


def clip_audio_served(request: HttpRequest, clip: Clip | None, *, rendered=None, served_as: str = "") -> HttpResponse:
    """The clip's audio (ranges, an opaque ETag) for a user the clip rule (access.clip_audible_by) lets hear it,
    pairwise and rating pages alike; what each response sent is recorded, and the submit checks listening against that record.

    `rendered`, when given, makes the file served (a callable answering (path, content key), e.g. a blind page's copy
    of the clip in the page's shape, common/audio_render.py); it runs only after the clip rule has let the user in.
    `served_as` is recorded with each fetch (AudioFetch.served_as)."""
    # 404 rather than 403: an unauthorised caller learns nothing about which ids exist.
    if clip is None or not clip_audible_by(user=request.user, clip=clip):
        raise Http404("No such audio.")
    user, started = request.user, timezone.now()
    path, content_hash = rendered() if rendered is not None else (clip.file.path, clip.sha256)

    def sent(first: int, last: int, total: int) -> None:
        # What reached the client is what can have been heard: the judgment submit checks listening against it.
        services.audio_fetch_record(user=user, clip=clip, served=(first, last, total), now=started, served_as=served_as)

    return ranged_file_response(request, str(path), etag=opaque_etag(path=request.path, content_hash=content_hash), on_sent=sent, proof_at=started)


# --- Annotator pages --------------------------------------------------------------


@login_required
def home(request: HttpRequest) -> HttpResponse:
    """One home per role: an annotator's tasks, a researcher's studies, both for staff."""
    sections = selectors.home_sections(user=request.user)
    context = {"sections": sections, "studies": [], "research_studies": []}
    if sections["tasks"]:
        profile = selectors.profile_for(user=request.user)
        context.update(
            studies=selectors.annotator_home_studies(user=request.user),
            profile=profile,
            has_consented=bool(profile and profile.has_consented),
        )
    if sections["research"]:
        context["research_studies"] = selectors.researcher_home_studies(user=request.user)
    context["adjudication_studies"] = adjudication_studies_of(user=request.user)
    return _render(request, "annotation/home.html", context)


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def consent(request: HttpRequest) -> HttpResponse:
    next_url = _safe_next(request, reverse("home"))
    if request.method == "POST":
        form = ConsentForm(request.POST)
        if form.is_valid():
            services.consent_give(user=request.user, version=services.CONSENT_VERSION)
            messages.success(request, "Thank you: your consent is recorded. You can withdraw it at any time from the top bar.")
            return redirect(next_url)
    else:
        form = ConsentForm()
    return _render(
        request,
        "annotation/consent.html",
        {
            "form": form,
            "studies": selectors.studies_of(user=request.user),
            "profile": selectors.profile_for(user=request.user),
            "next": next_url,
            "consent_version": services.CONSENT_VERSION,
        },
    )


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def consent_withdraw_view(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        form = ConsentWithdrawForm(request.POST)
        if form.is_valid():
            excluded = services.consent_withdraw(user=request.user)
            noun = "judgment" if excluded == 1 else "judgments"
            messages.success(
                request,
                f"Your consent is withdrawn. Your {excluded} {noun} will be left out of every export and analysis made from now on, "
                "and no new pairs will be given to you.",
            )
            return redirect("home")
    else:
        form = ConsentWithdrawForm()
    profile = selectors.profile_for(user=request.user)
    judged = selectors.judgment_count(user=request.user)
    return _render(request, "annotation/consent_withdraw.html", {"form": form, "profile": profile, "judged": judged})


def api_url_template(name: str, *, arg_name: str = "assignment_id") -> str:
    # The page fills in the id; reversing with a sentinel keeps the URL shape owned by urls.py.
    sentinel = 987654321
    return reverse(name, kwargs={arg_name: sentinel}).replace(str(sentinel), "{id}")


def annotator_page_gate(request: HttpRequest, study: Study, *, rating_page: bool) -> HttpResponse | None:
    """What stands between an annotator and a study's listening page, or None when they may open it.

    The pairwise page and the rating page pass the same gates in the same order, so that neither
    can tell a non-member more than the other does.
    """
    # Membership first: whoever is not an annotator of the study learns nothing of it, not even its task type.
    if not selectors.is_active_member(study=study, user=request.user):
        return forbidden(request, "You are not an annotator of this study. Ask the researcher running it to add you.")
    # A rating study (acr, multi) has its own page (annotation/ratings/); a pairwise one has this app's.
    if hasattr(study, "rating_task") != rating_page:
        return redirect("ratings:rate" if not rating_page else "annotate", name=study.name)
    if not selectors.has_consented(user=request.user):
        return redirect(f"{reverse('consent')}?next={request.path}")
    # The same headphone screen and practice round for both kinds, before the first item.
    step = services.crowd_step(study=study, annotator=request.user)
    if step is not None:
        return redirect(step, name=study.name)
    return None


@login_required
@require_safe
def annotate(request: HttpRequest, name: str) -> HttpResponse:
    study = get_object_or_404(Study, name=name)
    gate = annotator_page_gate(request, study, rating_page=False)
    if gate is not None:
        return gate
    config = {
        "study": study.name,
        "nextUrl": reverse("api-assignment-next", kwargs={"name": study.name}),
        "judgmentUrl": api_url_template("api-judgment-submit", arg_name="assignment_id"),
        # The page's own judgment: its listening in the body, the next pair in the answer.
        "cycleUrl": reverse("api-judgment-cycle", kwargs={"name": study.name, "assignment_id": 987654321}).replace("987654321", "{id}"),
        # Separate screens: one dimension per request (api.DimensionAnswerApi).
        "answerUrl": reverse("api-dimension-answer", kwargs={"name": study.name, "assignment_id": 987654321}).replace("987654321", "{id}"),
        "listeningUrl": api_url_template("api-listening-events", arg_name="assignment_id"),
        "skipUrl": api_url_template("api-assignment-skip", arg_name="assignment_id"),
        "consentUrl": f"{reverse('consent')}?next={request.path}",
        # Where a refusal for unanswered questions before the study sends the page (services.questionnaire_gate_check).
        "questionnaireUrl": reverse("questionnaire-pre", kwargs={"name": study.name}),
        "homeUrl": reverse("home"),
    }
    finish_url = reverse("recruitment-done", kwargs={"name": study.name}) if hasattr(request.user, "external_participant") else None
    return _render(
        request,
        "annotation/annotate.html",
        {"study": study, "config": config, "questions": QUESTIONS, "confidence_values": CONFIDENCE_VALUES, "finish_url": finish_url},
    )


# --- Researcher pages ---------------------------------------------------------------


def _import_url(study: Study) -> str:
    return f"{reverse('pairs-import')}?study={study.name}"


@researcher_required
@require_safe
def study_manage_list(request: HttpRequest) -> HttpResponse:
    return _render(request, "annotation/manage/study_list.html", {"studies": selectors.studies_with_counts().filter(pk__in=studies_visible_to(user=request.user).values("pk"))})


@researcher_required
@require_http_methods(["GET", "HEAD", "POST"])
def study_create(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        form = StudyForm(request.POST)
        if form.is_valid():
            try:
                study = rating_services.rating_study_create(owner=request.user, **form.cleaned_data)
            except ServiceError as exc:
                _form_error(form, exc)
            else:
                messages.success(request, f"Study “{study.name}” created. Add annotators and import pairs next.")
                return redirect("study-manage", name=study.name)
    else:
        form = StudyForm()
    return _render(request, "annotation/manage/study_form.html", {"form": form, "creating": True})


def _not_writable(request: HttpRequest, study: Study) -> HttpResponse | None:
    if selectors.study_writable_by(study=study, user=request.user):
        return None
    return forbidden(request, f"Only the owner of “{study.name}”, the collaborators the owner names, or an administrator can change it.")


@study_required
@require_http_methods(["GET", "HEAD", "POST"])
def study_edit(request: HttpRequest, name: str) -> HttpResponse:
    study = get_object_or_404(Study, name=name)
    if (refused := _not_writable(request, study)) is not None:
        return refused
    if request.method == "POST":
        form = StudyForm(request.POST, instance=study)
        if form.is_valid():
            parameters = {key: value for key, value in form.cleaned_data.items() if key != "name"}
            try:
                rating_services.rating_study_update(study=study, **parameters)
            except ServiceError as exc:
                _form_error(form, exc)
            else:
                added = len(parameters.get("clip_sets") or ())
                messages.success(request, "Study parameters saved. They apply to tasks served from now on." + (f" {added} rating item(s) added." if added else ""))
                return redirect("study-manage", name=study.name)
    else:
        form = StudyForm(instance=study)
    return _render(request, "annotation/manage/study_form.html", {"form": form, "study": study, "creating": False})


@study_required
@require_safe
def study_manage(request: HttpRequest, name: str) -> HttpResponse:
    study = get_object_or_404(Study, name=name)
    return _study_manage_render(request, study, StudyAnnotatorAddForm())


def _study_manage_render(
    request: HttpRequest, study: Study, add_form: StudyAnnotatorAddForm | None, status: int = 200, export_form: StudyExportForm | None = None,
    crowd_forms: dict | None = None,
) -> HttpResponse:  # fmt: skip
    can_export = selectors.study_exportable_by(study=study, user=request.user)
    latest = selectors.study_export_latest(study=study, user=request.user) if can_export else None
    context = {
        "study": study,
        "add_form": add_form or StudyAnnotatorAddForm(),
        "annotators": annotator_crowd_columns(study=study, rows=selectors.study_annotator_rows(study=study)),
        "pairs": Paginator(selectors.study_pairs_with_load(study=study), PAIRS_PER_PAGE).get_page(request.GET.get("page")),
        "totals": selectors.study_totals(study=study),
        "loudness": selectors.study_loudness(study=study),
        "systems": selectors.study_system_names(study=study),
        "import_url": _import_url(study),
        "can_import": selectors.study_importable_by(study=study, user=request.user),
        "can_export": can_export,
        "export_form": export_form or StudyExportForm(),
        "export_latest": selectors.study_export_status(export=latest) if latest else None,
        "export_status_url": reverse("study-export-status", args=[study.name, latest.public_id]) if latest else "",
        "export_download_url": reverse("study-export-download", args=[study.name, latest.public_id]) if latest and latest.state == "done" else "",
        "can_change": selectors.study_writable_by(study=study, user=request.user),
        "can_name_collaborators": selectors.study_collaborators_editable_by(study=study, user=request.user),
        "collaborators": study.collaborators.order_by("username"),
    }
    context.update(adjudication_context(study=study, user=request.user))
    context.update(crowd_manage_context(study=study, can_change=context["can_change"], base_url=request.build_absolute_uri("/")[:-1], **(crowd_forms or {})))
    return _render(request, "annotation/manage/study_detail.html", context, status=status)


@study_required
@require_POST
def study_annotators_add(request: HttpRequest, name: str) -> HttpResponse:
    study = get_object_or_404(Study, name=name)
    if (refused := _not_writable(request, study)) is not None:
        return refused
    form = StudyAnnotatorAddForm(request.POST)
    if not form.is_valid():
        return _study_manage_render(request, study, form, status=400)
    users = form.cleaned_data["usernames"]
    services.study_annotators_add(study=study, users=users)
    messages.success(request, f"Added to “{study.name}”: {', '.join(u.username for u in users)}.")
    return redirect("study-manage", name=study.name)


@study_required
@require_POST
def study_collaborators_set(request: HttpRequest, name: str) -> HttpResponse:
    """The owner (or an admin) names the researchers who may change the study with them."""
    study = get_object_or_404(Study, name=name)
    if not selectors.study_collaborators_editable_by(study=study, user=request.user):
        return forbidden(request, f"Only the owner of “{study.name}” or an administrator names its collaborators.")
    form = StudyCollaboratorsForm(request.POST)
    if not form.is_valid():
        messages.error(request, " ".join(form.errors.get("usernames", ["Check the names."])))
        return redirect("study-manage", name=study.name)
    users = services.study_collaborators_set(study=study, users=form.cleaned_data["usernames"])
    messages.success(request, f"Collaborators of “{study.name}”: {', '.join(u.username for u in users) or 'none'}.")
    return redirect("study-manage", name=study.name)


# --- Importing pairs -------------------------------------------------------------

IMPORT_RESULT_KEY = "pairs_import_result"


@researcher_required
@require_http_methods(["GET", "HEAD", "POST"])
def pairs_import(request: HttpRequest) -> HttpResponse:
    """JSONL + zip upload into a study the user owns (admins: any study), with the admin import's all-or-nothing checks."""
    studies = selectors.studies_importable_by(user=request.user)
    wanted = request.POST.get("study") if request.method == "POST" else request.GET.get("study")
    # The page links back to the study only when the name is one (a typed "a b" is no study and no URL).
    study = Study.objects.filter(name=wanted).first() if wanted else None
    if study is not None and not selectors.study_importable_by(study=study, user=request.user):
        return forbidden(request, f"Only the owner of “{study.name}”, the collaborators the owner names, or an administrator can import pairs into it.")
    limit = max_upload_bytes()
    if request.method == "POST":
        form = PairUploadForm(request.POST, request.FILES, studies=studies, max_bytes=limit)
        report = None
        if form.is_valid():
            data = form.cleaned_data
            try:
                report = pairs_import_upload(
                    archive=data["archive"], jsonl=data["jsonl"], study_name=data["study"].name, skip_invalid=data["skip_invalid"]
                )
            except ServiceError as exc:
                form.add_error(None, exc.message)
            else:
                if report.imported:
                    request.session[IMPORT_RESULT_KEY] = {
                        "study": data["study"].name,
                        "summary": report.summary().splitlines(),
                        "errors": [str(e) for e in report.errors],
                        "error_count": report.error_count,
                        "warnings": list(report.warnings),
                    }
                    return redirect("pairs-import-done")
        context = {"form": form, "report": report, "max_upload_bytes": limit, "studies": studies, "study": study}
        return _render(request, "annotation/manage/pairs_import.html", context, status=400)
    form = PairUploadForm(initial={"study": study.name} if study else None, studies=studies, max_bytes=limit)
    return _render(request, "annotation/manage/pairs_import.html", {"form": form, "max_upload_bytes": limit, "studies": studies, "study": study})


@researcher_required
@require_safe
def pairs_import_done(request: HttpRequest) -> HttpResponse:
    result = request.session.get(IMPORT_RESULT_KEY)
    study = Study.objects.filter(name=result["study"]).first() if result else None
    return _render(request, "annotation/manage/pairs_import_done.html", {"result": result, "study": study})
