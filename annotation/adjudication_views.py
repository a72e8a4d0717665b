"""HTML pages of adjudication: a study's queue of disputed pairs, one pair's page (its audio through the study's
A/B transport, the votes, rationales and judge verdict, the decision form), its audio, and naming the adjudicators.

Thin: each parses, calls one service or selector, and renders; the rules are in adjudication_selectors.py and
services/adjudication.py.
"""

from __future__ import annotations

from functools import wraps

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from common.blind import opaque_etag
from common.errors import ServiceError
from common.guards import forbidden
from common.ranged import ranged_file_response
from common.roles import is_researcher

from . import adjudication_selectors as selectors
from .access import clip_audible_by, study_required
from .adjudication_forms import AdjudicationForm, AdjudicatorsForm
from .models import Study
from .selectors import study_writable_by
from .services import audio_fetch_record
from .services.adjudication import adjudication_audio_url, adjudication_decide, adjudicators_set

QUEUE_PER_PAGE = 50
REFUSAL = "Only this study's adjudicators, its owner, the collaborators the owner names and admins may open its adjudication queue."


def adjudication_required(view):
    """The study behind the URL must be one whose queue the signed-in user may read; else the 403 page that says who may."""

    @login_required
    @wraps(view)
    def wrapped(request: HttpRequest, name: str, **kwargs):
        study = get_object_or_404(Study, name=name)
        if not selectors.adjudication_readable_by(study=study, user=request.user):
            return forbidden(request, REFUSAL)
        return view(request, study, **kwargs)

    return wrapped


def _render(request, template, context, status=200):
    context.setdefault("is_researcher", is_researcher(request.user))
    return render(request, template, context, status=status)


@adjudication_required
@require_safe
def adjudication_queue(request: HttpRequest, study: Study) -> HttpResponse:
    items = selectors.adjudication_queue(study=study)
    return _render(
        request,
        "annotation/adjudication_queue.html",
        {
            "study": study,
            "items": Paginator(items, QUEUE_PER_PAGE).get_page(request.GET.get("page")),
            "total": len(items),
            "open_count": sum(1 for i in items if i.decision is None),
            "can_decide": selectors.is_adjudicator(study=study, user=request.user),
            "thresholds": {"agreement": selectors.AGREEMENT_BELOW, "posterior": selectors.POSTERIOR_BELOW, "votes": selectors.MIN_VOTES},
        },
    )


@adjudication_required
@require_http_methods(["GET", "HEAD", "POST"])
def adjudication_item(request: HttpRequest, study: Study, item_id: int) -> HttpResponse:
    pair = selectors.adjudication_pair(study=study, pair_id=item_id)
    if pair is None:
        raise Http404("No such pair in this study.")
    status, conflict = 200, None
    if request.method == "POST":
        form = AdjudicationForm(request.POST)
        if form.is_valid():
            data = form.cleaned_data
            try:
                adjudication_decide(
                    study=study, pair_id=pair.pk, adjudicator=request.user, alignment=data["alignment"], musicality=data["musicality"],
                    reason=data["reason"], receipts={"A": data["receipt_A"], "B": data["receipt_B"]},
                )  # fmt: skip
            except ServiceError as exc:
                status = exc.status
                if exc.code == "already_decided":
                    conflict = exc.message
                else:
                    for field, field_messages in (exc.extra.get("errors") or {"__all__": [exc.message]}).items():
                        for message in field_messages:
                            form.add_error(None if field not in form.fields else field, message)
            else:
                messages.success(request, f"Pair {pair.pk} is decided.")
                return redirect("study-adjudication", name=study.name)
        else:
            status = 400
    else:
        form = AdjudicationForm()
    item = selectors.queue_item_of(study=study, pair_id=pair.pk)
    decision = selectors.decision_of(pair=pair)
    return _render(
        request,
        "annotation/adjudication_item.html",
        {
            "study": study,
            "pair": pair,
            "item": item,
            "votes": selectors.pair_votes_shown(study=study, pair=pair),
            "decision": decision,
            "decision_text": selectors.decision_text(decision) if decision else "",
            "conflict": conflict,
            "form": form,
            "can_decide": selectors.is_adjudicator(study=study, user=request.user) and decision is None and item is not None,
            "is_adjudicator": selectors.is_adjudicator(study=study, user=request.user),
            "clips": {side: adjudication_audio_url(study=study, pair_id=pair.pk, side=side.lower()) for side in ("A", "B")},
            "gains": {"A": study.clip_gain_db(pair.clip_a), "B": study.clip_gain_db(pair.clip_b)},
            "ref_url": adjudication_audio_url(study=study, pair_id=pair.pk, side="ref") if pair.condition.reference_id else "",
        },
        status=status,
    )


@login_required
@require_safe
def adjudication_audio(request: HttpRequest, name: str, item_id: int, which: str) -> HttpResponse:
    """A queued pair's clip (a, b) or reference (ref), whole, with an Audio-Proof challenge: the decision counts once the
    page proves it received both clips. The clip rule (access.clip_audible_by) still decides who hears it; 404 to anyone
    else, who so learns nothing about which ids exist."""
    study = Study.objects.filter(name=name).first()
    readable = study is not None and selectors.adjudication_readable_by(study=study, user=request.user)
    pair = selectors.adjudication_pair(study=study, pair_id=item_id) if readable else None
    clip = None if pair is None else {"a": pair.clip_a, "b": pair.clip_b, "ref": pair.condition.reference}.get(which)
    if clip is None or not clip_audible_by(user=request.user, clip=clip):
        raise Http404("No such audio.")
    user, started = request.user, timezone.now()

    def sent(first: int, last: int, total: int) -> None:
        audio_fetch_record(user=user, clip=clip, served=(first, last, total), now=started, served_as=f"adjudication:{pair.pk}:{which}")

    return ranged_file_response(request, clip.file.path, etag=opaque_etag(path=request.path, content_hash=clip.sha256), on_sent=sent, proof_at=started, ranges=False)


@study_required
@require_POST
def study_adjudicators_set(request: HttpRequest, name: str) -> HttpResponse:
    """Whoever may change the study names the people who settle its disputed pairs."""
    study = get_object_or_404(Study, name=name)
    if not study_writable_by(study=study, user=request.user):
        return forbidden(request, f"Only the owner of “{study.name}”, the collaborators the owner names, and admins name its adjudicators.")
    form = AdjudicatorsForm(request.POST)
    if not form.is_valid():
        messages.error(request, " ".join(form.errors.get("usernames", ["Check the names."])))
        return redirect("study-manage", name=study.name)
    users = adjudicators_set(study=study, users=form.cleaned_data["usernames"], granted_by=request.user)
    messages.success(request, f"Adjudicators of “{study.name}”: {', '.join(u.username for u in users) or 'none'}.")
    return redirect("study-manage", name=study.name)


def adjudication_context(*, study: Study, user) -> dict:
    """What the study page shows of adjudication: the adjudicators, the open count, whether the user may name them."""
    return {
        "adjudicators": selectors.adjudicators_of(study=study),
        "can_name_adjudicators": study_writable_by(study=study, user=user),
    }
