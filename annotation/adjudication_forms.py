"""Forms of the adjudication pages: naming a study's adjudicators, and one decision."""

from __future__ import annotations

import re

from django import forms
from django.contrib.auth import get_user_model

from .services.adjudication import REASON_MAX

_NAMES = re.compile(r"[\s,;]+")
ANSWER_CHOICES = [("A", "A"), ("B", "B"), ("tie", "Tie")]


class AdjudicatorsForm(forms.Form):
    usernames = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))

    def clean_usernames(self) -> list:
        names = list(dict.fromkeys(n for n in _NAMES.split(self.cleaned_data["usernames"]) if n))
        users = {u.username: u for u in get_user_model().objects.filter(username__in=names, is_active=True)}
        missing = [n for n in names if n not in users]
        if missing:
            raise forms.ValidationError(f"No active account named {', '.join(missing)}; nothing was changed.")
        return [users[n] for n in names]


class AdjudicationForm(forms.Form):
    alignment = forms.ChoiceField(choices=ANSWER_CHOICES, widget=forms.RadioSelect, error_messages={"required": "Choose A, B or tie for instruction following."})
    musicality = forms.ChoiceField(choices=ANSWER_CHOICES, widget=forms.RadioSelect, error_messages={"required": "Choose A, B or tie for musicality."})
    reason = forms.CharField(
        max_length=REASON_MAX,
        widget=forms.Textarea(attrs={"rows": 3}),
        strip=True,
        error_messages={"required": "Give the reason for the decision: it goes into the export beside it."},
    )
    receipt_A = forms.CharField(required=False, widget=forms.HiddenInput(attrs={"id": "receipt-A"}))
    receipt_B = forms.CharField(required=False, widget=forms.HiddenInput(attrs={"id": "receipt-B"}))
