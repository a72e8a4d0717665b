"""The study cache read by every request of the listening page: one round trip, never a stale study."""

from __future__ import annotations

import pytest

from annotation import cached, services
from tests.factories import StudyFactory, UserFactory


@pytest.mark.django_db
def test_a_renamed_study_is_no_longer_found_under_its_old_name():
    study = StudyFactory(name="before")
    assert cached.study_by_name("before").pk == study.pk  # now cached under "before"
    study.name = "after"
    study.save()
    assert cached.study_by_name("before") is None
    assert cached.study_by_name("after").pk == study.pk


@pytest.mark.django_db
def test_a_changed_setting_is_seen_by_the_next_read():
    study = StudyFactory(name="settings", min_listen_seconds=5.0)
    assert cached.study_by_name("settings").min_listen_seconds == 5.0
    study.min_listen_seconds = 9.0
    study.save()
    assert cached.study_by_name("settings").min_listen_seconds == 9.0


@pytest.mark.django_db
def test_study_and_consent_in_one_read_follow_consent_given_and_withdrawn():
    study = StudyFactory(name="consent")
    user = UserFactory()
    assert cached.study_and_consent("consent", user.pk) == (study, False)
    services.consent_give(user=user)
    assert cached.study_and_consent("consent", user.pk) == (study, True)
    services.consent_withdraw(user=user)
    assert cached.study_and_consent("consent", user.pk) == (study, False)
    assert cached.study_and_consent("missing", user.pk) == (None, False)
