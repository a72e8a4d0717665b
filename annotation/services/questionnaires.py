"""Writes for questionnaires: saving a definition (a new version once it has answers) and storing one response.

An answer is checked twice: the page's form (annotation.questionnaire_forms) turns the POST into
typed values, and `questionnaire_answer` checks those against the version asked before it stores
anything, so a caller that skips the form meets the same rules.
"""

from __future__ import annotations

import math

from django.db import IntegrityError, transaction

from common.errors import ServiceError

from ..questionnaire_models import Phase, Questionnaire, QuestionnaireResponse
from ..questionnaire_schema import definition_parse


@transaction.atomic
def questionnaire_save(*, study, phase: str, questions, by=None) -> tuple[Questionnaire | None, bool]:
    """Store `questions` (JSON text or a list) as the study's questionnaire for `phase`.

    Unchanged: nothing stored. Current version unanswered: changed in place. Answered: a new version,
    so the answers keep the questions they answered. Returns (the current version, whether it changed)."""
    if phase not in Phase.values:
        raise ServiceError(f"Unknown questionnaire phase {phase!r}; use one of {', '.join(Phase.values)}.", code="bad_phase")
    parsed = definition_parse(questions)
    # Locking the current version makes two saves at once one after the other, not two version 2s.
    current = Questionnaire.objects.select_for_update().filter(study=study, phase=phase).order_by("-version").first()
    if current is None:
        if not parsed:
            return None, False
        return Questionnaire.objects.create(study=study, phase=phase, version=1, questions=parsed, created_by=by), True
    if current.questions == parsed:
        return current, False
    if not current.responses.exists():
        current.questions, current.created_by = parsed, by
        current.save(update_fields=["questions", "created_by", "updated_at"])
        return current, True
    return Questionnaire.objects.create(study=study, phase=phase, version=current.version + 1, questions=parsed, created_by=by), True


def _bad(message: str, question: dict | None = None) -> ServiceError:
    errors = {f"q_{question['id']}": [message]} if question else {"__all__": [message]}
    return ServiceError(message, code="bad_answer", extra={"errors": errors})


def answer_check(question: dict, value):
    """One typed answer against its question; the stored value, or a ServiceError naming the question."""
    kind = question["kind"]
    if kind == "single":
        if value not in question["choices"]:
            raise _bad(f"“{value}” is not one of the choices.", question)
        return value
    if kind == "multiple":
        if not isinstance(value, list) or any(v not in question["choices"] for v in value) or len(set(value)) != len(value):
            raise _bad("Pick only from the choices shown, each once.", question)
        top = question.get("max_choices") or len(question["choices"])
        if not question.get("min_choices", 0) <= len(value) <= top:
            raise _bad(f"Pick between {question.get('min_choices', 0)} and {top} choices.", question)
        # Stored in the order of the choices, so the same answer is always the same value.
        return [c for c in question["choices"] if c in value]
    if kind == "likert":
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= len(question["scale"]):
            raise _bad("Pick one point of the scale.", question)
        return value
    if kind == "number":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise _bad("Enter a number.", question)
        if not question["min"] <= value <= question["max"]:
            raise _bad(f"Enter a number from {question['min']:g} to {question['max']:g}.", question)
        if question.get("integer", True):
            if value != int(value):
                raise _bad("Enter a whole number.", question)
            return int(value)
        return float(value)
    if not isinstance(value, str) or len(value) > question["max_length"]:
        raise _bad(f"Write at most {question['max_length']} characters.", question)
    return value


def questionnaire_answer(*, questionnaire: Questionnaire, annotator, answers: dict) -> tuple[QuestionnaireResponse, bool]:
    """Store one annotator's answers to the current version; (the response, whether it is new).

    An answer sent twice (a double click, a retry) finds the first and stores nothing more."""
    latest = Questionnaire.objects.filter(study_id=questionnaire.study_id, phase=questionnaire.phase).order_by("-version").values_list("pk", flat=True).first()
    existing = QuestionnaireResponse.objects.filter(study_id=questionnaire.study_id, phase=questionnaire.phase, annotator=annotator).first()
    if existing is not None:
        return existing, False
    if latest != questionnaire.pk:
        raise ServiceError("These questions were changed while you answered them; the page shows the new ones.", code="questionnaire_changed", status=409)
    by_id = {q["id"]: q for q in questionnaire.questions}
    unknown = sorted(set(answers) - set(by_id))
    if unknown:
        raise _bad(f"The form sent answers to questions this questionnaire does not have ({', '.join(unknown)}); reload the page.")
    stored = {}
    for qid, question in by_id.items():
        value = answers.get(qid)
        if value is None or value == "" or value == []:
            if question["required"]:
                raise _bad("This question needs an answer before you go on.", question)
            continue
        stored[qid] = answer_check(question, value)
    try:
        with transaction.atomic():
            response = QuestionnaireResponse.objects.create(questionnaire=questionnaire, study_id=questionnaire.study_id, phase=questionnaire.phase, annotator=annotator, answers=stored)
    except IntegrityError:
        # Two sends at once: the other one stored first.
        return QuestionnaireResponse.objects.get(study_id=questionnaire.study_id, phase=questionnaire.phase, annotator=annotator), False
    return response, True
