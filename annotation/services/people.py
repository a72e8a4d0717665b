"""Annotators: pseudonymous profiles, study membership, consent and its withdrawal."""

from __future__ import annotations

import secrets

from django.contrib.auth.models import Group
from django.db import transaction
from django.utils import timezone

from ..models import AnnotatorProfile, Assignment, Judgment, Study, StudyAnnotator

CONSENT_VERSION = "1"

# Hooks other apps register (e.g. live report refresh): called with the user after a commit that took
# their judgments out of analysis (withdrawal) or brought them back (consent given again).
consent_listeners: list = []


def _after_consent_change(user) -> None:
    for listener in consent_listeners:
        transaction.on_commit(lambda listener=listener: listener(user), robust=True)


def profile_ensure(*, user, pseudonym: str | None = None, is_imported: bool = False) -> AnnotatorProfile:
    """Every annotator gets a pseudonym; exports and reports use only that."""
    profile = AnnotatorProfile.objects.filter(user=user).first()
    if profile is not None:
        return profile
    pseudonym = pseudonym or f"a-{secrets.token_hex(5)}"
    profile, _ = AnnotatorProfile.objects.get_or_create(user=user, defaults={"pseudonym": pseudonym, "is_imported": is_imported})
    return profile


def study_annotator_add(*, study: Study, user) -> StudyAnnotator:
    user.groups.add(Group.objects.get_or_create(name="annotator")[0])
    profile_ensure(user=user)
    membership, _ = StudyAnnotator.objects.get_or_create(study=study, annotator=user, defaults={"seed": secrets.randbits(62)})
    if not membership.is_active:
        membership.is_active = True
        membership.save(update_fields=["is_active"])
    return membership


@transaction.atomic
def study_annotators_add(*, study: Study, users) -> list[StudyAnnotator]:
    """Add several accounts at once: all of them or, if one fails, none."""
    return [study_annotator_add(study=study, user=user) for user in users]


def consent_give(*, user, version: str = CONSENT_VERSION) -> AnnotatorProfile:
    profile = profile_ensure(user=user)
    returning = profile.withdrawn_at is not None
    profile.consented_at, profile.consent_version, profile.withdrawn_at = timezone.now(), version, None
    profile.save(update_fields=["consented_at", "consent_version", "withdrawn_at"])
    if returning:
        _after_consent_change(user)
    return profile


@transaction.atomic
def consent_withdraw(*, user) -> int:
    """Withdraw: judgments stay stored (audit) but leave every later export and analysis; live locks are released.

    Returns how many judgments are now excluded.
    """
    profile = profile_ensure(user=user)
    profile.withdrawn_at = timezone.now()
    profile.save(update_fields=["withdrawn_at"])
    Assignment.objects.filter(annotator=user, state=Assignment.State.ACTIVE).update(state=Assignment.State.EXPIRED, lock_expires_at=timezone.now())
    StudyAnnotator.objects.filter(annotator=user).update(is_active=False)
    _after_consent_change(user)
    return Judgment.objects.filter(annotator=user).count()

