"""Who owns a participant id on a recruitment link: signed links admit only ids the recruiting side signed; a known
id without its resume code takes part under an account of its own (a duplicate claim, shown to the researcher, never
merged into the first); wrong typed resume codes are throttled without letting a stranger lock the participant out."""

from __future__ import annotations

import copy
import hashlib
import hmac
import json
import re
import uuid
from urllib.parse import urlencode

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
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


# --- The start form sent twice ---------------------------------------------------------------------


def _entry_key(page) -> str:
    match = re.search(r'name="entry_key" value="([^"]+)"', page.content.decode())
    assert match, "the start form carries an entry key"
    return match.group(1)


def _shown_code(response) -> str:
    match = re.search(r"[A-Z0-9]{4}-[A-Z0-9]{4}-[A-Z0-9]{4}", response.content.decode())
    assert match, response.content.decode()[:400]
    return match.group(0)


def test_the_start_form_sent_twice_makes_one_claim_and_shows_the_same_code(link):
    key = _entry_key(Client().get(_url(link)))
    # A double click: the browser drops the first answer (and its cookie) and shows the second.
    first, second = Client(), Client()
    one = first.post(_url(link), {"entry_key": key})
    two = second.post(_url(link), {"entry_key": key})
    assert one.status_code == two.status_code == 200
    claim = ExternalParticipant.objects.get()
    assert not claim.duplicate_claim and claim.entry_hash and key not in claim.entry_hash
    assert _shown_code(one) == _shown_code(two)
    assert _signed_in(first) == _signed_in(second) == claim.user_id
    # The code shown twice is the claim's real resume code: a new device resumes with it.
    other = Client()
    assert other.post(_url(link), {"resume_code": _shown_code(two)}).status_code == 302
    assert _signed_in(other) == claim.user_id and ExternalParticipant.objects.count() == 1
    # The same form sent with "take part as new" is still that one visit.
    assert Client().post(_url(link), {"entry_key": key, "as_new": "1"}).status_code == 200
    assert ExternalParticipant.objects.count() == 1


def test_an_entry_key_is_bound_to_its_link_and_participant_id_and_cannot_be_forged(link):
    key = _entry_key(Client().get(_url(link, pid="alpha")))
    Client().post(_url(link, pid="alpha"), {"entry_key": key})
    alpha = ExternalParticipant.objects.get()
    # Another participant id with alpha's key: its own first claim, not alpha's account.
    beta = Client()
    beta.post(_url(link, pid="beta"), {"entry_key": key})
    assert ExternalParticipant.objects.count() == 2 and _signed_in(beta) != alpha.user_id
    # A tampered key is no key: the known id without a code becomes a duplicate claim, as with no key at all.
    for forged in (key[:-2] + ("AA" if not key.endswith("AA") else "BB"), "x" * 5000, ""):
        visitor = Client()
        assert visitor.post(_url(link, pid="alpha"), {"entry_key": forged}).status_code == 200
        assert _signed_in(visitor) != alpha.user_id
    assert ExternalParticipant.objects.filter(duplicate_claim=True).count() == 3
    # The key of another link of the same study does not open alpha's claim there either.
    other_link = services.recruitment_link_create(study=link.study, completion_code="OTHER1", cap=5)
    visitor = Client()
    visitor.post(_url(other_link, pid="alpha"), {"entry_key": key})
    assert _signed_in(visitor) != alpha.user_id and ExternalParticipant.objects.filter(duplicate_claim=True).count() == 4


def test_a_start_form_older_than_its_age_is_a_new_visit(link, monkeypatch):
    import time

    key = _entry_key(Client().get(_url(link)))
    Client().post(_url(link), {"entry_key": key})
    later = time.time() + services.recruitment.ENTRY_MAX_AGE.total_seconds() + 60
    monkeypatch.setattr("django.core.signing.time.time", lambda: later)
    Client().post(_url(link), {"entry_key": key})
    assert ExternalParticipant.objects.filter(duplicate_claim=True).count() == 1


def test_a_duplicate_claims_votes_are_flagged_in_the_export(link, tmp_path):
    from annotation.dataset.exporter import dataset_export

    Client().post(_url(link), {})
    Client().post(_url(link), {})
    first, second = ExternalParticipant.objects.order_by("pk")
    pair = link.study.pairs.get()
    for claim in (first, second):
        services.consent_give(user=claim.user)
        JudgmentFactory(pair=pair, annotator=claim.user)
    dataset_export(out_dir=tmp_path / "out", studies=[link.study])
    rows = [json.loads(line) for split in ("train", "test") for line in (tmp_path / "out" / f"{split}.jsonl").read_text().splitlines()]
    assert sorted(r["duplicate_claim"] for r in rows) == [False, True]
    flagged = next(r for r in rows if r["duplicate_claim"])
    assert flagged["user id"] == second.user.annotator_profile.pseudonym
    sheet = (tmp_path / "out" / "README.md").read_text()
    assert "`duplicate_claim`" in sheet and "votes from duplicate claims of a recruitment participant id (`duplicate_claim`): 1." in sheet


@pytest.mark.engine
@pytest.mark.django_db(transaction=True)
def test_the_same_start_form_sent_at_once_from_two_threads_makes_one_claim():
    import threading

    from django.db import connection

    owner = UserFactory(username="owner-t", roles=["researcher"])
    study = StudyFactory(name="claimed-threads", owner=owner)
    PairFactory(study=study)
    link = services.recruitment_link_create(study=study, completion_code="C0MPL3TE", cap=5)
    link_for, cleaned = services.recruitment_link_for(token=link.token, params={"PROLIFIC_PID": "twice"})
    key = services.recruitment_entry_key(link=link_for, participant_id=cleaned["participant"])
    start = threading.Barrier(4, timeout=60)
    results, errors = [], []

    def enter():
        try:
            start.wait()
            participant, code = services.recruitment_enter(token=link.token, params={"PROLIFIC_PID": "twice"}, entry_key=key)
            results.append((participant.pk, code))
        except ServiceError as exc:
            errors.append(exc.code)
        finally:
            connection.close()

    threads = [threading.Thread(target=enter) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    # Every request got the one claim and its one code, and no account was left behind by a request that lost.
    assert errors == [] and len(results) == 4 and len(set(results)) == 1
    assert ExternalParticipant.objects.filter(study=study).count() == 1
    assert get_user_model().objects.filter(username__startswith="ext-").count() == 1
