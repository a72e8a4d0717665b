"""HTML forms for the annotation app: consent, withdrawal and the researcher's study set-up."""

from __future__ import annotations

import re

from django import forms
from django.contrib.auth import get_user_model

from common.errors import ServiceError

from .models import Dimension, Study
from .ratings import services as rating_services
from .ratings.models import RatingTask, TaskType
from .services import STUDY_PARAMETERS


class ConsentForm(forms.Form):
    agree = forms.BooleanField(
        required=True,
        label="I have read the above and agree to take part.",
        error_messages={"required": "Tick the box to agree, or leave this page if you do not want to take part."},
    )


class ConsentWithdrawForm(forms.Form):
    confirm = forms.BooleanField(
        required=True,
        label="Yes, withdraw my consent and take my answers out of every later export and analysis.",
        error_messages={"required": "Tick the box to confirm the withdrawal; nothing was changed."},
    )


class StudyForm(forms.ModelForm):
    """Reads a study's parameters from the page; `services.study_create` / `study_update` store them.

    The name is fixed once created because URLs and exports use it.
    """

    class Meta:
        model = Study
        fields = ("name", *STUDY_PARAMETERS)
        widgets = {
            "instructions": forms.Textarea(attrs={"rows": 6}),
            "overlap_share": forms.NumberInput(attrs={"step": "0.05", "min": "0", "max": "1"}),
            "gold_rate": forms.NumberInput(attrs={"step": "0.01", "min": "0", "max": "1"}),
            "active_share": forms.NumberInput(attrs={"step": "0.05", "min": "0", "max": "1"}),
            "min_listen_seconds": forms.NumberInput(attrs={"step": "0.5", "min": "0"}),
            "loudness_target_lufs": forms.NumberInput(attrs={"step": "0.5", "min": "-40", "max": "-10"}),
        }
        labels = {
            "overlap_target": "Votes per overlap pair",
            "overlap_share": "Share of pairs with overlap (0–1)",
            "min_listen_seconds": "Minimum listening per clip (s)",
            "rationale_min_length": "Minimum rationale length (characters)",
            "lock_ttl_seconds": "Lock time-to-live (s)",
            "gold_rate": "Gold/catch rate (0–1)",
            "annotator_target": "Pairs per annotator",
            "selection": "Pair selection",
            "active_share": "Share of actively chosen pairs (0–1)",
            "is_active": "Open for annotation",
            "screening": "Headphone check before the first pair",
            "screening_trials": "Headphone check: sounds per attempt",
            "screening_pass": "Headphone check: right answers to pass",
            "screening_retries": "Headphone check: retries after a fail",
            "screening_existing_members": "Headphone check also for members who judged before it was turned on",
            "loudness_match": "Play every clip at the same loudness",
            "loudness_target_lufs": "Loudness target (LUFS)",
            "dimension_passes": "How the two questions are asked",
        }
        error_messages = {
            "licence": {"required": "Name the licence the annotations will be released under (e.g. CC BY-NC-SA 4.0)."},
            "name": {"required": "Give the study a name.", "unique": "A study with this name already exists; choose another name."},
        }
        help_texts = {
            "name": "Short identifier used in URLs and exports (letters, digits, hyphens). Cannot be changed later.",
            "instructions": "Shown to annotators above every pair, before the clips unlock.",
            "min_listen_seconds": "Each clip must be heard this long before answers can be submitted (checked again by the server).",
            "rationale_min_length": "Minimum characters in the written rationale; 0 makes it optional.",
            "lock_ttl_seconds": "How long a served pair stays reserved for its annotator.",
            "gold_rate": "Share of tasks drawn from gold and catch pairs while regular pairs remain.",
            "licence": "Licence of the released annotations; shown on the consent page.",
            "selection": (
                "Random (recommended), or serve first the pairs the reward model is least sure of / the judges disagree most on. "
                "In simulation (bench/active.py, 30 seeds, two noise models) neither active order needed fewer votes than random; "
                "disagreement needed more at some targets, not at others."
            ),
            "active_share": "Cap on actively chosen pairs: the other draws stay random so the votes keep an unbiased sample.",
            "loudness_match": (
                "Each clip plays at the gain that brings its loudness (ITU-R BS.1770) to the target, its true peak kept under "
                "-1 dBTP; the files are not changed. Changed during a study, answers are heard at two levels: the export says when."
            ),
            "loudness_target_lufs": "-23 LUFS (EBU R128) leaves most clips room to be matched without reaching the peak ceiling.",
            "dimension_passes": (
                "Separate screens ask instruction following first and musicality next, on the same pair with the same listening, "
                "so the first answer is not in view when the second is given. The report measures how far the second echoes the first."
            ),
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            self.fields["name"].disabled = True
            self.fields["name"].help_text = "Used in URLs and exports; fixed once the study exists."
        else:
            # The task type is set once, when the study is made (a study holds pairs or ratings, never both).
            self.fields.update(_rating_fields())
        self.rating_task = RatingTask.objects.filter(study=self.instance).first() if self.instance.pk else None
        if self.rating_task is not None:
            self.fields["clip_sets"] = _clip_sets_field(label=f"Add rating items ({self.rating_task.task}: {', '.join(self.rating_task.dimensions)})")
        for field in self.fields.values():
            if isinstance(field.widget, (forms.CheckboxInput, forms.CheckboxSelectMultiple)):
                continue
            field.widget.attrs.setdefault("class", "input")
        # The headphone-check settings, the loudness target and how the questions are asked may be left out of a
        # post (older pages, API-like clients): they keep their value.
        for name in (*SCREENING_FIELDS, "loudness_target_lufs", "dimension_passes"):
            self.fields[name].required = False

    def clean(self):
        cleaned = super().clean()
        for name in (*SCREENING_FIELDS, "loudness_target_lufs", "dimension_passes"):
            if cleaned.get(name) in (None, ""):
                cleaned[name] = getattr(self.instance, name)
        if "task_type" in self.fields:
            self._clean_rating(cleaned)
        elif self.rating_task is not None:
            self._clip_sets_read(cleaned, task=self.rating_task.task, dimensions=self.rating_task.dimensions)
        return cleaned

    def _clip_sets_read(self, cleaned: dict, *, task: str, dimensions) -> None:
        try:
            cleaned["clip_sets"] = rating_services.clip_sets_parse(cleaned.get("clip_sets") or "", task=task, dimensions=dimensions)
        except ServiceError as exc:
            self.add_error("clip_sets", exc.message)

    def _clean_rating(self, cleaned: dict) -> None:
        """Rating dimensions and clip sets only for acr and multi studies, at least one dimension there, and clip sets
        read into items (annotation.ratings.services.clip_sets_parse); rating_study_create stores them."""
        task = cleaned["task_type"] = cleaned.get("task_type") or TaskType.PAIRWISE
        text = cleaned.get("clip_sets") or ""
        if task == TaskType.PAIRWISE:
            if cleaned.get("rating_dimensions"):
                self.add_error("rating_dimensions", "Dimensions are asked by acr and multi studies only; a pairwise study asks both.")
            if text.strip():
                self.add_error("clip_sets", "Clip sets are rating items: pick acr or multi, or leave the box empty and import pairs later.")
            cleaned["rating_dimensions"], cleaned["clip_sets"] = [], []
            return
        if not cleaned.get("rating_dimensions"):
            self.add_error("rating_dimensions", "Pick at least one dimension to rate.")
        self._clip_sets_read(cleaned, task=task, dimensions=cleaned.get("rating_dimensions") or ())


def _rating_fields() -> dict:
    return {
        "task_type": forms.ChoiceField(
            label="Task type",
            choices=TaskType.choices,
            initial=TaskType.PAIRWISE,
            # Left out (older pages, scripts): pairwise, as before the choice existed.
            required=False,
            help_text="Pairwise: two clips, a preference per dimension. acr: one clip rated 1-5. multi: a condition's clips on one page, 0-100 each. Fixed once the study exists.",
        ),
        "rating_dimensions": forms.MultipleChoiceField(
            label="Dimensions to rate (acr and multi)",
            choices=Dimension.choices,
            required=False,
            widget=forms.CheckboxSelectMultiple,
        ),
        "clip_sets": _clip_sets_field(label="Rating items: clip sets (acr and multi)"),
    }


def _clip_sets_field(*, label: str) -> forms.CharField:
    return forms.CharField(
        label=label,
        required=False,
        widget=forms.Textarea(attrs={"rows": 4, "spellcheck": "false"}),
        help_text=rating_services.CLIP_SETS_HELP + " More items can be added later on the study's edit page.",
    )


SCREENING_FIELDS = ("screening", "screening_trials", "screening_pass", "screening_retries", "screening_existing_members")
_USERNAME_SPLIT = re.compile(r"[\s,;]+")


class StudyAnnotatorAddForm(forms.Form):
    usernames = forms.CharField(
        label="Usernames",
        widget=forms.Textarea(attrs={"rows": 2, "placeholder": "annotator1, annotator2"}),
        help_text="One or more existing accounts, separated by commas, spaces or new lines.",
    )

    def clean_usernames(self) -> list:
        names = [n for n in _USERNAME_SPLIT.split(self.cleaned_data["usernames"]) if n]
        if not names:
            raise forms.ValidationError("Enter at least one username.")
        names = list(dict.fromkeys(names))
        users = {u.username: u for u in get_user_model().objects.filter(username__in=names)}
        missing = [n for n in names if n not in users]
        if missing:
            # All-or-nothing: a typo in one name must not half-apply the list.
            raise forms.ValidationError(f"No account named {', '.join(missing)}; nobody was added. Create the account first or fix the spelling.")
        inactive = [n for n in names if not users[n].is_active]
        if inactive:
            raise forms.ValidationError(f"The account {', '.join(inactive)} is deactivated; nobody was added.")
        return [users[n] for n in names]


class StudyCollaboratorsForm(forms.Form):
    usernames = forms.CharField(
        label="Collaborators",
        required=False,
        widget=forms.Textarea(attrs={"rows": 2, "placeholder": "researcher2"}),
        help_text="Researchers who may change this study with you (parameters, annotators, imports, training); empty: none.",
    )

    def clean_usernames(self) -> list:
        from common.roles import is_researcher

        names = list(dict.fromkeys(n for n in _USERNAME_SPLIT.split(self.cleaned_data["usernames"]) if n))
        users = {u.username: u for u in get_user_model().objects.filter(username__in=names)}
        missing = [n for n in names if n not in users]
        if missing:
            raise forms.ValidationError(f"No account named {', '.join(missing)}; nothing was changed.")
        not_researchers = [n for n in names if not is_researcher(users[n])]
        if not_researchers:
            raise forms.ValidationError(f"{', '.join(not_researchers)} is not a researcher; nothing was changed.")
        return [users[n] for n in names]


class PairFilesForm(forms.Form):
    """The JSONL + audio zip of a pair import, each file refused past `max_bytes` (the admin's and the researcher's import)."""

    jsonl = forms.FileField(
        required=False,
        label="JSONL file",
        help_text="CMI-RewardBench rows. Leave empty to use the train.jsonl / test.jsonl at the top of the zip.",
    )
    archive = forms.FileField(label="Audio (zip)", help_text="The audio the rows name; paths are relative to the zip's root.")
    skip_invalid = forms.BooleanField(required=False, label="Import the valid rows even if some rows are invalid")

    def __init__(self, *args, max_bytes: int, **kwargs):
        super().__init__(*args, **kwargs)
        self.max_bytes = max_bytes

    def clean(self):
        data = super().clean()
        for name in ("jsonl", "archive"):
            upload = data.get(name)
            if upload is not None and upload.size > self.max_bytes:
                self.add_error(name, f"This file is {upload.size:,} bytes; the limit is {self.max_bytes:,} bytes.")
        return data


class PairUploadForm(PairFilesForm):
    """The researcher's import: the study picked from those the user may import into, never typed."""

    study = forms.ModelChoiceField(queryset=Study.objects.none(), to_field_name="name", empty_label=None)
    field_order = ["study", "jsonl", "archive", "skip_invalid"]

    def __init__(self, *args, studies, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["study"].queryset = studies


class StudyExportForm(forms.Form):
    """The study page's export options; `services.exports.study_export_request` checks and records them."""

    SPLIT_KEEP = "keep"
    SPLIT_BALANCED = "balanced"
    split = forms.ChoiceField(
        choices=[(SPLIT_KEEP, "Keep each pair's split as stored"), (SPLIT_BALANCED, "Draw a balanced test split (stored on the pairs)")],
        initial=SPLIT_KEEP,
        widget=forms.RadioSelect,
        label="Split",
    )
    balanced_test = forms.IntegerField(
        required=False, min_value=4, label="Test pairs", help_text="A multiple of 4: a quarter per modality (text, +lyrics, +reference, +both)."
    )
    seed = forms.IntegerField(required=False, label="Seed", help_text="The same seed draws the same test pairs again.")
    include_unvoted = forms.BooleanField(required=False, label="Include pairs without votes (rows with empty preferences and user id)")
    include_seeded = forms.BooleanField(required=False, label="Include seeded demo votes (no one listened; labelled as demo data in the rows)")

    def clean(self):
        data = super().clean()
        if data.get("split") == self.SPLIT_BALANCED:
            if data.get("balanced_test") is None:
                self.add_error("balanced_test", "Say how many test pairs to draw.")
            if data.get("seed") is None:
                self.add_error("seed", "Give a seed, so the draw can be repeated.")
        else:
            data["balanced_test"] = data["seed"] = None
        return data
