"""The admin cannot delete a rating item once it has been rated: the delete would cascade to the ratings."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from annotation.ratings.models import RatingItem, RatingSubmission
from tests.factories import UserFactory
from tests.ratings_helpers import member, rating_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client():
    client = Client()
    client.force_login(UserFactory(username="root", is_staff=True, is_superuser=True))
    return client


def test_a_rated_item_cannot_be_deleted_and_an_unrated_one_can(admin_client):
    study = rating_study(items=2)
    rated, unrated = RatingItem.objects.filter(study=study).order_by("id")
    RatingSubmission.objects.create(annotator=member(study), item=rated)
    url = lambda item: reverse("admin:ratings_ratingitem_delete", args=[item.pk])  # noqa: E731
    assert admin_client.get(url(rated)).status_code == 403
    assert admin_client.post(url(rated), {"post": "yes"}).status_code == 403
    assert RatingItem.objects.filter(pk=rated.pk).exists() and RatingSubmission.objects.filter(item=rated).count() == 1
    assert admin_client.get(url(unrated)).status_code == 200
    assert admin_client.post(url(unrated), {"post": "yes"}).status_code == 302
    assert not RatingItem.objects.filter(pk=unrated.pk).exists()


def test_the_change_list_offers_no_bulk_delete(admin_client):
    rating_study(items=1)
    page = admin_client.get(reverse("admin:ratings_ratingitem_changelist")).content.decode()
    assert "delete_selected" not in page
