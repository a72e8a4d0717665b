"""Study services: creating a study and changing its parameters, with the model's rules and nothing half-saved."""

from __future__ import annotations

import pytest
from django.test import TestCase
from django.urls import reverse

from annotation import services
from annotation.models import Study
from common.errors import ServiceError
from tests.factories import StudyFactory, UserFactory
from tests.annotation.helpers import PARAMETERS

pytestmark = pytest.mark.django_db


def stored(study: Study) -> dict:
    study.refresh_from_db()
    return {key: getattr(study, key) for key in ("name", *services.STUDY_PARAMETERS)}


def test_create_stores_every_parameter_and_lowercases_the_name():
    study = services.study_create(name="  Vocals-2026 ", **PARAMETERS)
    assert stored(study) == {"name": "vocals-2026", **PARAMETERS}


def test_create_fills_the_model_defaults_for_what_is_not_given():
    study = services.study_create(name="bare")
    assert (study.overlap_target, study.lock_ttl_seconds, study.licence, study.is_active) == (3, 1800, "CC BY-NC-SA 4.0", True)


def test_create_converts_strings_the_way_a_form_would_send_them():
    study = services.study_create(name="typed", overlap_target="5", min_listen_seconds="2.5")
    study.refresh_from_db()
    assert (study.overlap_target, study.min_listen_seconds) == (5, 2.5)


def test_arguments_are_keyword_only():
    with pytest.raises(TypeError):
        services.study_create("positional")
    study = StudyFactory()
    with pytest.raises(TypeError):
        services.study_update(study, title="x")


@pytest.mark.parametrize(
    ("name", "parameters", "field", "message"),
    [
        ("share", {"overlap_share": 1.5}, "overlap_share", "less than or equal to 1"),
        ("ttl", {"lock_ttl_seconds": 5}, "lock_ttl_seconds", "greater than or equal to 10"),
        ("overlap", {"overlap_target": 0}, "overlap_target", "greater than or equal to 1"),
        ("listen", {"min_listen_seconds": -1}, "min_listen_seconds", "greater than or equal to 0"),
        ("licence", {"licence": ""}, "licence", "cannot be blank"),
        ("has spaces!", {}, "name", "letters, numbers, underscores or hyphens"),
        ("", {}, "name", "cannot be blank"),
        ("words", {"overlap_target": "many"}, "overlap_target", "must be an integer"),
        ("order", {"selection": "greedy"}, "selection", "not a valid choice"),
        ("cap", {"active_share": 1.2}, "active_share", "less than or equal to 1"),
    ],
)
def test_create_refuses_invalid_values_and_creates_nothing(name, parameters, field, message):
    with pytest.raises(ServiceError) as exc:
        services.study_create(name=name, **parameters)
    assert exc.value.code == "invalid"
    assert field in exc.value.extra["errors"]
    assert message in " ".join(exc.value.extra["errors"][field])
    assert "Nothing was saved" in exc.value.message
    assert not Study.objects.exists()


def test_create_refuses_a_taken_name_in_any_case():
    StudyFactory(name="taken", title="First")
    with pytest.raises(ServiceError) as exc:
        services.study_create(name="Taken", title="Second")
    assert exc.value.code == "duplicate_name"
    assert "already exists" in exc.value.extra["errors"]["name"][0]
    assert list(Study.objects.values_list("name", "title")) == [("taken", "First")]


def test_create_refuses_unknown_parameters_and_creates_nothing():
    with pytest.raises(ServiceError) as exc:
        services.study_create(name="typo", overlap_targte=3)
    assert exc.value.code == "unknown_parameter"
    assert "overlap_targte" in exc.value.message
    assert not Study.objects.exists()


def test_update_changes_only_the_given_parameters():
    study = StudyFactory(name="upd", title="Before", min_listen_seconds=10, gold_rate=0.2)
    returned = services.study_update(study=study, title="After", min_listen_seconds=3)
    assert (returned.title, returned.min_listen_seconds) == ("After", 3)
    after = stored(study)
    assert (after["title"], after["min_listen_seconds"], after["gold_rate"]) == ("After", 3, 0.2)


def test_update_with_one_bad_value_changes_nothing():
    study = StudyFactory(name="keep", title="Kept", min_listen_seconds=10)
    before = stored(study)
    with pytest.raises(ServiceError) as exc:
        services.study_update(study=study, title="Changed", min_listen_seconds=4, gold_rate=2)
    assert exc.value.code == "invalid"
    assert list(exc.value.extra["errors"]) == ["gold_rate"]
    assert stored(study) == before


def test_update_cannot_rename_a_study():
    study = StudyFactory(name="fixed")
    before = stored(study)
    with pytest.raises(ServiceError) as exc:
        services.study_update(study=study, name="renamed", title="New title")
    assert exc.value.code == "name_fixed"
    assert stored(study) == before
    assert not Study.objects.filter(name="renamed").exists()


def test_update_refuses_unknown_parameters_and_changes_nothing():
    study = StudyFactory(name="strict", title="Strict")
    before = stored(study)
    with pytest.raises(ServiceError) as exc:
        services.study_update(study=study, title="Loose", created_at=None)
    assert exc.value.code == "unknown_parameter"
    assert stored(study) == before


def test_update_reads_the_stored_row_not_the_callers_copy():
    study = StudyFactory(name="fresh", title="Stored", gold_rate=0.0)
    stale = Study.objects.get(pk=study.pk)
    stale.title = "edited in memory only"
    services.study_update(study=stale, gold_rate=0.5)
    assert (stored(study)["title"], stored(study)["gold_rate"]) == ("Stored", 0.5)


class StudyPagesUseTheServicesTests(TestCase):
    """The researcher pages show the services' refusals on the form and store nothing."""

    @classmethod
    def setUpTestData(cls):
        cls.researcher = UserFactory(username="pages", roles=["researcher"])

    def setUp(self):
        self.client.force_login(self.researcher)

    def form(self, **overrides) -> dict:
        data = {"name": "page-study", **PARAMETERS, "is_active": "on", **overrides}
        return {key: value for key, value in data.items() if value is not None}

    def test_name_taken_in_another_case_is_shown_beside_the_name(self):
        StudyFactory(name="page-study", title="Original")
        response = self.client.post(reverse("study-create"), self.form(name="Page-Study"))
        self.assertEqual(response.status_code, 200)
        self.assertContains(response, "A study with this name already exists")
        self.assertContains(response, "nothing was saved")
        self.assertEqual(list(Study.objects.values_list("name", "title")), [("page-study", "Original")])

    def test_created_name_is_lower_case(self):
        response = self.client.post(reverse("study-create"), self.form(name="Mixed-Case"))
        self.assertRedirects(response, reverse("study-manage", args=["mixed-case"]), fetch_redirect_response=False)
        self.assertTrue(Study.objects.filter(name="mixed-case").exists())

    def test_bad_edit_changes_nothing(self):
        study = StudyFactory(name="page-edit", title="Kept", gold_rate=0.0, owner=self.researcher)
        response = self.client.post(reverse("study-edit", args=["page-edit"]), self.form(title="Lost", gold_rate=3))
        self.assertEqual(response.status_code, 200)
        self.assertContains(response, "nothing was saved")
        study.refresh_from_db()
        self.assertEqual((study.title, study.gold_rate), ("Kept", 0.0))


def test_a_pass_mark_above_the_trials_is_refused():
    with pytest.raises(ServiceError):
        services.study_create(name="strict", screening="huggins", screening_trials=4, screening_pass=5)
    assert not Study.objects.filter(name="strict").exists()
