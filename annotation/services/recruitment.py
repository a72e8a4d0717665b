"""Recruitment links: a platform's URL parameters create or resume one external account per participant id.

The participant id is stored only as a keyed hash (HMAC with the site's secret key), so it
never appears in the database in the clear, let alone in an export: exports and reports use
the account's pseudonym, as for everyone.

A participant id is not a password: anyone who sees a study link's URL knows it. So the first
visit makes a resume code (shown to the participant, kept in a signed cookie, stored here only
as a keyed hash), and resuming that account later needs the code as well as the id.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import unicodedata
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.utils import timezone

from common.errors import ServiceError

from ..crowd_models import ExternalParticipant, RecruitmentLink
from .people import study_annotator_add

MAX_ID_LENGTH = 100
MAX_DAYS = 365


# Resume codes: no 0/O or 1/I/L, so one read aloud or copied by hand comes back right.
_RESUME_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
RESUME_CODE_LENGTH = 12


def participant_hash(participant_id: str) -> str:
    return hmac.new(settings.SECRET_KEY.encode(), f"participant:{participant_id}".encode(), hashlib.sha256).hexdigest()


def _resume_hash(participant_hash_: str, code: str) -> str:
    return hmac.new(settings.SECRET_KEY.encode(), f"resume:{participant_hash_}:{code}".encode(), hashlib.sha256).hexdigest()


def resume_code_clean(value) -> str:
    """A typed resume code in its stored form: NFKC, upper case, without spaces or dashes."""
    value = unicodedata.normalize("NFKC", str(value or ""))
    return "".join(c for c in value.upper() if c not in " -\t")


def resume_code_display(code: str) -> str:
    return "-".join(code[i : i + 4] for i in range(0, len(code), 4))


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
    # NFKC first: a full-width "ＡＢＣ１２３" and "ABC123" are one participant, not two accounts.
    value = unicodedata.normalize("NFKC", str(value or "")).strip()
    if len(value) > MAX_ID_LENGTH or any(not (c.isalnum() or c in "-_") for c in value):
        raise ServiceError(f"The link's {name} is malformed; open the study again from the recruitment platform.", code="bad_parameter")
    return value


def recruitment_link_for(*, token: str, params, now=None) -> tuple[RecruitmentLink, dict]:
    """The link behind a token and its cleaned URL parameters; reads only.

    Refused, with nothing stored: an unknown link, a missing or malformed participant id, an expired link.
    """
    now = now or timezone.now()
    link = RecruitmentLink.objects.filter(token=token).select_related("study").first()
    if link is None:
        raise ServiceError("This study link is not known. Check that the whole link was copied.", code="not_found", status=404)
    participant = _clean_id(params.get(link.participant_param), "participant id")
    if not participant:
        raise ServiceError(f"The link has no participant id ({link.participant_param}); open the study from the recruitment platform.", code="no_participant")
    cleaned = {"participant": participant, "study": _clean_id(params.get(link.study_param), "study id"), "session": _clean_id(params.get(link.session_param), "session id")}
    if link.expires_at <= now:
        raise ServiceError("This study link has expired, so no new session can start. Please return the study on the recruitment platform.", code="expired", status=410)
    return link, cleaned


def recruitment_participant_known(*, link: RecruitmentLink, participant_id: str) -> ExternalParticipant | None:
    """The account already made for this (cleaned) participant id in the link's study, if any; reads only."""
    return ExternalParticipant.objects.filter(study=link.study, participant_hash=participant_hash(participant_id)).select_related("user", "link").first()


def recruitment_enter(*, token: str, params, resume_code: str = "", now=None) -> tuple[ExternalParticipant, str]:
    """Join (a new participant id) or resume (a known one, with its resume code); returns the account and,
    for a new one only, the resume code to show once (else "").

    Refused, with nothing stored: everything `recruitment_link_for` refuses, a known id without its
    resume code (or with a wrong one), and a new participant on a link at its cap.
    """
    link, cleaned = recruitment_link_for(token=token, params=params, now=now)
    key = participant_hash(cleaned["participant"])
    code = resume_code_clean(resume_code)
    with transaction.atomic():
        # The link's row lock orders concurrent first visits, so the cap holds.
        RecruitmentLink.objects.select_for_update().filter(pk=link.pk).first()
        existing = ExternalParticipant.objects.filter(study=link.study, participant_hash=key).select_related("user", "link").first()
        if existing is not None:
            if not code or not existing.resume_hash or not hmac.compare_digest(existing.resume_hash, _resume_hash(key, code)):
                raise ServiceError(
                    "This participant id has already started this study. To go on, enter the resume code shown at your first visit; "
                    "a participant id alone does not open the study.",
                    code="resume_code_needed",
                    status=403,
                )
            if cleaned["session"] and existing.platform_session_id != cleaned["session"]:
                existing.platform_session_id = cleaned["session"]
                existing.save(update_fields=["platform_session_id"])
            return existing, ""
        if ExternalParticipant.objects.filter(link=link).count() >= link.cap:
            raise ServiceError("This study is full: the link has admitted all the participants it may. Please return the study on the recruitment platform.", code="over_cap", status=410)
        user = get_user_model().objects.create_user(username=f"ext-{secrets.token_hex(6)}", password=None)
        study_annotator_add(study=link.study, user=user)
        fresh = "".join(secrets.choice(_RESUME_ALPHABET) for _ in range(RESUME_CODE_LENGTH))
        try:
            with transaction.atomic():
                participant = ExternalParticipant.objects.create(
                    link=link, study=link.study, participant_hash=key, resume_hash=_resume_hash(key, fresh), user=user,
                    platform_study_id=cleaned["study"], platform_session_id=cleaned["session"],
                )
        except IntegrityError:
            raise ServiceError("This participant id was just registered by another request; open the link again.", code="conflict", status=409) from None
    return participant, fresh


def recruitment_work_complete(*, study, progress: dict) -> bool:
    """The study's rule for a completion code: its per-annotator target reached, or (without one) every pair
    open to the participant judged; never for no work at all (a closed or empty study gives no code)."""
    if progress["done"] < 1:
        return False
    if study.annotator_target:
        return progress["done"] >= study.annotator_target
    return progress["state"] == "finished"


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
