"""Password guessing: sign-in is throttled per account and address together, per address, and per account from
new addresses, so a stranger's failures cannot lock the owner out; HTTP Basic is off unless configured."""

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
    settings.AUDITORIUM_LOGIN_ACCOUNT_ADDRESS_RATE = "10/900"
    settings.AUDITORIUM_LOGIN_IP_RATE = "50/900"
    settings.AUDITORIUM_LOGIN_ACCOUNT_RATE = "100/3600"
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


def test_a_strangers_failures_do_not_lock_the_owner_out_from_her_address(admin_user):
    stranger = Client(REMOTE_ADDR="198.51.100.66")
    for _ in range(15):
        sign_in(stranger, "admin", "guess")
    # The owner, from her own address, signs in although she never did from it before.
    owner = Client(REMOTE_ADDR="203.0.113.50")
    assert sign_in(owner, "admin", "admin-right-pw").status_code == 302 and "_auth_user_id" in owner.session
    # The stranger's address stays paused for the account, the right password too.
    response = sign_in(stranger, "ADMIN", "admin-right-pw")
    assert b"Too many failed sign-ins for this account from this network" in response.content
    assert "_auth_user_id" not in stranger.session


def test_the_admin_login_applies_the_same_limits(admin_user):
    guesser = Client(REMOTE_ADDR="198.51.100.67")
    for _ in range(10):
        sign_in(guesser, "admin", "guess", url="/admin/login/?next=/admin/")
    response = sign_in(guesser, "admin", "admin-right-pw", url="/admin/login/?next=/admin/")
    assert b"Too many failed sign-ins for this account from this network" in response.content and "_auth_user_id" not in guesser.session
    elsewhere = Client(REMOTE_ADDR="203.0.113.51")
    assert sign_in(elsewhere, "admin", "admin-right-pw", url="/admin/login/?next=/admin/").status_code == 302


def test_many_addresses_guessing_one_account_pause_it_only_for_addresses_it_has_not_signed_in_from(admin_user):
    home = Client(REMOTE_ADDR="203.0.113.60")
    assert sign_in(home, "admin", "admin-right-pw").status_code == 302
    for i in range(100):  # 10 addresses, 10 guesses each: each stays under the account + address limit
        sign_in(Client(REMOTE_ADDR=f"198.51.100.{i // 10 + 110}"), "admin", "guess")
    new = Client(REMOTE_ADDR="203.0.113.61")
    response = sign_in(new, "admin", "admin-right-pw")
    assert b"Too many failed sign-ins for this account from networks it has not signed in from lately" in response.content
    assert "_auth_user_id" not in new.session
    # The owner's address from her earlier sign-in is not paused.
    again = Client(REMOTE_ADDR="203.0.113.60")
    assert sign_in(again, "admin", "admin-right-pw").status_code == 302 and "_auth_user_id" in again.session


def test_ipv6_addresses_of_one_slash_64_count_as_one_network(admin_user):
    for i in range(10):
        sign_in(Client(REMOTE_ADDR=f"2001:db8:1:2::{i + 1:x}"), "admin", "guess")
    same_net = Client(REMOTE_ADDR="2001:db8:1:2:ffff::1")
    assert b"for this account from this network" in sign_in(same_net, "admin", "admin-right-pw").content
    next_net = Client(REMOTE_ADDR="2001:db8:1:3::1")
    assert sign_in(next_net, "admin", "admin-right-pw").status_code == 302


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


def test_spraying_from_a_shared_address_does_not_pause_accounts_that_signed_in_from_it(admin_user):
    UserFactory(username="newcomer", password="newcomer-pw")
    office = "198.51.100.98"
    assert sign_in(Client(REMOTE_ADDR=office), "admin", "admin-right-pw").status_code == 302
    for i in range(50):
        sign_in(Client(REMOTE_ADDR=office), f"user{i}", "guess")
    newcomer = Client(REMOTE_ADDR=office)
    assert b"Too many failed sign-ins for this network" in sign_in(newcomer, "newcomer", "newcomer-pw").content
    regular = Client(REMOTE_ADDR=office)
    assert sign_in(regular, "admin", "admin-right-pw").status_code == 302


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
