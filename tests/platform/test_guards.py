"""One role guard for every app: a signed-in user who is not a researcher gets the same 403 page, with a sentence
saying who may; a researcher gets through; someone signed out is sent to sign in."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.factories import UserFactory

PAGES = ["scoring:judge-list", "study-manage-list", "benchmarks:benchmark-create"]


@pytest.mark.django_db
@pytest.mark.parametrize("page", PAGES)
def test_a_non_researcher_gets_the_shared_forbidden_page(client, page):
    client.force_login(UserFactory(roles=["annotator"]))
    response = client.get(reverse(page))
    assert response.status_code == 403
    assert [t.name for t in response.templates][0] == "annotation/forbidden.html"
    assert response.context["message"]


@pytest.mark.django_db
@pytest.mark.parametrize("page", PAGES)
def test_a_researcher_gets_through(client, page):
    client.force_login(UserFactory(roles=["researcher"]))
    assert client.get(reverse(page)).status_code == 200


@pytest.mark.django_db
@pytest.mark.parametrize("page", ["scoring:judge-list", "study-manage-list"])
def test_someone_signed_out_is_sent_to_sign_in(client, page):
    response = client.get(reverse(page))
    assert response.status_code == 302
    assert "/accounts/login/" in response["Location"]
