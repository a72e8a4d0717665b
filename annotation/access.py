"""The study rule, applied in one place: a study's data is read and changed only by its owner, the
collaborators the owner names, and admins (`selectors.study_writable_by`).

Every route that reaches a study goes through one of these:

- `study_required` for HTML views and `StudyAccess` for API views whose URL names the study
  (`<name>`), or an object of it (a scoring run, a training, an export) through `resolve`;
- `study_access_check` for services, forms and tasks handed a study by a caller;
- `studies_visible_to`, `runs_visible_to` and `trainings_visible_to` for lists;
- `clip_audible_by` for every clip served from a study (pairwise, ratings); `labels_readable_by` for
  anything derived from a study's labels (a benchmark's private part, its finer figures).

Being a researcher is never enough by itself: a researcher reads a study's data only as its owner,
a named collaborator, or an admin.

A study a user may not reach answers 403 with who may; a study name that does not exist, 404.
"""

from __future__ import annotations

from functools import wraps

from django.contrib.auth.decorators import login_required
from django.db.models import Q, QuerySet
from django.http import Http404, HttpRequest
from rest_framework.permissions import BasePermission

from common.errors import ServiceError
from common.guards import RESEARCHERS_ONLY, forbidden
from common.roles import is_admin, is_researcher

from .models import Clip, Pair, Study
from .selectors import study_writable_by


def study_allowed(*, study: Study | None, user) -> bool:
    return study is not None and study_writable_by(study=study, user=user)


def labels_readable_by(*, study: Study | None, user) -> bool:
    """Whether `user` may read what a study's labels say (votes, reports, a benchmark's private part): the study
    rule; a set with no study behind it (arena battles, an imported set) is for admins alone."""
    if study is None:
        return is_admin(user)
    return study_allowed(study=study, user=user)


def clip_audible_by(*, user, clip: Clip) -> bool:
    """The one rule for a study's audio, whichever page serves it: an annotator hears the clips (and references) of
    the pairs and rating items assigned to them; admins every clip; an adjudicator the clips of the pairs of the
    studies they adjudicate; a researcher the clips of the studies the study
    rule lets them reach."""
    if not getattr(user, "is_authenticated", False):
        return False
    from .adjudication_selectors import adjudicated_clip_audible
    from .ratings.models import RatingAssignment, RatingItem
    from .selectors import clip_assigned_to

    if clip_assigned_to(user=user, clip=clip):
        return True
    if RatingAssignment.objects.filter(Q(item__item_clips__clip=clip) | Q(item__condition__reference=clip), annotator=user).exists():
        return True
    if is_admin(user):
        return True
    if adjudicated_clip_audible(user=user, clip=clip):
        return True
    if not is_researcher(user):
        return False
    mine = studies_visible_to(user=user).values("pk")
    in_pairs = Pair.objects.filter(Q(clip_a=clip) | Q(clip_b=clip) | Q(condition__reference=clip), study__in=mine)
    in_items = RatingItem.objects.filter(Q(item_clips__clip=clip) | Q(condition__reference=clip), study__in=mine)
    return in_pairs.exists() or in_items.exists()


def study_access_check(*, study: Study, user) -> None:
    """Refuse (403, nothing done) unless `user` may reach `study`."""
    if not study_allowed(study=study, user=user):
        raise ServiceError(
            f"Only the owner of study {study.name}, the collaborators the owner names, and admins may use its data.", code="forbidden", status=403
        )


def studies_visible_to(*, user) -> QuerySet[Study]:
    if is_admin(user):
        return Study.objects.all()
    if not is_researcher(user):
        return Study.objects.none()
    return Study.objects.filter(Q(owner=user) | Q(collaborators=user)).distinct()


def runs_visible_to(queryset, *, user):
    """Scoring runs of studies the user may reach; a run with no study (pair ids, an imported set) when every
    study its verdicts touch is one of them."""
    if is_admin(user):
        return queryset
    visible = studies_visible_to(user=user).values("pk")
    hidden = Study.objects.exclude(pk__in=visible).values("pk")
    return queryset.filter(Q(study__in=visible) | Q(study__isnull=True)).exclude(Q(study__isnull=True) & Q(verdicts__pair__study__in=hidden)).distinct()


def trainings_visible_to(queryset, *, user):
    return queryset if is_admin(user) else queryset.filter(study__in=studies_visible_to(user=user).values("pk"))


def _by_name(kwargs: dict, user) -> bool:
    study = Study.objects.filter(name=kwargs.get("name")).select_related("owner").first()
    if study is None:
        raise Http404("No such study.")
    return study_allowed(study=study, user=user)


def refusal_text(kwargs: dict) -> str:
    study = Study.objects.filter(name=kwargs.get("name")).select_related("owner").first() if "name" in kwargs else None
    if study is None:
        return REFUSAL
    owner = f" ({study.owner.get_username()})" if study.owner_id else " (it has none yet)"
    return f"Only the owner of study {study.name}{owner}, the collaborators the owner names, and admins may open or change it."


REFUSAL = "Only the owner of this study, the collaborators the owner names, and admins may open or change it."


def study_url_check(*, user, kwargs: dict, allowed=_by_name) -> bool:
    """Whether the URL's study (or the study of the object `allowed` looks up) is one the user may reach (Http404 for a study name that does not exist)."""
    return bool(is_researcher(user) and allowed(kwargs, user))


def study_required(view=None, *, allowed=_by_name):
    """HTML views: the study behind the URL must be one the signed-in user may reach; else a 403 page that says who may."""

    def decorate(inner):
        @login_required
        @wraps(inner)
        def wrapped(request: HttpRequest, *args, **kwargs):
            if not study_url_check(user=request.user, kwargs=kwargs, allowed=allowed):
                return forbidden(request, refusal_text(kwargs) if is_researcher(request.user) else RESEARCHERS_ONLY)
            return inner(request, *args, **kwargs)

        return wrapped

    return decorate(view) if view is not None else decorate


class StudyAccess(BasePermission):
    """DRF: the study behind the URL (the view's `study_allowed(kwargs, user)`, else `<name>`) must be one the user may reach; else 403."""

    message = REFUSAL

    def has_permission(self, request, view) -> bool:
        if study_url_check(user=request.user, kwargs=view.kwargs, allowed=getattr(view, "study_allowed", _by_name)):
            return True
        self.message = refusal_text(view.kwargs) if is_researcher(request.user) else REFUSAL
        return False
