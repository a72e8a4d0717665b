"""Forms of the questionnaires: the participant's answers (fields made from the version asked) and the researcher's editor."""

from __future__ import annotations

import json

from django import forms

from common.errors import ServiceError

from .questionnaire_schema import EXAMPLE, definition_parse

FIELD_PREFIX = "q_"
REQUIRED_MESSAGE = "This question needs an answer before you go on."


def _field(question: dict) -> forms.Field:
    common = {"label": question["text"], "help_text": question.get("help", ""), "required": question["required"], "error_messages": {"required": REQUIRED_MESSAGE}}
    kind = question["kind"]
    if kind == "single":
        return forms.ChoiceField(choices=[(c, c) for c in question["choices"]], widget=forms.RadioSelect, **common)
    if kind == "multiple":
        return forms.MultipleChoiceField(choices=[(c, c) for c in question["choices"]], widget=forms.CheckboxSelectMultiple, **common)
    if kind == "likert":
        choices = [(str(i), label) for i, label in enumerate(question["scale"], start=1)]
        return forms.TypedChoiceField(choices=choices, coerce=int, empty_value=None, widget=forms.RadioSelect(attrs={"class": "likert"}), **common)
    if kind == "number":
        bounds = {"min_value": question["min"], "max_value": question["max"]}
        if question.get("integer", True):
            return forms.IntegerField(min_value=int(question["min"]), max_value=int(question["max"]), **common)
        return forms.FloatField(**bounds, widget=forms.NumberInput(attrs={"step": "any"}), **common)
    return forms.CharField(max_length=question["max_length"], strip=True, widget=forms.TextInput(attrs={"autocomplete": "off"}), **common)


class QuestionnaireAnswerForm(forms.Form):
    """One field per question (`q_<id>`); `version` says which version the page showed."""

    version = forms.IntegerField(widget=forms.HiddenInput)

    def __init__(self, *args, questionnaire, **kwargs):
        super().__init__(*args, **kwargs)
        self.questionnaire = questionnaire
        self.fields["version"].initial = questionnaire.version
        for question in questionnaire.questions:
            self.fields[FIELD_PREFIX + question["id"]] = _field(question)
        self.kinds = {FIELD_PREFIX + q["id"]: q["kind"] for q in questionnaire.questions}

    def clean(self):
        data = super().clean()
        # A field the page never showed is a forged or stale form: refused, not ignored.
        sent = {key for key in (self.data or {}).keys() if key.startswith(FIELD_PREFIX)}
        unknown = sorted(sent - set(self.kinds))
        if unknown:
            raise forms.ValidationError(f"The form sent answers to questions this questionnaire does not have ({', '.join(k[len(FIELD_PREFIX) :] for k in unknown)}); reload the page.")
        return data

    def answers(self) -> dict:
        """The typed answers by question id (None: left blank)."""
        return {name[len(FIELD_PREFIX) :]: self.cleaned_data.get(name) for name in self.kinds}

    def rows(self) -> list[dict]:
        return [{"field": self[name], "kind": kind} for name, kind in self.kinds.items()]


class QuestionnaireEditForm(forms.Form):
    """Both phases as JSON lists of questions; empty asks nothing in that phase."""

    pre = forms.CharField(
        label="Before the study (asked after the headphone check and the practice round, before the first pair)", required=False,
        widget=forms.Textarea(attrs={"rows": 14, "spellcheck": "false", "class": "code"}),
    )  # fmt: skip
    post = forms.CharField(
        label="After the study (asked after the last pair, before the completion code)", required=False,
        widget=forms.Textarea(attrs={"rows": 10, "spellcheck": "false", "class": "code"}),
    )  # fmt: skip

    def _definition(self, name: str) -> list[dict]:
        try:
            return definition_parse(self.cleaned_data.get(name, ""))
        except ServiceError as exc:
            raise forms.ValidationError(exc.message) from exc

    def clean_pre(self):
        return self._definition("pre")

    def clean_post(self):
        return self._definition("post")


def definition_text(questions: list[dict] | None) -> str:
    return json.dumps(questions, indent=2, ensure_ascii=False) if questions else ""


EXAMPLE_TEXT = json.dumps(EXAMPLE, indent=2, ensure_ascii=False)
