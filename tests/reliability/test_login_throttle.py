"""Password guessing: sign-in is throttled per account and per address; HTTP Basic is off unless configured."""

from __future__ import annotations

import base64
import copy
import uuid

import pytest
from django.test import Client

from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def production_limits(settings):
    settings.AUDITORIUM_LOGIN_ACCOUNT_RATE = "10/900"
    settings.AUDITORIUM_LOGIN_IP_RATE = "50/900"
    caches = copy.deepcopy(settings.CACHES)
    caches["default"]["KEY_PREFIX"] = f"login-test-{uuid.uuid4().hex}"
    settings.CACHES = caches
    return settings


@pytest.fixture
def admin_user():
    return UserFactory(username="admin", password="admin-right-pw", is_staff=True, is_superuser=True)


def sign_in(client: Client, username: str, password: str, url: str = "/accounts/login/"):
    return client.post(url, {"username": username, "password": password})


def test_sixty_wrong_passwords_then_the_right_one_is_refused_with_a_reason(admin_user):
    client = Client(REMOTE_ADDR="198.51.100.1")
    for _ in range(60):
        assert sign_in(client, "admin", "guess").status_code == 200
    response = sign_in(client, "admin", "admin-right-pw")
    assert response.status_code == 200 and "_auth_user_id" not in client.session
    assert b"Too many failed sign-ins for this account" in response.content


def test_the_account_lock_holds_from_another_address_and_on_the_admin_login(admin_user):
    for i in range(10):
        sign_in(Client(REMOTE_ADDR=f"198.51.100.{i + 2}"), "ADMIN", "guess")
    fresh = Client(REMOTE_ADDR="203.0.113.50")
    response = sign_in(fresh, "admin", "admin-right-pw", url="/admin/login/?next=/admin/")
    assert response.status_code == 200 and "_auth_user_id" not in fresh.session
    assert b"Too many failed sign-ins for this account" in response.content


def test_one_address_guessing_many_accounts_is_locked_out(admin_user):
    UserFactory(username="victim", password="victim-pw")
    client = Client(REMOTE_ADDR="198.51.100.99")
    for i in range(50):
        sign_in(client, f"user{i}", "guess")
    response = sign_in(client, "victim", "victim-pw")
    assert b"Too many failed sign-ins for this network" in response.content and "_auth_user_id" not in client.session
    # Another address is not affected.
    other = Client(REMOTE_ADDR="198.51.100.100")
    sign_in(other, "victim", "victim-pw")
    assert "_auth_user_id" in other.session


def test_behind_the_configured_proxy_each_client_address_counts_apart(admin_user, settings):
    settings.AUDITORIUM_BEHIND_PROXY = True
    UserFactory(username="victim", password="victim-pw")
    for i in range(50):
        sign_in(Client(REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="198.51.100.77"), f"user{i}", "guess")
    locked = Client(REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="198.51.100.77")
    assert b"for this network" in sign_in(locked, "victim", "victim-pw").content
    # Another client through the same proxy is not locked out; nor does a forged first entry help the guesser.
    other = Client(REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="203.0.113.9")
    sign_in(other, "victim", "victim-pw")
    assert "_auth_user_id" in other.session
    forged = Client(REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="10.9.9.9, 198.51.100.77")
    assert b"for this network" in sign_in(forged, "victim", "victim-pw").content


def test_a_few_mistakes_then_the_right_password_signs_in(admin_user):
    client = Client(REMOTE_ADDR="198.51.100.7")
    for _ in range(3):
        sign_in(client, "admin", "typo")
    assert sign_in(client, "admin", "admin-right-pw").status_code == 302
    assert "_auth_user_id" in client.session


def test_http_basic_authentication_is_not_accepted_by_default(admin_user):
    auth = "Basic " + base64.b64encode(b"admin:admin-right-pw").decode()
    response = Client().get("/api/scoring/judges/", HTTP_AUTHORIZATION=auth)
    assert response.status_code in (401, 403)
    assert response.json()["code"] == "not_authenticated"
