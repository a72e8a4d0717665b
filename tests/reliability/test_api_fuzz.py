"""Schemathesis over the served OpenAPI schema: no generated request may cause a 5xx."""

from __future__ import annotations

import base64

import pytest
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, given, settings

from tests.factories import PairFactory, StudyAnnotatorFactory, StudyFactory, UserFactory

schemathesis = pytest.importorskip("schemathesis")

EXAMPLES_PER_OPERATION = 25


@pytest.fixture
def keep_test_connection():
    """The raw WSGI app closes the database connection after each request; the test transaction needs it open
    (Django's own test client disconnects the same handlers)."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.mark.slow
@pytest.mark.django_db
def test_no_operation_answers_5xx_to_generated_input(keep_test_connection):
    study = StudyFactory(name="fuzz", min_listen_seconds=0.0)
    for _ in range(3):
        PairFactory(study=study)
    user = UserFactory(username="fuzzer", roles=["annotator", "researcher"])
    StudyAnnotatorFactory(study=study, annotator=user)
    from annotation.services import consent_give

    consent_give(user=user)
    auth = {"Authorization": "Basic " + base64.b64encode(b"fuzzer:pw").decode()}

    schema = schemathesis.openapi.from_wsgi("/api/schema/", get_wsgi_application())
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 15, [f"{o.method} {o.path}" for o in operations]
    failures: list[str] = []
    for operation in operations:

        @settings(max_examples=EXAMPLES_PER_OPERATION, deadline=None, database=None, suppress_health_check=list(HealthCheck))
        @given(case=operation.as_strategy())
        def check(case):
            response = case.call(headers=auth)
            if response.status_code >= 500:
                failures.append(f"{case.method} {case.formatted_path} -> {response.status_code}: {case.body!r:.200}")

        check()
    assert not failures, "\n".join(failures[:10])
