"""Who owns a participant id on a recruitment link: signed links admit only ids the recruiting side signed; a known
id without its resume code takes part under an account of its own (a duplicate claim, shown to the researcher, never
merged into the first); wrong typed resume codes are throttled without letting a stranger lock the participant out."""

from __future__ import annotations

import copy
import hashlib
import hmac
import uuid
from urllib.parse import urlencode

import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse

from annotation import selectors, services
from annotation.crowd_models import ExternalParticipant
from annotation.crowd_selectors import recruitment_link_rows
from common.errors import ServiceError
from tests.factories import JudgmentFactory, PairFactory, StudyFactory, UserFactory

pytestmark = pytest.mark.django_db

SECRET = "k3y-for-this-link-only-0123456789"


@pytest.fixture
def link():
    owner = UserFactory(username="owner-c", roles=["researcher"])
    study = StudyFactory(name="claimed", owner=owner)
    PairFactory(study=study)
    return services.recruitment_link_create(study=study, completion_code="C0MPL3TE", cap=5)


def _url(link, pid="5f0c0ffee", **extra):
    return f"{reverse('recruitment-enter', kwargs={'token': link.token})}?{urlencode({'PROLIFIC_PID': pid, 'STUDY_ID': 'st1', 'SESSION_ID': 's1', **extra})}"


def _signed_in(client) -> int | None:
    value = client.session.get("_auth_user_id")
    return None if value is None else int(value)


# --- Signed links --------------------------------------------------------------------------------


def test_a_signed_link_admits_only_an_id_signed_with_its_secret(link):
    link.signing_secret = SECRET
    link.save()
    # The exact rule a researcher's redirect implements: hex HMAC-SHA256 of the id, keyed with the secret.
    sig = hmac.new(SECRET.encode(), b"5f0c0ffee", hashlib.sha256).hexdigest()
    assert services.participant_signature(secret=SECRET, participant_id="5f0c0ffee") == sig
    browser = Client()
    unsigned = browser.get(_url(link))
    assert unsigned.status_code == 403 and b"missing its signature (sig)" in unsigned.content
    for forged in (hmac.new(b"another-secret-0123456789", b"5f0c0ffee", hashlib.sha256).hexdigest(), services.participant_signature(secret=SECRET, participant_id="someone-else"), "zz"):
        response = browser.post(_url(link, sig=forged), {})
        assert response.status_code == 403 and b"signature does not match" in response.content
    assert ExternalParticipant.objects.count() == 0 and _signed_in(browser) is None
    assert browser.get(_url(link, sig=sig.upper())).status_code == 200  # hex in either case
    joined = browser.post(_url(link, sig=sig), {})
    assert joined.status_code == 200 and _signed_in(browser) == ExternalParticipant.objects.get().user_id


def test_an_unsigned_link_ignores_a_sig_parameter(link):
    assert Client().post(_url(link, sig="anything"), {}).status_code == 200
    assert ExternalParticipant.objects.count() == 1


def test_a_short_signing_secret_is_refused_by_the_service(link):
    with pytest.raises(ServiceError, match="16 to 128"):
        services.recruitment_link_create(study=link.study, completion_code="X1", signing_secret="short")


# --- Duplicate claims ----------------------------------------------------------------------------


def test_a_duplicate_claims_work_and_completion_stay_its_own_and_the_researcher_sees_it(link):
    first_browser = Client()
    first_browser.post(_url(link), {})
    first = ExternalParticipant.objects.get()
    second_browser = Client()
    second_browser.post(_url(link), {})
    second = ExternalParticipant.objects.exclude(pk=first.pk).get()
    assert second.duplicate_claim and not first.duplicate_claim
    # The second claim judges the only pair and gets the completion code: the first earns nothing by it.
    services.consent_give(user=second.user)
    JudgmentFactory(pair=link.study.pairs.get(), annotator=second.user)
    done = second_browser.get(reverse("recruitment-done", kwargs={"name": link.study.name}))
    assert done.status_code == 200 and b"C0MPL3TE" in done.content
    first.refresh_from_db()
    second.refresh_from_db()
    assert second.completed_at is not None and first.completed_at is None
    rows = {row["username"]: row for row in selectors.study_annotator_rows(study=link.study)}
    assert rows[second.user.username]["done"] == 1 and rows[first.user.username]["done"] == 0
    assert rows[second.user.username]["pseudonym"] != rows[first.user.username]["pseudonym"]
    # The researcher sees the claim on the link and in the annotator table.
    (row,) = recruitment_link_rows(study=link.study, base_url="http://testserver")
    assert (row["link"].used, row["link"].duplicates, row["link"].completed) == (2, 1, 1)
    researcher = Client()
    researcher.force_login(link.study.owner)
    page = researcher.get(reverse("study-manage", kwargs={"name": link.study.name})).content.decode()
    assert page.count(">duplicate claim</span>") == 1 and '<td class="num" data-label="Duplicate claims">1</td>' in page
    line = page[page.index(second.user.username) :]
    assert line.index(">duplicate claim</span>") < line.index("</td>")


def test_taking_part_as_new_is_a_choice_even_with_a_code_and_duplicates_count_against_the_cap(link):
    link.cap = 2
    link.save()
    Client().post(_url(link), {})
    chooser = Client()
    assert chooser.post(_url(link), {"resume_code": "ABCD-EFGH-JKMN", "as_new": "1"}).status_code == 200
    assert ExternalParticipant.objects.filter(duplicate_claim=True).count() == 1
    full = Client().post(_url(link), {})
    assert full.status_code == 410 and b"full" in full.content and ExternalParticipant.objects.count() == 2


def test_a_browser_signed_in_as_a_duplicate_claim_carries_on(link):
    Client().post(_url(link), {})
    second = Client()
    second.post(_url(link), {})
    assert second.get(_url(link)).status_code == 302
    assert ExternalParticipant.objects.count() == 2


# --- Wrong resume codes are throttled --------------------------------------------------------------


@pytest.fixture
def production_limits(settings):
    settings.AUDITORIUM_RESUME_PARTICIPANT_ADDRESS_RATE = "5/900"
    settings.AUDITORIUM_RESUME_IP_RATE = "20/900"
    settings.AUDITORIUM_RESUME_PARTICIPANT_RATE = "100/3600"
    caches = copy.deepcopy(settings.CACHES)
    caches["default"]["KEY_PREFIX"] = f"resume-test-{uuid.uuid4().hex}"
    settings.CACHES = caches
    return settings


def _participant(link, pid="5f0c0ffee"):
    browser = Client(REMOTE_ADDR="203.0.113.10")
    code = browser.post(_url(link, pid), {}).context["resume_code"]
    return browser, code


def test_a_strangers_wrong_codes_pause_his_address_not_the_participant(link, production_limits):
    owner, code = _participant(link)
    stranger = Client(REMOTE_ADDR="198.51.100.20")
    for _ in range(5):
        assert stranger.post(_url(link), {"resume_code": "ABCD-EFGH-JKMN"}).status_code == 403
    paused = stranger.post(_url(link), {"resume_code": code})  # the right code too, from his address
    assert paused.status_code == 429 and b"Too many wrong resume codes for this participant id from this network" in paused.content
    assert b"Resuming with a code is paused for" in paused.content and _signed_in(stranger) is None
    # The participant, on a new device at another address, types her code and goes on.
    phone = Client(REMOTE_ADDR="203.0.113.11")
    assert phone.post(_url(link), {"resume_code": code}).status_code == 302 and _signed_in(phone) is not None
    assert ExternalParticipant.objects.count() == 1


def test_one_address_guessing_many_participants_is_paused(link, production_limits):
    pids = [f"p{i}" for i in range(5)]
    codes = {pid: _participant(link, pid)[1] for pid in pids}
    guesser = Client(REMOTE_ADDR="198.51.100.21")
    for pid in pids:
        for _ in range(4):  # under the limit for each participant id
            assert guesser.post(_url(link, pid), {"resume_code": "WRNG-WRNG-WRNG"}).status_code == 403
    paused = guesser.post(_url(link, "p0"), {"resume_code": codes["p0"]})
    assert paused.status_code == 429 and b"Too many wrong resume codes for this network" in paused.content
    assert _signed_in(guesser) is None


def test_many_addresses_guessing_one_participant_pause_typed_codes_but_not_her_browser(link, production_limits):
    owner, code = _participant(link)
    for i in range(100):  # 25 addresses, 4 guesses each
        Client(REMOTE_ADDR=f"198.51.100.{i // 4 + 100}").post(_url(link), {"resume_code": "WRNG-WRNG-WRNG"})
    elsewhere = Client(REMOTE_ADDR="203.0.113.12")
    paused = elsewhere.post(_url(link), {"resume_code": code})
    assert paused.status_code == 429 and b"Too many wrong resume codes for this participant id." in paused.content
    # Her own browser's signed cookie is no guess: it still resumes her account.
    del owner.cookies[settings.SESSION_COOKIE_NAME]
    assert owner.post(_url(link), {}).status_code == 302
    assert ExternalParticipant.objects.count() == 1


def test_a_right_code_clears_the_address_count_for_that_participant(link, production_limits):
    _, code = _participant(link)
    phone = Client(REMOTE_ADDR="203.0.113.13")
    for _ in range(4):
        phone.post(_url(link), {"resume_code": "WRNG-WRNG-WRNG"})
    assert phone.post(_url(link), {"resume_code": code}).status_code == 302
    again = Client(REMOTE_ADDR="203.0.113.13")
    for _ in range(4):
        assert again.post(_url(link), {"resume_code": "WRNG-WRNG-WRNG"}).status_code == 403
    assert again.post(_url(link), {"resume_code": code}).status_code == 302
