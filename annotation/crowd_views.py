"""Pages of the crowd-quality steps: the headphone screen, the practice round, recruitment links and their end codes.

The order before the first pair is: (recruitment link ->) consent -> screen -> practice -> pairs.
Which step comes first is services.crowd_step, for these pages and the APIs alike.
"""

from __future__ import annotations

import random
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth import login, logout
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_safe

from common import audio_proof
from common.blind import opaque_etag
from common.errors import ServiceError
from common.proxy import client_address
from common.ranged import ranged_file_response
from common.roles import is_researcher

from . import selectors, services
from .crowd_models import ExternalParticipant, PracticeItem, ScreeningAttempt
from .models import Study
from .questionnaire_selectors import questionnaire_pending
from .screens import screen_for


def _page(request: HttpRequest, template: str, context: dict, status: int = 200) -> HttpResponse:
    context.setdefault("is_researcher", is_researcher(request.user))
    return render(request, template, context, status=status)


# The login backend for accounts made from a recruitment link (they have no password).
LINK_BACKEND = "django.contrib.auth.backends.ModelBackend"


def _member_study(request: HttpRequest, name: str) -> Study:
    study = get_object_or_404(Study, name=name)
    if not selectors.is_active_member(study=study, user=request.user):
        raise Http404("You are not an annotator of this study.")
    return study


def _participant(user) -> ExternalParticipant | None:
    return ExternalParticipant.objects.filter(user=user).select_related("link").first()


def _code_url(participant: ExternalParticipant, code: str) -> str:
    return f"{participant.link.completion_url}?{urlencode({'cc': code})}"


# --- Headphone screen --------------------------------------------------------------


def _screening_render(request, study, attempt, *, message: str = "", status: int = 200) -> HttpResponse:
    trials = [{"index": i, "number": i + 1, "url": reverse("screening-trial", kwargs={"token": attempt.token, "index": i})} for i in range(attempt.trials)]
    state = services.screening_status(study=study, annotator=request.user)
    screen = screen_for(attempt.kind)
    # The answers and wording come from the attempt's screen, so the one template serves every kind of screen.
    shown = {"choices": [str(c) for c in screen.choices], "instructions": screen.instructions_text(), "question": screen.question}
    context = {"study": study, "attempt": attempt, "trials": trials, "screen": shown, "message": message, "attempts_left": state["allowed"] - state["attempts"]}
    return _page(request, "annotation/screening.html", context, status=status)


def _screened_out(request, study) -> HttpResponse:
    participant = _participant(request.user)
    code = url = None
    if participant is not None and participant.link.screenout_code:
        code = services.recruitment_finish(participant=participant, screened_out=True)
        url = _code_url(participant, code)
    response = _page(request, "annotation/screening_failed.html", {"study": study, "code": code, "code_url": url, "participant_study": study if participant else None})
    if participant is not None:
        # A screened-out participant's session ends here: the account has nothing more to do (its screen stays failed if it comes back).
        logout(request)
    return response


@login_required
@never_cache
@require_safe
def screening_page(request: HttpRequest, name: str) -> HttpResponse:
    study = _member_study(request, name)
    if not selectors.has_consented(user=request.user):
        return redirect(f"{reverse('consent')}?next={request.path}")
    state = services.screening_status(study=study, annotator=request.user)["state"]
    if state == "failed":
        return _screened_out(request, study)
    if state in ("off", "passed"):
        return redirect("annotate", name=study.name)
    return _screening_render(request, study, services.screening_attempt_open(study=study, annotator=request.user))


@login_required
@require_http_methods(["POST"])
def screening_submit(request: HttpRequest, name: str, token: str) -> HttpResponse:
    study = _member_study(request, name)
    # How many answers to read comes from the attempt the server made, never from the form.
    current = ScreeningAttempt.objects.filter(token=token, annotator=request.user, study=study).first()
    if current is None:
        return _page(request, "annotation/forbidden.html", {"message": "No such screening attempt for you."}, status=404)
    if current.passed is None:
        try:
            missing = services.screening_receipts_missing(attempt=current, receipts={i: request.POST.get(f"receipt-{i}", "") for i in range(current.trials)})
        except ServiceError as exc:
            return _screening_render(request, study, current, message=exc.message, status=400)
        if missing:
            message = f"Play every sound before answering (not played yet: sound {', '.join(str(i + 1) for i in missing)})."
            return _screening_render(request, study, current, message=message, status=400)
    raw = [request.POST.get(f"trial-{i}", "") for i in range(current.trials)]
    offered = {str(choice): choice for choice in screen_for(current.kind).choices}
    answers = [offered.get(a) for a in raw]
    if None in answers:
        answers = None
    try:
        attempt = services.screening_answer(token=token, annotator=request.user, answers=answers)
    except ServiceError as exc:
        if exc.code == "bad_answers":
            current = ScreeningAttempt.objects.filter(token=token, annotator=request.user).first()
            if current is not None:
                return _screening_render(request, study, current, message=exc.message, status=400)
        return _page(request, "annotation/forbidden.html", {"message": exc.message}, status=exc.status)
    if attempt.passed:
        messages.success(request, f"Headphone check passed: {attempt.correct} of {attempt.trials} right. Thank you.")
        return redirect("annotate", name=study.name)
    state = services.screening_status(study=study, annotator=request.user)
    if state["state"] == "failed":
        return _screened_out(request, study)
    retry = services.screening_attempt_open(study=study, annotator=request.user)
    message = f"That did not pass ({attempt.correct} of {attempt.trials} right; {attempt.pass_mark} needed). Check that headphones are on, with both sides, and try the new sounds."
    return _screening_render(request, study, retry, message=message)


@login_required
@require_safe
def screening_trial(request: HttpRequest, token: str, index: int) -> HttpResponse:
    attempt = ScreeningAttempt.objects.filter(token=token, annotator=request.user).first()
    if attempt is None or not 0 <= index < attempt.trials or attempt.passed is not None:
        raise Http404("No such sound.")
    wav = screen_for(attempt.kind).trial_wav(attempt.seed, index)
    response = HttpResponse(wav, content_type="audio/wav")
    response["Cache-Control"] = "private, no-store"
    # The answer counts a sound as played once the page proves it received it (services.screening_receipts_missing).
    ranges = audio_proof.challenge_ranges(0, len(wav) - 1)
    response[audio_proof.HEADER] = audio_proof.challenge_token(path=request.path, first=0, last=len(wav) - 1, issued=timezone.now(), ranges=ranges, data=wav)
    return response


# --- Practice round -------------------------------------------------------------------


def _practice_audio_url(item: PracticeItem, clip_id: int) -> str:
    which = "a" if clip_id == item.clip_a_id else "b"
    return reverse("practice-audio", kwargs={"item_id": item.pk, "which": which})


@login_required
@never_cache
@require_http_methods(["GET", "HEAD", "POST"])
def practice_page(request: HttpRequest, name: str) -> HttpResponse:
    study = _member_study(request, name)
    if not selectors.has_consented(user=request.user):
        return redirect(f"{reverse('consent')}?next={request.path}")
    if services.screening_pending(study=study, annotator=request.user):
        return redirect("screening", name=study.name)
    total = services.practice_servable(study=study).count()
    if request.method == "POST":
        try:
            services.practice_receipts_check(
                item_id=int(request.POST.get("item") or 0), shown_a=request.POST.get("shown_a", ""),
                receipts={"A": request.POST.get("receipt_A", ""), "B": request.POST.get("receipt_B", "")},
            )  # fmt: skip
            answer = services.practice_answer(
                item_id=int(request.POST.get("item") or 0),
                study=study,
                annotator=request.user,
                shown_a=request.POST.get("shown_a", ""),
                alignment=request.POST.get("alignment", ""),
                musicality=request.POST.get("musicality", ""),
            )
        except (ServiceError, ValueError) as exc:
            message = exc.message if isinstance(exc, ServiceError) else "The page sent no practice pair; reload it."
            return _page(request, "annotation/forbidden.html", {"message": message}, status=getattr(exc, "status", 400))
        item = answer.item
        shown_a = request.POST["shown_a"]
        first_id = item.clip_a_id if shown_a == "a" else item.clip_b_id
        side = lambda clip_id: None if clip_id is None else ("A" if clip_id == first_id else "B")  # noqa: E731
        feedback = {
            "alignment": {"expected": side(item.expected_alignment_id), "right": answer.alignment_right},
            "musicality": {"expected": side(item.expected_musicality_id), "right": answer.musicality_right},
            "explanation": item.explanation,
        }
        done = total - services.practice_servable(study=study).exclude(answers__annotator=request.user).count()
        return _page(request, "annotation/practice.html", {"study": study, "item": item, "feedback": feedback, "done": done, "total": total, "clips": _clips(item, shown_a, study), "min_listen": study.min_listen_seconds})
    item = services.practice_next(study=study, annotator=request.user)
    if item is None:
        return redirect("annotate", name=study.name)
    shown_a = random.choice("ab")
    done = total - services.practice_servable(study=study).exclude(answers__annotator=request.user).count()
    return _page(request, "annotation/practice.html", {"study": study, "item": item, "shown_a": shown_a, "done": done, "total": total, "clips": _clips(item, shown_a, study), "min_listen": study.min_listen_seconds})


def _clips(item: PracticeItem, shown_a: str, study: Study) -> dict:
    """The practice pair's audio URLs as shown, and the gains the page plays them at (Study.clip_gain_db), as the real pairs get them."""
    first, second = (item.clip_a, item.clip_b) if shown_a == "a" else (item.clip_b, item.clip_a)
    gain = lambda clip: f"{study.clip_gain_db(clip):.1f}"  # noqa: E731
    return {"A": _practice_audio_url(item, first.pk), "B": _practice_audio_url(item, second.pk), "gain_A": gain(first), "gain_B": gain(second)}


@login_required
@require_safe
def practice_audio(request: HttpRequest, item_id: int, which: str) -> HttpResponse:
    item = PracticeItem.objects.filter(pk=item_id).select_related("study", "clip_a", "clip_b").first()
    if item is not None and not services.practice_servable(study=item.study).filter(pk=item.pk).exists():
        item = None
    if item is None or which not in ("a", "b") or not selectors.is_active_member(study=item.study, user=request.user):
        raise Http404("No such audio.")
    clip = item.clip_a if which == "a" else item.clip_b
    # Whole files only and a challenge on each: the answer counts once the page proves it received both (no fetch record kept).
    return ranged_file_response(request, clip.file.path, etag=opaque_etag(path=request.path, content_hash=clip.sha256), proof_at=timezone.now(), ranges=False)


# --- Recruitment links ---------------------------------------------------------------------


RESUME_COOKIE_SALT = "auditorium.recruitment.resume"


def _resume_cookie(study_id: int) -> str:
    return f"auditorium_resume_{study_id}"


def _next_step(participant: ExternalParticipant) -> str:
    annotate_url = reverse("annotate", kwargs={"name": participant.study.name})
    if not selectors.has_consented(user=participant.user):
        return f"{reverse('consent')}?{urlencode({'next': annotate_url})}"
    return annotate_url


def _stored_code(request, link) -> str:
    return request.get_signed_cookie(_resume_cookie(link.study_id), default="", salt=RESUME_COOKIE_SALT)


def _start_page(request, link, cleaned, known, *, message: str = "", status: int = 200, asked_to_switch: bool = False) -> HttpResponse:
    mine = services.recruitment_claim_of(link=link, participant_id=cleaned["participant"], user=request.user)
    other = request.user if request.user.is_authenticated and mine is None else None
    stored = _stored_code(request, link)
    context = {
        "study": link.study,
        "known": known is not None,
        # The code is never put back into the page: the cookie travels with the POST by itself. A stored code
        # of another participant of this study (a shared computer) does not count as this one's.
        "has_stored_code": bool(stored) and known is not None and services.recruitment_resume_matches(link=link, participant_id=cleaned["participant"], code=stored),
        "signed_in_as": other.get_username() if other is not None else "",
        "asked_to_switch": asked_to_switch,
        "message": message,
        "participant_study": link.study,
        # A form sent twice (a double click, a retry) is one visit: the key makes the second find the first's claim.
        # A page shown again after a refusal made no claim, so it gets a fresh key.
        "entry_key": services.recruitment_entry_key(link=link, participant_id=cleaned["participant"]),
    }
    return _page(request, "annotation/recruitment_start.html", context, status=status)


# Refusals that no form on the start page can change: the refused page, not the start page again.
_REFUSED = ("not_found", "expired", "over_cap", "paused", "bad_parameter", "no_participant", "bad_signature")


@never_cache
@require_http_methods(["GET", "HEAD", "POST"])
def recruitment_enter(request: HttpRequest, token: str) -> HttpResponse:
    """The study link. GET only shows the start page (it never signs anyone in or out); joining or
    resuming is a POST from that page, with its CSRF token, so no image tag or link on another site
    can plant an account in a browser, or take one over.

    Resuming a known participant id needs the resume code from the first visit (the signed cookie
    this browser stored then, or the code typed in, which is throttled). Without one the visitor takes
    part as a new participant, flagged as a duplicate claim of the id. A browser signed in as someone
    else is asked first, and switched only when the person confirms.
    """
    try:
        link, cleaned = services.recruitment_link_for(token=token, params=request.GET)
    except ServiceError as exc:
        return _page(request, "annotation/recruitment_refused.html", {"message": exc.message}, status=exc.status)
    mine = services.recruitment_claim_of(link=link, participant_id=cleaned["participant"], user=request.user)
    if mine is not None:
        # Already this participant (or this duplicate claim) in this browser: carry on (nothing about the session changes).
        return redirect(_next_step(mine))
    known = services.recruitment_participant_known(link=link, participant_id=cleaned["participant"])
    if request.method != "POST":
        return _start_page(request, link, cleaned, known)
    if request.user.is_authenticated and request.POST.get("switch_account") != "1":
        return _start_page(request, link, cleaned, known, status=409, asked_to_switch=True,
                           message=f"This browser is signed in as {request.user.get_username()}. Confirm below to sign out of that account and take part as a participant.")  # fmt: skip
    try:
        participant, fresh_code = services.recruitment_enter(
            token=token, params=request.GET, typed_code=request.POST.get("resume_code", ""), cookie_code=_stored_code(request, link),
            as_new=request.POST.get("as_new") == "1", address=client_address(request), entry_key=request.POST.get("entry_key", ""),
        )  # fmt: skip
    except ServiceError as exc:
        if exc.code in _REFUSED:
            return _page(request, "annotation/recruitment_refused.html", {"message": exc.message}, status=exc.status)
        return _start_page(request, link, cleaned, known, message=exc.message, status=exc.status)
    if request.user.is_authenticated:
        logout(request)
    login(request, participant.user, backend=LINK_BACKEND)
    if not fresh_code:
        return redirect(_next_step(participant))
    context = {
        "study": link.study, "resume_code": services.resume_code_display(fresh_code), "next_url": _next_step(participant),
        "participant_study": link.study, "duplicate_claim": participant.duplicate_claim,
    }  # fmt: skip
    response = _page(request, "annotation/recruitment_code.html", context)
    max_age = max(60, int((link.expires_at - timezone.now()).total_seconds()) + 30 * 86400)
    response.set_signed_cookie(
        _resume_cookie(link.study_id), fresh_code, salt=RESUME_COOKIE_SALT, max_age=max_age, httponly=True, samesite="Lax", secure=request.is_secure()
    )
    return response


@login_required
@never_cache
@require_safe
def recruitment_done(request: HttpRequest, name: str) -> HttpResponse:
    study = _member_study(request, name)
    participant = _participant(request.user)
    if participant is None or participant.study_id != study.pk:
        raise Http404("This page is for participants who came from a recruitment link.")
    progress = selectors.annotator_progress(study=study, annotator=request.user)
    if participant.completed_at is None:
        if progress["state"] == "open":
            return render(
                request, "annotation/forbidden.html", {"message": f"You have judged {progress['done']} of {progress['target']} pairs; the completion code comes after the last one."}, status=409
            )
        if not services.recruitment_work_complete(study=study, progress=progress):
            return _page(request, "annotation/recruitment_nothing.html", {"study": study, "progress": progress, "participant_study": study})
        # The questions after the study come before the code (annotation/questionnaire_views.py).
        if questionnaire_pending(study=study, annotator=request.user, phase="post") is not None:
            return redirect("questionnaire-post", name=study.name)
    code = services.recruitment_finish(participant=participant)
    return _page(request, "annotation/recruitment_done.html", {"study": study, "code": code, "code_url": _code_url(participant, code)})
