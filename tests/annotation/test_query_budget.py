"""Query budgets of the listening page's hot path, through the real endpoints: next pair <= 5, submit <= 5.

Counted per request with everything the request does (session, user, transaction
statements), in transactional tests so the service's own transaction is a real one
as in production, not a savepoint inside the test's.
"""

from __future__ import annotations

import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from rest_framework.test import APIClient

from annotation.models import Assignment, Judgment
from tests.factories import PairFactory, StudyAnnotatorFactory, StudyFactory
from tests.listening import listen

NEXT_BUDGET = 5
SUBMIT_BUDGET = 5
# The empty answer also counts the annotator's progress, to say why nothing is left (after asking whether
# the study is a rating study, which counts items instead); it comes once per study.
DRY_BUDGET = 11


@pytest.fixture
def annotating(transactional_db, django_assert_max_num_queries):
    study = StudyFactory(overlap_target=2, overlap_share=1.0, min_listen_seconds=2.0, gold_rate=0.2)
    for _ in range(6):
        PairFactory(study=study, overlap=2)
    user = StudyAnnotatorFactory(study=study).annotator
    client = APIClient()
    client.force_login(user)
    # The session's first pair reads what later requests find in the cache (user, study settings, consent,
    # the count of pairs still open to the annotator, and whether the study asks questions before the study: the
    # gate's one read that no row already loaded holds; every later next and submit finds it cached).
    with django_assert_max_num_queries(NEXT_BUDGET + 5):
        first = _next(client, study)
    listen(Assignment.objects.get(pk=first["id"]), seconds=3.0)
    assert _submit(client, first["id"], uuid.uuid4().hex).status_code == 201
    return study, user, client


def _next(client, study):
    response = client.post(reverse("api-assignment-next", kwargs={"name": study.name}))
    assert response.status_code == 200, response.content
    return response.json()["assignment"]


def _submit(client, assignment_id, key):
    body = {"idempotency_key": key, "alignment": "A", "alignment_confidence": 3, "musicality": "B", "musicality_confidence": 4, "rationale": ""}
    return client.post(reverse("api-judgment-submit", kwargs={"assignment_id": assignment_id}), body, format="json")


@pytest.mark.engine
def test_next_pair_stays_within_its_query_budget(annotating, django_assert_max_num_queries):
    study, user, client = annotating
    with django_assert_max_num_queries(NEXT_BUDGET):
        fresh = _next(client, study)
    assert fresh is not None and Assignment.objects.filter(pk=fresh["id"], state=Assignment.State.ACTIVE).exists()
    # The same locked pair comes back, within the same budget.
    with django_assert_max_num_queries(NEXT_BUDGET):
        again = _next(client, study)
    assert again["id"] == fresh["id"]


@pytest.mark.engine
def test_submit_stays_within_its_query_budget_and_still_checks_listening(annotating, django_assert_max_num_queries):
    study, user, client = annotating
    assignment = _next(client, study)
    refused = _submit(client, assignment["id"], uuid.uuid4().hex)
    assert refused.status_code == 400 and refused.json()["code"] == "listening_too_short"
    listen(Assignment.objects.get(pk=assignment["id"]), seconds=3.0)
    key = uuid.uuid4().hex
    with django_assert_max_num_queries(SUBMIT_BUDGET):
        response = _submit(client, assignment["id"], key)
    assert response.status_code == 201, response.content
    assert Judgment.objects.filter(assignment_id=assignment["id"]).count() == 1
    # A retry with the same key gets the first answer back and stores nothing new.
    with django_assert_max_num_queries(SUBMIT_BUDGET):
        replay = _submit(client, assignment["id"], key)
    assert replay.status_code == 200 and replay.json()["judgment"] == response.json()["judgment"]
    assert Judgment.objects.filter(assignment_id=assignment["id"]).count() == 1


@pytest.mark.engine
def test_a_full_cycle_of_next_and_submit_keeps_the_budget_until_the_study_runs_dry(annotating, django_assert_max_num_queries):
    study, user, client = annotating
    served = 0
    while True:
        with CaptureQueriesContext(connection) as queries:
            assignment = _next(client, study)
        if assignment is None:
            assert len(queries) <= DRY_BUDGET, [q["sql"] for q in queries]
            break
        assert len(queries) <= NEXT_BUDGET, [q["sql"] for q in queries]
        listen(Assignment.objects.get(pk=assignment["id"]), seconds=3.0)
        with django_assert_max_num_queries(SUBMIT_BUDGET):
            assert _submit(client, assignment["id"], uuid.uuid4().hex).status_code == 201
        served += 1
    assert served == 5  # the fixture judged the first of the six
