"""With the cache (Redis) unreachable, signed-in pages and the annotation API still answer from the database."""

from __future__ import annotations

import uuid

import pytest
from django.core.cache.backends.base import BaseCache
from django.urls import reverse
from rest_framework.test import APIClient

from annotation.models import Assignment, Judgment
from tests.factories import PairFactory, StudyAnnotatorFactory, StudyFactory
from tests.listening import listen


class UnreachableCache(BaseCache):
    """Every call fails as a client of a Redis that is down does."""

    def __init__(self, location, params):
        super().__init__(params)

    def _down(self, *args, **kwargs):
        raise ConnectionError("cache unreachable")

    add = get = set = touch = delete = has_key = incr = clear = get_many = set_many = delete_many = _down

    def __contains__(self, key):
        self._down()


@pytest.fixture
def cache_down(settings):
    settings.CACHES = {"default": {"BACKEND": f"{__name__}.UnreachableCache"}}


@pytest.mark.django_db
def test_an_annotator_judges_a_pair_while_the_cache_is_down(cache_down):
    from django.core.cache import cache

    with pytest.raises(ConnectionError):
        cache.get("anything")  # the outage is real for this test
    study = StudyFactory(min_listen_seconds=2.0)
    PairFactory(study=study)
    user = StudyAnnotatorFactory(study=study).annotator
    client = APIClient()
    client.force_login(user)

    assert client.get(reverse("home")).status_code == 200
    answer = client.post(reverse("api-assignment-next", args=[study.name]), format="json")
    assert answer.status_code == 200, answer.content
    assignment = Assignment.objects.get(pk=answer.json()["assignment"]["id"])
    listen(assignment, seconds=3.0)
    body = {"idempotency_key": uuid.uuid4().hex, "alignment": "A", "alignment_confidence": 3, "musicality": "B", "musicality_confidence": 4, "rationale": ""}
    stored = client.post(reverse("api-judgment-submit", kwargs={"assignment_id": assignment.pk}), body, format="json")
    assert stored.status_code == 201, stored.content
    assert Judgment.objects.filter(annotator=user).count() == 1
