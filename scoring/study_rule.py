"""The study permission rule (annotation.selectors.study_writable_by) applied to scoring's writes:
launching a scoring run on a study's pairs and excluding or including one of its annotators.

Both refuse with 403 before anything is created or queued."""

from __future__ import annotations

from annotation.models import AnnotatorProfile, Pair, Study
from annotation.selectors import study_writable_by
from common.errors import ServiceError


def _owner_text(study: Study) -> str:
    if not study.owner_id:
        return "admins (it has no owner yet)"
    return f"its owner ({study.owner.get_username()}), the collaborators the owner names, and admins"


def run_scope_check(*, user, study: Study | None, pair_ids: list[int]) -> None:
    """Every study whose pairs a run would score must be one the user may change (a study's run: that study alone)."""
    if study is not None:
        studies = [study]
    else:
        study_ids = set(Pair.objects.filter(pk__in=pair_ids).values_list("study_id", flat=True))
        studies = Study.objects.filter(pk__in=study_ids).select_related("owner").order_by("name")
    for each in studies:
        if not study_writable_by(study=each, user=user):
            raise ServiceError(
                f"You may not launch a scoring run on study {each.name}: only {_owner_text(each)} may. Ask the owner to name you a collaborator on the study's page.",
                code="forbidden",
                status=403,
            )


def exclusion_check(*, by, profile: AnnotatorProfile, study: Study | None) -> None:
    """An exclusion leaves the annotator out of every study they voted in, so the user must be allowed to change
    each of them (and, from a study's report, that study, where the annotator must have voted)."""
    voted = Study.objects.filter(pairs__judgments__annotator_id=profile.user_id).distinct().select_related("owner").order_by("name")
    if study is not None:
        if not study_writable_by(study=study, user=by):
            raise ServiceError(f"You may not exclude or include annotators of study {study.name}: only {_owner_text(study)} may.", code="forbidden", status=403)
        if not any(s.pk == study.pk for s in voted):
            raise ServiceError(f"{profile.pseudonym} has not voted in study {study.name}.", code="not_in_study", status=404)
    for other in voted:
        if not study_writable_by(study=other, user=by):
            raise ServiceError(
                f"{profile.pseudonym} also voted in study {other.name}, and an exclusion applies to every study they voted in; "
                f"only {_owner_text(other)} may change that study. Ask its owner or an admin.",
                code="forbidden",
                status=403,
            )
