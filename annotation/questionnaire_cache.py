"""Cache keys of the page gate's question "does a questionnaire stand in the way?" (questionnaire_selectors.questionnaire_blocks).

Whether a study asks is dropped on every save or delete of its questionnaires (questionnaire_models);
having answered never becomes false, so it is only ever set.
"""

from __future__ import annotations

from common.cache import cache_forget

SECONDS = 300
PHASES = ("pre", "post")


def asked_key(study_id: int, phase: str) -> str:
    return f"annotation:questionnaire-asked:{study_id}:{phase}"


def answered_key(study_id: int, phase: str, user_id: int) -> str:
    return f"annotation:questionnaire-answered:{study_id}:{phase}:{user_id}"


def asked_forget(*, study_id: int) -> None:
    cache_forget(*(asked_key(study_id, phase) for phase in PHASES))
