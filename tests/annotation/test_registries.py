"""The registries that a stored kind selects from agree with the choices the database stores: a judge kind is in
`scoring.judges.ADAPTERS` exactly when it is in `Judge.Kind`, a screening kind is in `annotation.screens.SCREENS`
exactly when it is a `ScreeningKind` other than off, and the stored choices are migrated."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from annotation import services
from annotation.crowd_models import ScreeningAttempt
from annotation.models import ScreeningKind
from annotation.screens import SCREENS, Screen, huggins, screen_for
from scoring.judges import ADAPTERS
from scoring.models import Judge
from tests.factories import StudyAnnotatorFactory, StudyFactory


def test_every_judge_kind_has_an_adapter_and_every_adapter_a_kind():
    assert set(Judge.Kind.values) == set(ADAPTERS), "add the kind to both scoring.judges.ADAPTERS and scoring.models.Judge.Kind (with a migration)"
    for kind, adapter in ADAPTERS.items():
        assert adapter.kind == kind


def test_every_screening_kind_has_a_screen_and_every_screen_a_kind():
    assert set(ScreeningKind.values) - {ScreeningKind.OFF} == set(SCREENS)
    with pytest.raises(LookupError, match="no headphone screen of kind 'off'"):
        screen_for("off")


@pytest.mark.django_db
def test_the_stored_choices_are_migrated():
    out = io.StringIO()
    call_command("makemigrations", "scoring", "annotation", check=True, dry_run=True, stdout=out)


@pytest.mark.django_db
def test_the_attempts_stored_kind_selects_the_screen_that_checks_it(monkeypatch):
    study = StudyFactory(name="registry-screen", screening="huggins", screening_trials=2, screening_pass=2)
    user = StudyAnnotatorFactory(study=study).annotator
    attempt = services.screening_attempt_open(study=study, annotator=user)
    right = huggins.answers_for(attempt.seed, attempt.trials)
    # Another screen registered under the attempt's kind: its checker, not Huggins', decides.
    monkeypatch.setitem(SCREENS, attempt.kind, Screen(trial_wav=huggins.trial_wav, score=lambda seed, answers: 0, choices=(1, 2, 3), instructions="", question=""))
    checked = services.screening_answer(token=attempt.token, annotator=user, answers=right)
    assert checked.correct == 0 and checked.passed is False
    assert ScreeningAttempt.objects.get(pk=attempt.pk).kind == "huggins"
