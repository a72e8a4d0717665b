"""Researcher forms for the crowd-quality steps: practice pairs and recruitment links on the study page."""

from __future__ import annotations

from django import forms
from django.core.validators import RegexValidator

from .services.recruitment import MAX_DAYS

_CODE = RegexValidator(r"^[A-Za-z0-9_-]+$", "Letters, digits, - and _ only, as the recruitment platform gave it.")


class PracticeItemForm(forms.Form):
    pair_id = forms.IntegerField(label="Gold pair", min_value=1, error_messages={"required": "Choose one of this study's gold pairs.", "invalid": "Choose one of this study's gold pairs."})
    explanation = forms.CharField(
        label="Explanation shown after the answer",
        max_length=2000,
        widget=forms.Textarea(attrs={"rows": 3}),
        error_messages={"required": "Write the explanation shown after the answer."},
    )

    def __init__(self, *args, candidates=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["pair_id"].widget = forms.Select(choices=[("", "Choose a gold pair…"), *candidates])


class RecruitmentLinkForm(forms.Form):
    label = forms.CharField(label="Label (for you)", max_length=100, required=False)
    cap = forms.IntegerField(label="Cap (participants)", min_value=1, max_value=100_000, initial=100)
    days = forms.FloatField(label="Open for (days)", min_value=0.01, max_value=MAX_DAYS, initial=14)
    completion_url = forms.URLField(label="Completion URL", max_length=200, initial="https://app.prolific.com/submissions/complete", assume_scheme="https",
                                    help_text="The participant is sent here with ?cc=<code> at the end.")  # fmt: skip
    completion_code = forms.CharField(label="Completion code", max_length=40, validators=[_CODE], error_messages={"required": "Enter the platform's completion code."})
    screenout_code = forms.CharField(label="Screen-out code", max_length=40, required=False, validators=[_CODE], help_text="Shown to a participant who fails the headphone check.")
    signing_secret = forms.CharField(
        label="Signing secret (optional)", max_length=128, required=False, strip=True, widget=forms.TextInput(attrs={"autocomplete": "off", "spellcheck": "false"}),
        help_text="Only when whatever sends participants here signs each participant id: the link then needs sig=<hex HMAC-SHA256 of the id with this secret>. At least 16 characters.",
    )  # fmt: skip
    gold_pause_below = forms.FloatField(
        label="Pause below gold accuracy (optional)", min_value=0.0, max_value=1.0, required=False,
        help_text="A share from 0 to 1, e.g. 0.7: the link stops admitting new participants when its recent participants answer fewer gold pairs right than this.",
    )  # fmt: skip
    gold_pause_window = forms.IntegerField(label="Recent participants counted", min_value=1, max_value=1000, initial=10, required=False)

    def clean_gold_pause_window(self):
        return self.cleaned_data.get("gold_pause_window") or 10


def crowd_manage_context(*, study, can_change: bool, base_url: str, practice_form: PracticeItemForm | None = None, link_form: RecruitmentLinkForm | None = None) -> dict:
    """The study page's practice and recruitment sections: what everyone sees, and the forms for those who may change the study."""
    from .crowd_selectors import practice_candidates, practice_manage_rows, recruitment_link_rows

    context = {"practice_items": practice_manage_rows(study=study)}
    if can_change:
        candidates = practice_candidates(study=study)
        context.update(
            practice_candidates=candidates,
            practice_form=practice_form or PracticeItemForm(candidates=candidates),
            link_form=link_form or RecruitmentLinkForm(),
            recruitment_links=recruitment_link_rows(study=study, base_url=base_url),
        )
    return context
