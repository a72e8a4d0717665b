"""The one gate before a study's work: the headphone screen, then the practice round, then the questionnaire
before the study, then pairs or items. The questionnaire comes last so that no one screened out is asked
about themselves, and its answers describe the people whose votes count.

The listening and rating pages send an annotator to the step this names; the APIs that hand out work refuse
while the screen stands in the way, so a client that skips the pages meets the same rule.
"""

from __future__ import annotations

from common.errors import ServiceError

from ..questionnaire_models import Phase
from ..questionnaire_selectors import questionnaire_pending
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
    if questionnaire_pending(study=study, annotator=annotator, phase=Phase.PRE) is not None:
        return QUESTIONNAIRE_PRE
    return None


def crowd_gate_check(*, study, annotator) -> None:
    """Refuse (403, nothing handed out) while the annotator has the screen to pass or the questions before the study to answer."""
    if screening_pending(study=study, annotator=annotator):
        raise ServiceError("Pass the headphone check of this study first (open the study's page).", code="screening_required", status=403)
    if questionnaire_pending(study=study, annotator=annotator, phase=Phase.PRE) is not None:
        raise ServiceError("Answer the questions before the study first (open the study's page).", code="questionnaire_required", status=403)
