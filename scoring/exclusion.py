"""Annotator exclusion (recorded, reversible): who, when and why, one log line per decision; allowed to the people
who may change every study the annotator voted in (scoring.study_rule)."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from annotation.models import AnnotatorProfile, Judgment, Study
from common.errors import ServiceError
from common.roles import is_researcher

from . import broadcast
from .study_rule import exclusion_check


def _exclusion_log_line(*, action: str, by, reason: str) -> str:
    stamp = timezone.now().strftime("%Y-%m-%dT%H:%M:%SZ")
    text = f"{stamp} {action} by {by.get_username()}"
    return f"{text}: {reason}" if reason else text


def _exclusion_check(*, by, profile: AnnotatorProfile, study: Study | None, reason: str, required: bool) -> str:
    if not is_researcher(by):
        raise ServiceError("Only researchers and admins can exclude or include annotators.", code="forbidden", status=403)
    exclusion_check(by=by, profile=profile, study=study)
    reason = " ".join((reason or "").split())
    if required and not reason:
        raise ServiceError("Say why this annotator is excluded (for example: random clicking on gold pairs).", code="reason_required")
    if len(reason) > 500:
        raise ServiceError("Keep the reason under 500 characters.", code="too_long")
    return reason


@transaction.atomic
def annotator_exclude(*, profile: AnnotatorProfile, by, reason: str, study: Study | None = None) -> AnnotatorProfile:
    """Leave the annotator out of analysis and export; the log line records who, when and why."""
    reason = _exclusion_check(by=by, profile=profile, study=study, reason=reason, required=True)
    profile = AnnotatorProfile.objects.select_for_update().get(pk=profile.pk)
    if profile.excluded_at is not None:
        raise ServiceError(f"{profile.pseudonym} is already excluded (since {profile.excluded_at:%Y-%m-%d %H:%M} UTC).", code="already_excluded", status=409)
    profile.excluded_at = timezone.now()
    # excluded_reason keeps the whole history, one line per decision; excluded_at is the current state.
    profile.excluded_reason = "\n".join(filter(None, [profile.excluded_reason, _exclusion_log_line(action="excluded", by=by, reason=reason)]))
    profile.save(update_fields=["excluded_at", "excluded_reason"])
    _broadcast_after_commit(profile)
    return profile


@transaction.atomic
def annotator_include(*, profile: AnnotatorProfile, by, reason: str = "", study: Study | None = None) -> AnnotatorProfile:
    """Undo an exclusion; the history stays in excluded_reason."""
    reason = _exclusion_check(by=by, profile=profile, study=study, reason=reason, required=False)
    profile = AnnotatorProfile.objects.select_for_update().get(pk=profile.pk)
    if profile.excluded_at is None:
        raise ServiceError(f"{profile.pseudonym} is not excluded.", code="not_excluded", status=409)
    profile.excluded_at = None
    profile.excluded_reason = "\n".join(filter(None, [profile.excluded_reason, _exclusion_log_line(action="included again", by=by, reason=reason)]))
    profile.save(update_fields=["excluded_at", "excluded_reason"])
    _broadcast_after_commit(profile)
    return profile


def _broadcast_after_commit(profile: AnnotatorProfile) -> None:
    """Open report pages of every study this annotator voted in refresh once the change is committed."""
    study_ids = list(Judgment.objects.filter(annotator_id=profile.user_id).values_list("pair__study_id", flat=True).distinct())
    for study_id in study_ids:
        transaction.on_commit(lambda study_id=study_id: broadcast.report_changed_broadcast(study_id=study_id, reason="exclusion"))
