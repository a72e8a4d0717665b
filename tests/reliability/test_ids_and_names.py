"""Numbers past a 64-bit id and names that are no study: a 404 or the page, never a 500."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from tests.factories import PairFactory, StudyAnnotatorFactory, StudyFactory, UserFactory

pytestmark = pytest.mark.django_db

BIG = [2**63, 2**64, 10**19, 99999999999999999999]
VALID_JUDGMENT = {"idempotency_key": "k1", "alignment": "A", "alignment_confidence": "3.0", "musicality": "B", "musicality_confidence": "3.0"}


@pytest.fixture
def annotator_client():
    from annotation.services import consent_give

    study = StudyFactory(name="ids", min_listen_seconds=0.0)
    PairFactory(study=study)
    user = UserFactory(username="ids-annotator", roles=["annotator"])
    StudyAnnotatorFactory(study=study, annotator=user)
    consent_give(user=user)
    client = Client(raise_request_exception=False)
    client.force_login(user)
    return client


@pytest.mark.parametrize("number", BIG)
def test_assignment_endpoints_answer_404_to_ids_past_64_bits_with_a_valid_body(annotator_client, number):
    bodies = {"judgment": VALID_JUDGMENT, "listening": {"events": [{"seq": 1, "clip": "a", "kind": "play", "position": 0.0}]}, "skip": {"reason": "x"}}
    for action, body in bodies.items():
        response = annotator_client.post(f"/api/assignments/{number}/{action}/", json.dumps(body), content_type="application/json")
        assert response.status_code == 404, (action, response.status_code, response.content[:200])


@pytest.mark.parametrize("path", ["/api/scoring/runs/{}/", "/api/scoring/runs/{}/verdicts/", "/scoring/runs/{}/", "/scoring/training/{}/"])
def test_scoring_pages_answer_404_to_ids_past_64_bits(path):
    client = Client(raise_request_exception=False)
    client.force_login(UserFactory(username="ids-admin", is_staff=True, is_superuser=True))
    for number in BIG:
        assert client.get(path.format(number)).status_code == 404


@pytest.mark.parametrize("method", ["get", "post"])
@pytest.mark.parametrize("path", ["/manage/import/", "/admin/annotation/study/import-pairs/"])
def test_the_import_pages_take_a_study_name_that_is_no_url(path, method):
    client = Client(raise_request_exception=False)
    client.force_login(UserFactory(username="ids-root", is_staff=True, is_superuser=True))
    StudyFactory(name="real-study")
    url = f"{path}?study=a%20b"
    response = client.get(url) if method == "get" else client.post(url, {"study": "a b"})
    assert response.status_code in (200, 400), response.status_code
    assert "a b" not in response.content.decode() or path.startswith("/admin/")
    ok = client.get(f"{path}?study=real-study")
    assert ok.status_code == 200
