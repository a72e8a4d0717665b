"""Studies: create one, change its parameters.

The same rules hold for the researcher's pages and any other caller: the model's
validators decide what is allowed, a bad value changes nothing, and the name,
used in URLs and exports, is fixed once the study exists.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from common.errors import ServiceError

from ..models import ScreeningKind, Study

# What a researcher may set; everything else on a study is the platform's.
STUDY_PARAMETERS = (
    "title",
    "instructions",
    "overlap_target",
    "overlap_share",
    "min_listen_seconds",
    "rationale_min_length",
    "lock_ttl_seconds",
    "gold_rate",
    "annotator_target",
    "selection",
    "active_share",
    "licence",
    "is_active",
    "screening",
    "screening_trials",
    "screening_pass",
    "screening_retries",
    "screening_existing_members",
    "loudness_match",
    "loudness_target_lufs",
    "dimension_passes",
)
# Changing these changes the levels clips are heard at: once answers exist, the export tells those from before the change.
LOUDNESS_PARAMETERS = ("loudness_match", "loudness_target_lufs")


def _duplicate(name: str) -> ServiceError:
    message = "A study with this name already exists; choose another name."
    return ServiceError(message, code="duplicate_name", status=409, extra={"errors": {"name": [message]}})


def _apply(study: Study, parameters: dict) -> None:
    unknown = sorted(set(parameters) - set(STUDY_PARAMETERS))
    if unknown:
        raise ServiceError(
            f"Unknown study parameter {', '.join(unknown)}; a study has {', '.join(STUDY_PARAMETERS)}.", code="unknown_parameter"
        )
    for key, value in parameters.items():
        setattr(study, key, value)


def _validate(study: Study) -> None:
    try:
        # Uniqueness is checked by the caller (create) or cannot change (update).
        study.full_clean(validate_unique=False)
    except ValidationError as exc:
        errors = exc.message_dict
        field, messages = next(iter(errors.items()))
        where = "" if field == "__all__" else f"{field}: "
        raise ServiceError(f"{where}{messages[0]} Nothing was saved.", code="invalid", extra={"errors": errors}) from None


@transaction.atomic
def study_create(*, name: str, owner=None, **parameters) -> Study:
    """A new study with these parameters (the model's defaults for the rest), owned by `owner`."""
    # Lower case keeps URLs and export file names unambiguous.
    name = (name or "").strip().lower()
    study = Study(name=name, owner=owner)
    _apply(study, parameters)
    if study.screening != ScreeningKind.OFF:
        study.screening_since = timezone.now()
    _validate(study)
    if Study.objects.filter(name=name).exists():
        raise _duplicate(name)
    try:
        with transaction.atomic():
            study.save()
    except IntegrityError:
        # Created by a concurrent request between the check and the insert.
        raise _duplicate(name) from None
    return study


def _has_answers(study: Study) -> bool:
    """Whether anyone answered in the study yet: a level change before the first answer mixes nothing."""
    from ..models import Judgment
    from ..ratings.models import RatingSubmission

    return Judgment.objects.filter(pair__study=study).exists() or RatingSubmission.objects.filter(item__study=study).exists()


@transaction.atomic
def study_update(*, study: Study, **parameters) -> Study:
    """Change some of a study's parameters: all of them, or (if one is invalid) none."""
    if "name" in parameters:
        message = "A study's name is fixed once it exists: URLs and exports use it."
        raise ServiceError(message, code="name_fixed", extra={"errors": {"name": [message]}})
    locked = Study.objects.select_for_update().get(pk=study.pk)
    was_off = locked.screening == ScreeningKind.OFF
    levels_before = [getattr(locked, name) for name in LOUDNESS_PARAMETERS]
    _apply(locked, parameters)
    _validate(locked)
    fields = set(parameters)
    if was_off and locked.screening != ScreeningKind.OFF:
        # The screen applies from now on: who had already judged before this moment is decided by screening_existing_members.
        locked.screening_since = timezone.now()
        fields.add("screening_since")
    if [getattr(locked, name) for name in LOUDNESS_PARAMETERS] != levels_before and _has_answers(locked):
        locked.loudness_changed_at = timezone.now()
        fields.add("loudness_changed_at")
    locked.save(update_fields=sorted(fields))
    return locked


@transaction.atomic
def study_collaborators_set(*, study: Study, users: list) -> list:
    """Replace the study's collaborators (the owner is never one of them: they hold every right already)."""
    chosen = [u for u in users if u.pk != study.owner_id]
    study.collaborators.set(chosen)
    return chosen
