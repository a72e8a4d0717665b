"""Recruitment links: a platform's URL parameters create or resume one external account per participant id.

The participant id is stored only as a keyed hash (HMAC with the site's secret key), so it
never appears in the database in the clear, let alone in an export: exports and reports use
the account's pseudonym, as for everyone.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.utils import timezone

from auditorium.errors import ServiceError

from ..crowd_models import ExternalParticipant, RecruitmentLink
from .people import study_annotator_add

MAX_ID_LENGTH = 100
MAX_DAYS = 365


def participant_hash(participant_id: str) -> str:
    return hmac.new(settings.SECRET_KEY.encode(), f"participant:{participant_id}".encode(), hashlib.sha256).hexdigest()


def recruitment_link_create(*, study, completion_code: str, screenout_code: str = "", cap: int = 100, days: float = 14.0, label: str = "", **extra) -> RecruitmentLink:
    if not (completion_code or "").strip():
        raise ServiceError("A recruitment link needs the platform's completion code.", code="no_code")
    if cap < 1:
        raise ServiceError("The cap must be at least 1 participant.", code="bad_cap")
    if not 0 < days <= MAX_DAYS:
        raise ServiceError(f"A link stays open for more than 0 and at most {MAX_DAYS} days.", code="bad_days")
    return RecruitmentLink.objects.create(
        study=study, completion_code=completion_code.strip(), screenout_code=(screenout_code or "").strip(), cap=cap,
        expires_at=timezone.now() + timedelta(days=days), label=label, **extra,
    )


def _clean_id(value, name: str) -> str:
    value = (value or "").strip()
    if len(value) > MAX_ID_LENGTH or any(not (c.isalnum() or c in "-_") for c in value):
        raise ServiceError(f"The link's {name} is malformed; open the study again from the recruitment platform.", code="bad_parameter")
    return value


def recruitment_enter(*, token: str, params, now=None) -> ExternalParticipant:
    """The participant's account for this link's study: the existing one for a known id, else a new one.

    Refused, with nothing stored: an unknown link, a missing participant id, an expired link,
    or (for a new participant) a link at its cap.
    """
    now = now or timezone.now()
    link = RecruitmentLink.objects.filter(token=token).select_related("study").first()
    if link is None:
        raise ServiceError("This study link is not known. Check that the whole link was copied.", code="not_found", status=404)
    participant = _clean_id(params.get(link.participant_param), "participant id")
    if not participant:
        raise ServiceError(f"The link has no participant id ({link.participant_param}); open the study from the recruitment platform.", code="no_participant")
    platform_study = _clean_id(params.get(link.study_param), "study id")
    platform_session = _clean_id(params.get(link.session_param), "session id")
    if link.expires_at <= now:
        raise ServiceError("This study link has expired, so no new session can start. Please return the study on the recruitment platform.", code="expired", status=410)
    key = participant_hash(participant)
    with transaction.atomic():
        # The link's row lock orders concurrent first visits, so the cap holds.
        RecruitmentLink.objects.select_for_update().filter(pk=link.pk).first()
        existing = ExternalParticipant.objects.filter(study=link.study, participant_hash=key).select_related("user").first()
        if existing is not None:
            if platform_session and existing.platform_session_id != platform_session:
                existing.platform_session_id = platform_session
                existing.save(update_fields=["platform_session_id"])
            return existing
        if ExternalParticipant.objects.filter(link=link).count() >= link.cap:
            raise ServiceError("This study is full: the link has admitted all the participants it may. Please return the study on the recruitment platform.", code="over_cap", status=410)
        user = get_user_model().objects.create_user(username=f"ext-{secrets.token_hex(6)}", password=None)
        study_annotator_add(study=link.study, user=user)
        try:
            with transaction.atomic():
                return ExternalParticipant.objects.create(
                    link=link, study=link.study, participant_hash=key, user=user, platform_study_id=platform_study, platform_session_id=platform_session
                )
        except IntegrityError:
            raise ServiceError("This participant id was just registered by another request; open the link again.", code="conflict", status=409) from None


def recruitment_finish(*, participant: ExternalParticipant, screened_out: bool = False, now=None) -> str:
    """Mark the participant done (or screened out) and return the code to show."""
    now = now or timezone.now()
    link = participant.link
    if screened_out:
        participant.screened_out_at = participant.screened_out_at or now
        participant.save(update_fields=["screened_out_at"])
        return link.screenout_code
    participant.completed_at = participant.completed_at or now
    participant.save(update_fields=["completed_at"])
    return link.completion_code


def recruitment_link_close(*, study, link_id: int, now=None) -> RecruitmentLink:
    """Close a link now: it admits no one new, and returning participants are refused as for an expired link."""
    now = now or timezone.now()
    with transaction.atomic():
        link = RecruitmentLink.objects.select_for_update().filter(pk=link_id, study=study).first()
        if link is None:
            raise ServiceError("No such recruitment link in this study.", code="not_found", status=404)
        if link.expires_at > now:
            link.expires_at = now
            link.save(update_fields=["expires_at"])
    return link
