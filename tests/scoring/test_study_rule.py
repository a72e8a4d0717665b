"""The study rule (owner, the collaborators the owner names, admins) on scoring's writes: launching a scoring run on a
study's pairs (API and page) and excluding or including one of its annotators (report page and API)."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from annotation.models import AnnotatorProfile
from scoring.models import Judge, ScoringRun
from tests.factories import AnnotatorFactory, JudgmentFactory, PairFactory, StudyFactory, UserFactory

pytestmark = pytest.mark.django_db

RUNS = "/api/scoring/runs/"


@pytest.fixture
def world():
    admin = UserFactory(username="rule-admin", roles=["admin"], is_staff=True, is_superuser=True)
    owner = UserFactory(username="rule-owner", roles=["researcher"])
    other = UserFactory(username="rule-other", roles=["researcher"])
    helper = UserFactory(username="rule-helper", roles=["researcher"])
    study = StudyFactory(name="rule-study", owner=owner)
    study.collaborators.add(helper)
    elsewhere = StudyFactory(name="rule-elsewhere", owner=other)
    voter = AnnotatorFactory(username="rule-voter")
    pairs = [PairFactory(study=study) for _ in range(3)]
    for pair in pairs:
        JudgmentFactory(pair=pair, annotator=voter)
    Judge.objects.get_or_create(key="signal-rule", defaults={"kind": Judge.Kind.SIGNAL})
    return {
        "admin": admin,
        "owner": owner,
        "other": other,
        "helper": helper,
        "study": study,
        "elsewhere": elsewhere,
        "pairs": pairs,
        "voter": AnnotatorProfile.objects.get(user=voter),
    }


def as_user(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_a_researcher_who_may_not_change_the_study_cannot_launch_a_scoring_run_on_it(world, django_capture_on_commit_callbacks):
    client = as_user(world["other"])
    bodies = [
        {"judge": "signal-rule", "study": "rule-study"},
        {"judge": "signal-rule", "pair_ids": [world["pairs"][0].pk]},
        # one pair of a study the user may change does not open the others
        {"judge": "signal-rule", "pair_ids": [p.pk for p in world["pairs"]]},
    ]
    with django_capture_on_commit_callbacks() as queued:
        for body in bodies:
            response = client.post(RUNS, body, content_type="application/json")
            assert response.status_code == 403, response.content
            detail = response.json()["detail"]
            assert "You may not launch a scoring run on study rule-study" in detail
            assert "rule-owner" in detail and "collaborator" in detail
        page = client.post(reverse("scoring:run-list"), {"judge": "signal-rule", "study": "rule-study"})
        assert page.status_code == 403
        assert "You may not launch a scoring run on study rule-study" in page.content.decode()
    assert queued == []
    assert not ScoringRun.objects.exists()


def test_the_owner_the_named_collaborators_and_admins_may_launch_runs(world, django_capture_on_commit_callbacks):
    for who in ("owner", "helper", "admin"):
        with django_capture_on_commit_callbacks() as queued:
            response = as_user(world[who]).post(RUNS, {"judge": "signal-rule", "study": "rule-study"}, content_type="application/json")
        assert response.status_code == 201, (who, response.content)
        assert len(queued) == 1
    with django_capture_on_commit_callbacks():
        page = as_user(world["helper"]).post(reverse("scoring:run-list"), {"judge": "signal-rule", "study": "rule-study"})
    assert page.status_code == 302
    assert ScoringRun.objects.filter(study=world["study"]).count() == 4


def exclusion_urls(study_name: str, pseudonym: str) -> tuple[str, str]:
    kwargs = {"name": study_name, "pseudonym": pseudonym}
    return reverse("api-annotator-exclusion", kwargs=kwargs), reverse("scoring:study-report-exclusion", kwargs=kwargs)


def test_only_those_who_may_change_the_study_exclude_its_annotators(world):
    profile = world["voter"]
    api, page = exclusion_urls("rule-study", profile.pseudonym)
    other = as_user(world["other"])
    refused = other.post(api, {"action": "exclude", "reason": "random clicks"}, content_type="application/json")
    assert refused.status_code == 403
    assert "Only the owner of study rule-study (rule-owner)" in refused.json()["detail"]
    refused_page = other.post(page, {"action": "exclude", "reason": "random clicks"})
    assert refused_page.status_code == 403
    assert "rule-owner" in refused_page.content.decode()
    profile.refresh_from_db()
    assert profile.excluded_at is None and profile.excluded_reason == ""

    helper = as_user(world["helper"])
    done = helper.post(api, {"action": "exclude", "reason": "random clicks"}, content_type="application/json")
    assert done.status_code == 200, done.content
    assert done.json()["excluded"] is True
    back = as_user(world["owner"]).post(page, {"action": "include", "reason": "checked"})
    assert back.status_code == 302
    profile.refresh_from_db()
    assert profile.excluded_at is None


def test_an_exclusion_reaching_a_study_the_user_may_not_change_is_refused(world):
    """An exclusion applies to every study the annotator voted in; one of them owned by someone else stops it."""
    profile = world["voter"]
    JudgmentFactory(pair=PairFactory(study=world["elsewhere"]), annotator=profile.user)
    api, _ = exclusion_urls("rule-study", profile.pseudonym)
    refused = as_user(world["owner"]).post(api, {"action": "exclude", "reason": "random clicks"}, content_type="application/json")
    assert refused.status_code == 403
    assert "also voted in study rule-elsewhere" in refused.json()["detail"]
    profile.refresh_from_db()
    assert profile.excluded_at is None
    assert as_user(world["admin"]).post(api, {"action": "exclude", "reason": "random clicks"}, content_type="application/json").status_code == 200


def test_an_annotator_who_did_not_vote_in_the_study_is_not_excluded_from_it(world):
    outsider = AnnotatorFactory(username="rule-outsider")
    api, _ = exclusion_urls("rule-study", f"p-{outsider.username}")
    response = as_user(world["owner"]).post(api, {"action": "exclude", "reason": "x"}, content_type="application/json")
    assert response.status_code == 404
    assert "has not voted in study rule-study" in response.json()["detail"]
