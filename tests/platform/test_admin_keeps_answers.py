"""No admin page deletes a stored answer, directly or through a cascade: the registry is walked, not listed."""

from __future__ import annotations

import pytest
from django.apps import apps
from django.conf import settings
from django.contrib import admin
from django.db import models
from django.test import Client
from django.urls import reverse

from django.utils import timezone

from annotation.models import Assignment, Judgment, ListeningEvent, Pair, Study
from annotation.ratings.models import Rating, RatingAssignment, RatingItem, RatingListeningEvent, RatingSubmission
from arena.models import Battle, Vote
from common.admin import AnswersKept, InlineAnswersKept, answer_paths
from tests.arena.conftest import arena_system, ready_battle, visitor_with_terms
from tests.factories import AssignmentFactory, ClipFactory, JudgmentFactory, StudyFactory, UserFactory
from tests.ratings_helpers import member, rating_study

pytestmark = pytest.mark.django_db


def _registered():
    # Every URL conf is imported first, so every admin module has registered its models.
    reverse("admin:index")
    return admin.site._registry


def test_the_rule_finds_the_cascades_it_must_stop():
    holding = {model for model in _registered() if answer_paths(model)}
    # Not vacuous: the tables whose delete would take answers with them are found from the schema.
    assert {Study, Pair, Judgment, RatingItem, RatingSubmission, Battle, Vote} <= holding
    assert (Judgment, "pair__study") in answer_paths(Study) and (Rating, "submission__item__study") in answer_paths(Study)
    # Answers PROTECT their author; what reaches a user by CASCADE is the assignments and listening events hung from them.
    user_model = apps.get_model(settings.AUTH_USER_MODEL)
    assert user_model in _registered() and all("assignment" in lookup for _, lookup in answer_paths(user_model))
    # An answer's assignment (SET_NULL from the answer) and its listening evidence (CASCADE from the assignment).
    assert {(Judgment, "assignment"), (ListeningEvent, "assignment")} <= set(answer_paths(Assignment))
    assert {(RatingSubmission, "assignment"), (RatingListeningEvent, "assignment")} <= set(answer_paths(RatingAssignment))
    assert {Assignment, RatingAssignment} <= holding


def test_every_admin_that_could_delete_an_answer_keeps_the_rule():
    missing = []
    for model, model_admin in _registered().items():
        if answer_paths(model) and not isinstance(model_admin, AnswersKept):
            missing.append(f"{model._meta.label}: {type(model_admin).__name__}")
        for inline in model_admin.inlines:
            if answer_paths(inline.model) and not issubclass(inline, InlineAnswersKept):
                missing.append(f"{model._meta.label} inline {inline.__name__}")
    assert not missing, "admins that can delete answers without the rule (use common.admin.ModelAdmin / TabularInline):\n" + "\n".join(missing)


@pytest.fixture
def staff():
    client = Client()
    client.force_login(UserFactory(username="root", is_staff=True, is_superuser=True))
    return client


@pytest.fixture
def answers():
    """One stored answer of each kind (a judgment, a rating, an arena vote), the judgment's and the rating's
    assignments, and one listening event of each."""
    now = timezone.now()
    assignment = AssignmentFactory()
    JudgmentFactory(pair=assignment.pair, annotator=assignment.annotator, assignment=assignment)
    ListeningEvent.objects.create(assignment=assignment, seq=1, side="A", kind="play", server_time=now)
    study = rating_study(items=1)
    item = RatingItem.objects.get(study=study)
    rater = member(study)
    rating_assignment = RatingAssignment.objects.create(annotator=rater, item=item, served_at=now, lock_expires_at=now, order=[item.item_clips.get().clip_id])
    RatingListeningEvent.objects.create(assignment=rating_assignment, seq=1, side="A", kind="play", server_time=now)
    submission = RatingSubmission.objects.create(annotator=rater, item=item, assignment=rating_assignment)
    Rating.objects.create(submission=submission, clip=submission.item.item_clips.get().clip, dimension="musicality", value=4)
    visitor, _ = visitor_with_terms()
    battle = ready_battle(visitor, arena_system("one"), arena_system("two"))
    Vote.objects.create(battle=battle, visitor=visitor, choice="a", listen_seconds_a=6.0, listen_seconds_b=6.0)
    assert {label: apps.get_model(label).objects.count() for label in settings.ANSWER_MODELS} == dict.fromkeys(settings.ANSWER_MODELS, 1)


def _holder(answer: models.Model, lookup: str) -> models.Model:
    obj = answer
    for name in lookup.split("__") if lookup != "pk" else ():
        obj = getattr(obj, name)
    return obj


def test_no_delete_page_or_bulk_action_removes_a_row_that_holds_an_answer(staff, answers):
    kept = (*settings.ANSWER_MODELS, *settings.EVIDENCE_MODELS)
    counts = {label: apps.get_model(label).objects.count() for label in kept}
    assignments = dict(Judgment.objects.values_list("pk", "assignment_id")), dict(RatingSubmission.objects.values_list("pk", "assignment_id"))
    checked = set()
    for model, model_admin in _registered().items():
        for answer, lookup in answer_paths(model):
            obj = _holder(answer._default_manager.get(), lookup)
            url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_delete", args=[obj.pk])
            assert staff.get(url).status_code == 403, url
            assert staff.post(url, {"post": "yes"}).status_code == 403, url
            changelist = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
            assert 'value="delete_selected"' not in staff.get(changelist).content.decode(), changelist
            refused = staff.post(changelist, {"action": "delete_selected", "_selected_action": [obj.pk], "post": "yes"})
            assert refused.status_code in (200, 302) and model._default_manager.filter(pk=obj.pk).exists(), changelist
            checked.add(model)
    assert len(checked) >= 9 and {Assignment, RatingAssignment} <= checked
    assert counts == {label: apps.get_model(label).objects.count() for label in kept}
    assert assignments == (dict(Judgment.objects.values_list("pk", "assignment_id")), dict(RatingSubmission.objects.values_list("pk", "assignment_id")))


def test_a_row_without_answers_can_still_be_deleted(staff):
    study = StudyFactory(name="empty")
    ClipFactory()
    assert staff.post(reverse("admin:annotation_study_delete", args=[study.pk]), {"post": "yes"}).status_code == 302
    assert not Study.objects.filter(pk=study.pk).exists()
    # A model that holds no answers keeps the bulk action (the change list shows its actions once it has a row).
    assert 'value="delete_selected"' in staff.get(reverse("admin:annotation_clip_changelist")).content.decode()
