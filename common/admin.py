"""The admin never deletes people's answers: a row whose delete would cascade to a stored answer stays.

An answer (a judgment, a rating, an arena vote: settings.ANSWER_MODELS) is taken out of analyses by
the annotator's withdrawal or the study's exclusion rules, never by a delete, because exports,
benchmarks and agreement figures already published were computed from it. Django's own delete page
stops at PROTECT foreign keys; this rule stops at CASCADE ones, found from the models' metadata so
a new model or relation is covered without being listed.

What an answer rests on is kept the same way: a delete that would set an answer's foreign key to NULL
(a judgment's assignment) counts as changing the answer, and the listening evidence of
settings.EVIDENCE_MODELS (listening events) is walked as answers are. Audio fetches need no entry: the user and the clip they
hang from are PROTECTed by the answers themselves (a judgment PROTECTs its annotator, a pair its clips).
"""

from __future__ import annotations

from functools import cache

from django.apps import apps
from django.conf import settings
from django.contrib import admin
from django.db import models

# On-delete behaviours by which deleting a row changes the one that points at it.
CHANGES = (models.CASCADE, models.SET_NULL, models.SET_DEFAULT)

# Chains longer than this do not occur in the schema; the bound keeps a cycle from looping.
MAX_DEPTH = 5


@cache
def answer_paths(model: type[models.Model]) -> tuple[tuple[type[models.Model], str], ...]:
    """(answer model, lookup from it to a `model` row) for every chain of CASCADE foreign keys by which deleting
    a `model` row deletes answers; the lookup is "pk" when `model` is an answer model itself."""
    model = model._meta.concrete_model
    found = []
    for label in (*settings.ANSWER_MODELS, *settings.EVIDENCE_MODELS):
        answer = apps.get_model(label)
        if answer._meta.concrete_model is model:
            found.append((answer, "pk"))
            continue
        frontier = [(answer, "")]
        for _ in range(MAX_DEPTH):
            step = []
            for current, path in frontier:
                for field in current._meta.concrete_fields:
                    if not field.is_relation or field.many_to_many or field.remote_field.on_delete not in CHANGES:
                        continue
                    # A SET_NULL hop changes the row it starts from; nothing beyond it is deleted.
                    if field.remote_field.on_delete is not models.CASCADE and current._meta.concrete_model is not answer._meta.concrete_model:
                        continue
                    target = field.related_model._meta.concrete_model
                    lookup = f"{path}__{field.name}" if path else field.name
                    if target is model:
                        found.append((answer, lookup))
                    else:
                        step.append((target, lookup))
            frontier = step
    return tuple(found)


def answers_under(obj: models.Model) -> bool:
    return any(answer._default_manager.filter(**{lookup: obj.pk if lookup == "pk" else obj}).exists() for answer, lookup in answer_paths(type(obj)))


class AnswersKept:
    """Mixed into every ModelAdmin of the project (tests/platform/test_admin_keeps_answers.py walks the registry)."""

    def has_delete_permission(self, request, obj=None):
        if obj is not None and answers_under(obj):
            return False
        return super().has_delete_permission(request, obj)

    def get_actions(self, request):
        # The bulk delete never calls has_delete_permission(obj); a model that can hold answers loses it.
        actions = super().get_actions(request)
        if answer_paths(self.model):
            actions.pop("delete_selected", None)
        return actions


class ModelAdmin(AnswersKept, admin.ModelAdmin):
    pass


class InlineAnswersKept:
    """An inline row is deleted from its parent's form without a page of its own: rows that can hold answers never are."""

    def has_delete_permission(self, request, obj=None):
        if answer_paths(self.model):
            return False
        return super().has_delete_permission(request, obj)


class TabularInline(InlineAnswersKept, admin.TabularInline):
    pass
