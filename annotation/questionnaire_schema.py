"""The definition of a questionnaire: a list of questions, checked with pydantic before it is stored.

Kinds: `single` (one of `choices`), `multiple` (any of `choices`, `min_choices`..`max_choices`),
`likert` (one point of a labelled `scale`, stored as its position 1..n), `number` (between `min` and
`max`, whole numbers unless `integer` is false) and `text` (at most `max_length` characters).
Every question has an `id` (kept across versions: answers and report filters refer to it), a
`text`, and `required` (false by default).
"""

from __future__ import annotations

import json
from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, TypeAdapter, ValidationError, model_validator

from common.errors import ServiceError

MAX_QUESTIONS = 50
QuestionId = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]{0,39}$")]
Label = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=120)]


class _Question(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    id: QuestionId
    text: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=400)]
    help: Annotated[str, StringConstraints(max_length=400)] = ""
    required: bool = False


def _distinct(labels: list[str], what: str) -> None:
    if len(set(labels)) != len(labels):
        raise ValueError(f"{what} must differ from each other")


class SingleChoice(_Question):
    kind: Literal["single"]
    choices: Annotated[list[Label], Field(min_length=2, max_length=40)]

    @model_validator(mode="after")
    def _check(self):
        _distinct(self.choices, "choices")
        return self


class MultipleChoice(_Question):
    kind: Literal["multiple"]
    choices: Annotated[list[Label], Field(min_length=2, max_length=40)]
    min_choices: Annotated[int, Field(ge=0)] = 0
    max_choices: Annotated[int, Field(ge=1)] | None = None

    @model_validator(mode="after")
    def _check(self):
        _distinct(self.choices, "choices")
        top = self.max_choices if self.max_choices is not None else len(self.choices)
        if not self.min_choices <= top <= len(self.choices):
            raise ValueError("min_choices must be at most max_choices, and max_choices at most the number of choices")
        return self


class Likert(_Question):
    kind: Literal["likert"]
    scale: Annotated[list[Label], Field(min_length=2, max_length=11)]

    @model_validator(mode="after")
    def _check(self):
        _distinct(self.scale, "scale labels")
        return self


class Number(_Question):
    kind: Literal["number"]
    min: float
    max: float
    integer: bool = True

    @model_validator(mode="after")
    def _check(self):
        if self.min > self.max:
            raise ValueError("min must not be above max")
        if self.integer and (self.min != int(self.min) or self.max != int(self.max)):
            raise ValueError("min and max of a whole-number question must be whole numbers")
        return self


class ShortText(_Question):
    kind: Literal["text"]
    max_length: Annotated[int, Field(ge=1, le=2000)] = 200


Question = Annotated[Union[SingleChoice, MultipleChoice, Likert, Number, ShortText], Field(discriminator="kind")]
_DEFINITION = TypeAdapter(Annotated[list[Question], Field(max_length=MAX_QUESTIONS)])

EXAMPLE = [
    {"id": "training", "kind": "single", "text": "How many years of musical training have you had?", "choices": ["None", "1–5 years", "More than 5 years"], "required": True},
    {"id": "genres", "kind": "multiple", "text": "Which styles do you listen to often?", "choices": ["Classical", "Pop", "Jazz", "Electronic"]},
    {"id": "headphones_fit", "kind": "likert", "text": "My headphones are comfortable.", "scale": ["Disagree", "Neutral", "Agree"]},
    {"id": "age", "kind": "number", "text": "Your age in years", "min": 18, "max": 100},
    {"id": "headphones_model", "kind": "text", "text": "Which headphones are you wearing?", "max_length": 100},
]


def _where(loc: tuple, questions) -> str:
    if not loc or not isinstance(loc[0], int):
        return "The questionnaire"
    index = loc[0]
    given = questions[index] if isinstance(questions, list) and index < len(questions) else None
    qid = given.get("id") if isinstance(given, dict) and isinstance(given.get("id"), str) else ""
    # loc[1] is the kind pydantic picked (the discriminator's tag); what follows is the field.
    field = ".".join(str(part) for part in loc[2:])
    return f"Question {index + 1}" + (f" ({qid})" if qid else "") + (f", {field}" if field else "")


def _message(err: dict) -> str:
    if err["type"] == "string_pattern_mismatch":
        return "use lower-case letters, digits and _, starting with a letter (at most 40)"
    return err["msg"].removeprefix("Value error, ")


def definition_parse(raw) -> list[dict]:
    """A definition (JSON text, or already parsed) as a list of plain, checked question dicts; else a ServiceError that says where."""
    if isinstance(raw, str):
        if not raw.strip():
            return []
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ServiceError(f"Not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}.", code="bad_questionnaire") from exc
    if not isinstance(raw, list):
        raise ServiceError("A questionnaire is a JSON list of questions: [ {…}, {…} ].", code="bad_questionnaire")
    try:
        questions = _DEFINITION.validate_python(raw)
    except ValidationError as exc:
        problems = [f"{_where(err['loc'], raw)}: {_message(err)}" for err in exc.errors()[:5]]
        raise ServiceError("; ".join(problems) + ".", code="bad_questionnaire") from exc
    ids = [q.id for q in questions]
    doubled = sorted({i for i in ids if ids.count(i) > 1})
    if doubled:
        raise ServiceError(f"Question ids must be unique; used more than once: {', '.join(doubled)}.", code="bad_questionnaire")
    return [q.model_dump(exclude_defaults=False) for q in questions]


def answer_text(question: dict, value) -> str:
    """An answer as a person reads it (CSV, summaries): choice labels, the Likert point with its label."""
    if value is None or value == "" or value == []:
        return ""
    if question["kind"] == "multiple":
        return "; ".join(value)
    if question["kind"] == "likert":
        return f"{value} ({question['scale'][int(value) - 1]})" if 1 <= int(value) <= len(question["scale"]) else str(value)
    if question["kind"] == "number":
        return str(int(value)) if question.get("integer", True) else f"{value:g}"
    return str(value)
