"""The one gate before a study's work: the headphone screen, then the practice round, then the questionnaire
before the study, then pairs or items. The questionnaire comes last so that no one screened out is asked
about themselves, and its answers describe the people whose votes count.

The listening and rating pages send an annotator to the step this names; the APIs that hand out work refuse
while the screen or the questions before the study stand in the way, and the APIs that store answers refuse
while the questions do, so a client that skips the pages meets the same rule.
"""

from __future__ import annotations

from common.errors import ServiceError

from ..questionnaire_models import Phase
from ..questionnaire_selectors import questionnaire_blocks, questionnaire_blocks_ids
from .practice import practice_next
from .screening import screening_status

SCREENING = "screening"
PRACTICE = "practice"
QUESTIONNAIRE_PRE = "questionnaire-pre"


def screening_pending(*, study, annotator) -> bool:
    """Whether the screen still stands between the annotator and the work: an attempt to take, or none left (failed)."""
    return screening_status(study=study, annotator=annotator)["state"] in ("open", "failed")


def crowd_step(*, study, annotator) -> str | None:
    """The step the annotator must take first ("screening", "practice" or "questionnaire-pre", also the names of their pages), or None."""
    if screening_pending(study=study, annotator=annotator):
        return SCREENING
    if practice_next(study=study, annotator=annotator) is not None:
        return PRACTICE
    if questionnaire_blocks(study=study, annotator=annotator, phase=Phase.PRE):
        return QUESTIONNAIRE_PRE
    return None


def crowd_gate_check(*, study, annotator) -> None:
    """Refuse (nothing handed out) while the annotator has the screen to pass (403) or the questions before the study
    to answer (409)."""
    # The practice round stays the pages' step (it only teaches); the screen decides who may give data at all, and
    # the questions describe the people whose votes count, so both are refused here as well.
    if screening_pending(study=study, annotator=annotator):
        raise ServiceError("Pass the headphone check of this study first (open the study's page).", code="screening_required", status=403)
    questionnaire_gate_check(study_id=study.pk, annotator_id=annotator.pk)


def questionnaire_gate_check(*, study_id: int, annotator_id: int) -> None:
    """Refuse (409) while the study's questions before the study are unanswered: the next pair and every answer.

    From the cache (questionnaire_blocks_ids): a study that asks nothing, or an annotator who answered, costs no query
    once known, so the submits' query budgets stay as they were."""
    if questionnaire_blocks_ids(study_id=study_id, annotator_id=annotator_id, phase=Phase.PRE):
        raise ServiceError(
            "Answer this study's questions before the study first (the step after the headphone check and the practice "
            "round; the study's page takes you there). Nothing was stored.",
            code="questionnaire_required",
            status=409,
            extra={"step": QUESTIONNAIRE_PRE},
        )
