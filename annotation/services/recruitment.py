"""Recruitment links: a platform's URL parameters create or resume one external account per participant id.

The participant id is stored only as a keyed hash (HMAC with the site's secret key), so it
never appears in the database in the clear, let alone in an export: exports and reports use
the account's pseudonym, as for everyone.

A participant id is not a password: anyone who sees a study link's URL knows it. So the first
visit makes a resume code (shown to the participant, kept in a signed cookie, stored here only
as a keyed hash), and resuming that account later needs the code as well as the id. A visit with
a known id and no code is not refused (that would let whoever came first shut the real participant
out): it becomes a duplicate claim, an account of its own flagged for the researcher. A link with a
signing secret goes further and admits only ids the recruiting side signed (SIGNATURE_PARAM).

The start form carries a one-time entry key (signed, bound to the link and the participant id). The claim it
makes stores a keyed hash of it, and its resume code is derived from it: the same form sent twice (a double
click, a retry after a dropped answer) finds that claim and shows the same code, instead of making a
duplicate claim whose code the person never sees.

Wrong typed resume codes are throttled (common.failure_throttle): per participant id and address,
per address, and per participant id from anywhere; the code from this site's signed cookie is
not a guess and is not counted.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import unicodedata
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import signing
from django.db import IntegrityError, transaction
from django.utils import timezone

from common import failure_throttle
from common.errors import ServiceError
from common.failure_throttle import Scope
from common.rates import salted_hash

from ..crowd_models import SIGNATURE_PARAM, ExternalParticipant, RecruitmentLink
from ..crowd_selectors import recruitment_link_gold_recent
from .people import study_annotator_add

MAX_ID_LENGTH = 100
MAX_DAYS = 365
MIN_SECRET_LENGTH = 16


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


# --- The start form's entry key ---------------------------------------------------------------------
_ENTRY_SALT = "auditorium.recruitment-entry"
# A start form older than this makes a claim of its own when sent (it is a new visit, not a second click).
ENTRY_MAX_AGE = timedelta(hours=6)


def recruitment_entry_key(*, link: RecruitmentLink, participant_id: str) -> str:
    """A fresh one-time key for the start form of this link and (cleaned) participant id."""
    payload = {"l": link.pk, "p": participant_hash(participant_id)[:32], "n": secrets.token_urlsafe(18)}
    return signing.TimestampSigner(salt=_ENTRY_SALT).sign_object(payload, compress=False)


def _entry_nonce(*, link: RecruitmentLink, participant_id: str, key: str) -> str:
    """The nonce of a valid entry key for this link and participant id, else "" (a forged, stale or foreign key is no key)."""
    if not key or len(key) > 400:
        return ""
    try:
        payload = signing.TimestampSigner(salt=_ENTRY_SALT).unsign_object(key, max_age=ENTRY_MAX_AGE)
    except (signing.BadSignature, ValueError, TypeError):
        return ""
    if not isinstance(payload, dict) or payload.get("l") != link.pk or payload.get("p") != participant_hash(participant_id)[:32]:
        return ""
    nonce = payload.get("n")
    return nonce if isinstance(nonce, str) and nonce else ""


def _entry_secrets(*, link: RecruitmentLink, participant_id: str, nonce: str) -> tuple[str, str]:
    """(stored entry hash, resume code) for an entry nonce: both keyed, so neither is known without the site's secret."""
    base = f"{link.pk}:{participant_hash(participant_id)}:{nonce}"
    entry_hash = hmac.new(settings.SECRET_KEY.encode(), f"entry:{base}".encode(), hashlib.sha256).hexdigest()
    digest = hmac.new(settings.SECRET_KEY.encode(), f"entry-code:{base}".encode(), hashlib.sha512).digest()
    # 64 bytes, 12 letters: the modulo's bias over 31 letters is under 1 in 8 per letter, far from guessable.
    code = "".join(_RESUME_ALPHABET[b % len(_RESUME_ALPHABET)] for b in digest[:RESUME_CODE_LENGTH])
    return entry_hash, code


def resume_code_display(code: str) -> str:
    return "-".join(code[i : i + 4] for i in range(0, len(code), 4))


def participant_signature(*, secret: str, participant_id: str) -> str:
    """What a signed link carries in SIGNATURE_PARAM for this participant id (the id as it appears in the URL)."""
    return hmac.new(secret.encode(), str(participant_id).encode(), hashlib.sha256).hexdigest()


def recruitment_link_create(
    *, study, completion_code: str, screenout_code: str = "", cap: int = 100, days: float = 14.0, label: str = "", signing_secret: str = "",
    gold_pause_below: float | None = None, gold_pause_window: int = 10, **extra,
) -> RecruitmentLink:
    if not (completion_code or "").strip():
        raise ServiceError("A recruitment link needs the platform's completion code.", code="no_code")
    signing_secret = (signing_secret or "").strip()
    if signing_secret and (len(signing_secret) < MIN_SECRET_LENGTH or len(signing_secret) > 128 or not signing_secret.isascii() or not signing_secret.isprintable()):
        raise ServiceError(
            f"A signing secret is {MIN_SECRET_LENGTH} to 128 printable ASCII characters (a random one, used for this link only); leave it empty for an unsigned link.",
            code="bad_secret",
            extra={"errors": {"signing_secret": [f"{MIN_SECRET_LENGTH} to 128 printable ASCII characters, or empty for an unsigned link."]}},
        )
    if cap < 1:
        raise ServiceError("The cap must be at least 1 participant.", code="bad_cap")
    if not 0 < days <= MAX_DAYS:
        raise ServiceError(f"A link stays open for more than 0 and at most {MAX_DAYS} days.", code="bad_days")
    if gold_pause_below is not None and not 0.0 <= gold_pause_below <= 1.0:
        raise ServiceError("The gold accuracy that pauses the link is a share from 0 to 1 (e.g. 0.7).", code="bad_pause")
    if gold_pause_window < 1:
        raise ServiceError("At least 1 recent participant counts towards a pause.", code="bad_pause")
    return RecruitmentLink.objects.create(
        study=study, completion_code=completion_code.strip(), screenout_code=(screenout_code or "").strip(), cap=cap,
        expires_at=timezone.now() + timedelta(days=days), label=label, signing_secret=signing_secret,
        gold_pause_below=gold_pause_below, gold_pause_window=gold_pause_window, **extra,
    )


def _clean_id(value, name: str) -> str:
    # NFKC first: a full-width "ＡＢＣ１２３" and "ABC123" are one participant, not two accounts.
    value = unicodedata.normalize("NFKC", str(value or "")).strip()
    if len(value) > MAX_ID_LENGTH or any(not (c.isalnum() or c in "-_") for c in value):
        raise ServiceError(f"The link's {name} is malformed; open the study again from the recruitment platform.", code="bad_parameter")
    return value


def recruitment_link_for(*, token: str, params, now=None) -> tuple[RecruitmentLink, dict]:
    """The link behind a token and its cleaned URL parameters; reads only.

    Refused, with nothing stored: an unknown link, a missing or malformed participant id, a signed link
    whose signature is missing or does not match the id, an expired link.
    """
    now = now or timezone.now()
    link = RecruitmentLink.objects.filter(token=token).select_related("study").first()
    if link is None:
        raise ServiceError("This study link is not known. Check that the whole link was copied.", code="not_found", status=404)
    participant = _clean_id(params.get(link.participant_param), "participant id")
    if not participant:
        raise ServiceError(f"The link has no participant id ({link.participant_param}); open the study from the recruitment platform.", code="no_participant")
    if link.signing_secret:
        given = str(params.get(SIGNATURE_PARAM) or "").strip().lower()
        if not given:
            raise ServiceError(f"This study link is missing its signature ({SIGNATURE_PARAM}); open the study from the recruitment platform.", code="bad_signature", status=403)
        expected = participant_signature(secret=link.signing_secret, participant_id=str(params.get(link.participant_param)))
        if not hmac.compare_digest(given.encode(), expected.encode()):
            raise ServiceError("This study link's signature does not match its participant id; open the study again from the recruitment platform.", code="bad_signature", status=403)
    cleaned = {"participant": participant, "study": _clean_id(params.get(link.study_param), "study id"), "session": _clean_id(params.get(link.session_param), "session id")}
    if link.expires_at <= now:
        raise ServiceError("This study link has expired, so no new session can start. Please return the study on the recruitment platform.", code="expired", status=410)
    return link, cleaned


def _claims(*, link: RecruitmentLink, participant_id: str):
    return ExternalParticipant.objects.filter(study=link.study, participant_hash=participant_hash(participant_id))


def recruitment_participant_known(*, link: RecruitmentLink, participant_id: str) -> ExternalParticipant | None:
    """The first account made for this (cleaned) participant id in the link's study, if any; reads only."""
    return _claims(link=link, participant_id=participant_id).filter(duplicate_claim=False).select_related("user", "link").first()


def recruitment_claim_of(*, link: RecruitmentLink, participant_id: str, user) -> ExternalParticipant | None:
    """The claim of this participant id (the first or a duplicate) that is this user's account, if any; reads only."""
    if not getattr(user, "is_authenticated", False):
        return None
    return _claims(link=link, participant_id=participant_id).filter(user=user).select_related("user", "link").first()


def _claim_for_code(*, link: RecruitmentLink, participant_id: str, code: str) -> ExternalParticipant | None:
    code = resume_code_clean(code)
    if not code:
        return None
    return _claims(link=link, participant_id=participant_id).filter(resume_hash=_resume_hash(participant_hash(participant_id), code)).select_related("user", "link").first()


def recruitment_resume_matches(*, link: RecruitmentLink, participant_id: str, code: str) -> bool:
    """Whether this resume code (the browser's stored one) opens a claim of this participant id; reads only."""
    return _claim_for_code(link=link, participant_id=participant_id, code=code) is not None


def _resume_scopes(*, link: RecruitmentLink, participant_id: str, address: str) -> list[Scope]:
    """The throttle's scopes for a typed resume code, the participant id and address one first (a right code clears it)."""
    who = f"{link.study_id}:{participant_hash(participant_id)}"
    network = failure_throttle.address_network(address)
    scopes = []
    if network:
        scopes.append(Scope(settings.AUDITORIUM_RESUME_PARTICIPANT_ADDRESS_RATE, "resume-pair:" + salted_hash("resume-pair", f"{who}\n{network}"), "this participant id from this network"))
        scopes.append(Scope(settings.AUDITORIUM_RESUME_IP_RATE, "resume-ip:" + salted_hash("resume-ip", network), "this network"))
    scopes.append(Scope(settings.AUDITORIUM_RESUME_PARTICIPANT_RATE, "resume-id:" + salted_hash("resume-id", who), "this participant id"))
    return scopes


def resume_pause_message(what: str, seconds: int) -> str:
    return (
        f"Too many wrong resume codes for {what}. Resuming with a code is paused for {failure_throttle.minutes(seconds)}; "
        "try again later, or continue in the browser you started in."
    )


def recruitment_enter(
    *, token: str, params, typed_code: str = "", cookie_code: str = "", as_new: bool = False, address: str = "", entry_key: str = "", now=None
) -> tuple[ExternalParticipant, str]:
    """Join or resume; returns the account and, for a new one only, the resume code to show once (else "").

    A new participant id gets its first account. A known one resumes the claim whose resume code came
    with the visit: the browser's signed cookie, or the code typed in (throttled per participant id and
    address, per address and per participant id). With no code (or `as_new`), the visit becomes a
    duplicate claim: a new account with the same participant hash, flagged, never merged into another.
    A valid `entry_key` whose claim exists already (the same start form sent again) returns that claim
    and its code again, whatever else the visit carries.

    Refused, with nothing stored: everything `recruitment_link_for` refuses, a typed code that opens no
    claim of the id, a typed code while the throttle is paused, and a new account on a link at its cap.
    """
    try:
        return _enter(token=token, params=params, typed_code=typed_code, cookie_code=cookie_code, as_new=as_new, address=address, entry_key=entry_key, now=now)
    except ServiceError as exc:
        if exc.code != "conflict" or not entry_key:
            raise
    # The same form, sent at once, lost the race to a request that made its claim (where the engine's locks let
    # both through): once more, that claim is found by the key.
    return _enter(token=token, params=params, typed_code=typed_code, cookie_code=cookie_code, as_new=as_new, address=address, entry_key=entry_key, now=now)


def _enter(*, token: str, params, typed_code: str, cookie_code: str, as_new: bool, address: str, entry_key: str, now) -> tuple[ExternalParticipant, str]:
    link, cleaned = recruitment_link_for(token=token, params=params, now=now)
    recruitment_link_gold_check(link=link, now=now)
    pid = cleaned["participant"]
    key = participant_hash(pid)
    typed = "" if as_new else resume_code_clean(typed_code)
    nonce = _entry_nonce(link=link, participant_id=pid, key=entry_key)
    entry_hash, entry_code = _entry_secrets(link=link, participant_id=pid, nonce=nonce) if nonce else ("", "")
    with transaction.atomic():
        # The link's row lock orders concurrent first visits, so the cap holds and a form sent twice makes one claim.
        RecruitmentLink.objects.select_for_update().filter(pk=link.pk).first()
        if entry_hash and (again := _claims(link=link, participant_id=pid).filter(link=link, entry_hash=entry_hash).select_related("user", "link").first()):
            return again, entry_code
        known = _claims(link=link, participant_id=pid).exists()
        resumed = None
        if known and not as_new:
            # The cookie was signed by this site: it is no guess, so it is neither throttled nor counted.
            resumed = _claim_for_code(link=link, participant_id=pid, code=cookie_code)
            if resumed is None and typed:
                scopes = _resume_scopes(link=link, participant_id=pid, address=address)
                if (state := failure_throttle.locked(scopes)) is not None:
                    raise ServiceError(resume_pause_message(*state), code="resume_throttled", status=429)
                resumed = _claim_for_code(link=link, participant_id=pid, code=typed)
                if resumed is None:
                    failure_throttle.record_failure(scopes)
                    raise ServiceError(
                        "That resume code does not open this participant id's study. Check it (it looks like ABCD-EFGH-JKMN and was shown at "
                        "your first visit), or take part as a new participant.",
                        code="wrong_resume_code",
                        status=403,
                    )
                failure_throttle.clear(scopes[:1])
        if resumed is not None:
            if cleaned["session"] and resumed.platform_session_id != cleaned["session"]:
                resumed.platform_session_id = cleaned["session"]
                resumed.save(update_fields=["platform_session_id"])
            return resumed, ""
        if RecruitmentLink.objects.filter(pk=link.pk, paused_at__isnull=False).exists():
            raise ServiceError(PAUSED_MESSAGE, code="paused", status=410)
        if ExternalParticipant.objects.filter(link=link).count() >= link.cap:
            raise ServiceError("This study is full: the link has admitted all the participants it may. Please return the study on the recruitment platform.", code="over_cap", status=410)
        user = get_user_model().objects.create_user(username=f"ext-{secrets.token_hex(6)}", password=None)
        study_annotator_add(study=link.study, user=user)
        fresh = entry_code or "".join(secrets.choice(_RESUME_ALPHABET) for _ in range(RESUME_CODE_LENGTH))
        try:
            with transaction.atomic():
                participant = ExternalParticipant.objects.create(
                    link=link, study=link.study, participant_hash=key, resume_hash=_resume_hash(key, fresh), user=user,
                    platform_study_id=cleaned["study"], platform_session_id=cleaned["session"], duplicate_claim=known, entry_hash=entry_hash,
                )
        except IntegrityError:
            # Raised out of the outer block too, so the account made above is rolled back with it.
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


# --- Pausing a link on a falling gold accuracy ------------------------------------------------------

PAUSED_MESSAGE = "This study is paused by its researchers, so no new session can start. Please return the study on the recruitment platform."
# Fewer gold answers than this among the recent participants decide nothing: two unlucky answers are not a bad batch.
MIN_GOLD_ANSWERS = 10


def recruitment_link_gold_check(*, link: RecruitmentLink, now=None) -> RecruitmentLink:
    """Pause the link (once, with the reason) when its recent participants' gold accuracy is below its threshold."""
    if link.gold_pause_below is None or link.paused_at is not None:
        return link
    recent = recruitment_link_gold_recent(link=link)
    if recent is None or recent["answers"] < MIN_GOLD_ANSWERS or recent["accuracy"] >= link.gold_pause_below:
        return link
    reason = (
        f"Gold accuracy of the last {recent['participants']} participant{'s' if recent['participants'] != 1 else ''} was "
        f"{recent['accuracy']:.0%} over {recent['answers']} answers, below the link's {link.gold_pause_below:.0%}."
    )
    now = now or timezone.now()
    # Conditional: of two visits that both see the drop, one writes the reason.
    RecruitmentLink.objects.filter(pk=link.pk, paused_at__isnull=True).update(paused_at=now, pause_reason=reason)
    link.refresh_from_db(fields=["paused_at", "pause_reason"])
    return link


def recruitment_link_resume(*, study, link_id: int, now=None) -> RecruitmentLink:
    """Admit new participants again; those who joined before now no longer count towards a pause."""
    now = now or timezone.now()
    with transaction.atomic():
        link = RecruitmentLink.objects.select_for_update().filter(pk=link_id, study=study).first()
        if link is None:
            raise ServiceError("No such recruitment link in this study.", code="not_found", status=404)
        if link.paused_at is None:
            raise ServiceError("This link is not paused.", code="not_paused", status=409)
        link.paused_at, link.pause_reason, link.resumed_at = None, "", now
        link.save(update_fields=["paused_at", "pause_reason", "resumed_at"])
    return link
