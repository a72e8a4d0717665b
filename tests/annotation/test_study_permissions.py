"""One rule for every change to a study: its owner, the collaborators the owner names, and admins; and a per-user
limit on trainings waiting or running."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from annotation.models import Study, StudyAnnotator
from scoring.models import Judge, TrainingRun
from tests.annotation.helpers import PARAMETERS
from tests.factories import AnnotatorFactory, JudgmentFactory, PairFactory, StudyFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def world():
    admin = UserFactory(username="perm-admin", roles=["admin"], is_staff=True, is_superuser=True)
    owner = UserFactory(username="perm-owner", roles=["researcher"])
    other = UserFactory(username="perm-other", roles=["researcher"])
    helper = UserFactory(username="perm-helper", roles=["researcher"])
    admins_study = StudyFactory(name="admins-study", owner=admin)
    owners_study = StudyFactory(name="owners-study", owner=owner)
    for study in (admins_study, owners_study):
        for _ in range(12):
            JudgmentFactory(pair=PairFactory(study=study))
    Judge.objects.get_or_create(key="signal-technical", defaults={"kind": Judge.Kind.SIGNAL})
    AnnotatorFactory(username="perm-annotator")
    return {"admin": admin, "owner": owner, "other": other, "helper": helper, "admins_study": admins_study, "owners_study": owners_study}


def as_user(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def writes(client: Client, study: Study) -> dict[str, int]:
    """Each write a researcher's pages offer, tried once: status codes by name."""
    edit = client.post(reverse("study-edit", args=[study.name]), {"name": study.name, **PARAMETERS, "title": "changed", "is_active": "on"})
    add = client.post(reverse("study-annotators-add", args=[study.name]), {"usernames": "perm-annotator"})
    train = client.post(reverse("scoring:reward-train"), {"study": study.name, "features": "signal-technical", "seed": "0", "split": "condition"})
    imported = client.get(reverse("pairs-import") + f"?study={study.name}")
    return {"edit": edit.status_code, "add annotators": add.status_code, "train": train.status_code, "import": imported.status_code}


def test_a_researcher_cannot_change_a_study_someone_else_owns(world):
    statuses = writes(as_user(world["other"]), world["admins_study"])
    assert statuses == {"edit": 403, "add annotators": 403, "train": 403, "import": 403}
    assert Study.objects.get(pk=world["admins_study"].pk).title != "changed"
    assert not StudyAnnotator.objects.filter(study=world["admins_study"], annotator__username="perm-annotator").exists()
    assert not TrainingRun.objects.exists()


def test_the_owner_names_collaborators_who_may_then_change_it(world):
    owner, helper, study = as_user(world["owner"]), as_user(world["helper"]), world["owners_study"]
    assert writes(helper, study)["edit"] == 403
    # A collaborator cannot name others; the owner can.
    assert helper.post(reverse("study-collaborators", args=[study.name]), {"usernames": "perm-helper"}).status_code == 403
    assert owner.post(reverse("study-collaborators", args=[study.name]), {"usernames": "perm-helper"}).status_code == 302
    assert list(study.collaborators.values_list("username", flat=True)) == ["perm-helper"]
    statuses = writes(helper, study)
    assert statuses["edit"] == 302 and statuses["add annotators"] == 302 and statuses["train"] == 302 and statuses["import"] == 200
    page = owner.get(reverse("study-manage", args=[study.name])).content.decode()
    assert 'id="collaborators">perm-helper<' in page
    # An annotator account is no collaborator.
    refused = owner.post(reverse("study-collaborators", args=[study.name]), {"usernames": "perm-annotator"}, follow=True)
    assert "is not a researcher; nothing was changed" in refused.content.decode()
    assert list(study.collaborators.values_list("username", flat=True)) == ["perm-helper"]


def test_admins_may_change_any_study(world):
    statuses = writes(as_user(world["admin"]), world["owners_study"])
    assert statuses["edit"] == 302 and statuses["add annotators"] == 302 and statuses["train"] == 302


def test_trainings_waiting_per_user_are_limited(world, settings):
    settings.AUDITORIUM_MAX_QUEUED_TRAININGS = 2
    client = as_user(world["owner"])
    statuses = [client.post(reverse("scoring:reward-train"), {"study": "owners-study", "features": "signal-technical", "seed": str(i), "split": "condition"}).status_code for i in range(6)]
    assert statuses == [302, 302, 429, 429, 429, 429]
    assert TrainingRun.objects.filter(created_by=world["owner"]).count() == 2
    last = client.post(reverse("scoring:reward-train"), {"study": "owners-study", "features": "signal-technical", "seed": "9", "split": "condition"})
    assert "the limit is 2" in last.content.decode()
    # Another user has a limit of their own; a finished run frees a place.
    assert as_user(world["admin"]).post(reverse("scoring:reward-train"), {"study": "owners-study", "features": "signal-technical", "seed": "0", "split": "condition"}).status_code == 302
    TrainingRun.objects.filter(created_by=world["owner"]).update(state=TrainingRun.State.DONE)
    assert client.post(reverse("scoring:reward-train"), {"study": "owners-study", "features": "signal-technical", "seed": "7", "split": "condition"}).status_code == 302
