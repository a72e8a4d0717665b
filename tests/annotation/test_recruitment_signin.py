"""A recruitment link cannot be used to plant an account in a browser, or to borrow one.

GET only shows a page; joining is a POST with the CSRF token; a browser signed in as someone
else is asked, never switched; resuming needs the resume code from the first visit (the signed
cookie, or the code typed in), and a known id without it takes part under an account of its own;
participant ids are NFKC-normalised.
"""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse

from annotation import services
from annotation.crowd_models import ExternalParticipant
from tests.factories import PairFactory, StudyFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def link():
    study = StudyFactory(name="recruited")
    PairFactory(study=study)
    return services.recruitment_link_create(study=study, completion_code="C0MPL3TE", screenout_code="SCR33N", cap=5)


def _url(link, pid="5f0c0ffee", session="s1"):
    return f"{reverse('recruitment-enter', kwargs={'token': link.token})}?{urlencode({'PROLIFIC_PID': pid, 'STUDY_ID': 'st1', 'SESSION_ID': session})}"


def _signed_in(client) -> int | None:
    value = client.session.get("_auth_user_id")
    return None if value is None else int(value)


def _join(client, link, pid="5f0c0ffee", **data):
    url = _url(link, pid)
    assert client.get(url).status_code == 200
    return client.post(url, data)


def test_the_link_get_only_shows_a_page_and_changes_no_session(client, link):
    page = client.get(_url(link))
    assert page.status_code == 200 and b"Start the study" in page.content
    assert _signed_in(client) is None and ExternalParticipant.objects.count() == 0
    # An <img src> to the link in a researcher's browser: a page, the researcher stays signed in.
    researcher = UserFactory(username="res", roles=["researcher"])
    client.force_login(researcher)
    assert client.get(_url(link)).status_code == 200
    assert _signed_in(client) == researcher.pk and ExternalParticipant.objects.count() == 0
    assert client.get(reverse("study-manage-list")).status_code == 200


def test_joining_needs_the_csrf_token(link):
    browser = Client(enforce_csrf_checks=True)
    page = browser.get(_url(link))
    assert browser.post(_url(link), {}).status_code == 403  # a cross-site form post carries no token
    assert ExternalParticipant.objects.count() == 0 and _signed_in(browser) is None
    token = page.context["csrf_token"]
    joined = browser.post(_url(link), {"csrfmiddlewaretoken": str(token)})
    assert joined.status_code == 200 and ExternalParticipant.objects.count() == 1
    assert _signed_in(browser) == ExternalParticipant.objects.get().user_id


def test_a_browser_signed_in_as_someone_else_is_asked_never_switched(client, link):
    researcher = UserFactory(username="res", roles=["researcher"])
    client.force_login(researcher)
    page = client.get(_url(link))
    assert b"signed in as <strong>res</strong>" in page.content
    refused = client.post(_url(link), {})
    assert refused.status_code == 409 and _signed_in(client) == researcher.pk and ExternalParticipant.objects.count() == 0
    switched = client.post(_url(link), {"switch_account": "1"})
    assert switched.status_code == 200
    assert _signed_in(client) == ExternalParticipant.objects.get().user_id != researcher.pk


def test_a_bare_participant_id_never_opens_the_first_account_it_takes_part_apart(link):
    owner = Client()
    first = _join(owner, link)
    code = first.context["resume_code"]
    victim = ExternalParticipant.objects.get()
    thief = Client()
    page = thief.get(_url(link))
    assert page.status_code == 200 and b"resume code" in page.content and b"new-participant-button" in page.content
    assert _signed_in(thief) is None
    # No code: not a 403 for whoever comes second, and not the first account either, but an account of its own.
    claimed = thief.post(_url(link), {})
    assert claimed.status_code == 200 and claimed.context["duplicate_claim"] is True and b"duplicate-claim-note" in claimed.content
    duplicate = ExternalParticipant.objects.exclude(pk=victim.pk).get()
    assert duplicate.duplicate_claim and duplicate.participant_hash == victim.participant_hash
    assert _signed_in(thief) == duplicate.user_id != victim.user_id
    victim.refresh_from_db()
    assert victim.duplicate_claim is False
    # The real participant goes on with her own account: from her browser's cookie, or her code on a new device.
    del owner.cookies[settings.SESSION_COOKIE_NAME]
    assert _join(owner, link).status_code == 302 and _signed_in(owner) == victim.user_id
    phone = Client()
    assert _join(phone, link, resume_code=code).status_code == 302 and _signed_in(phone) == victim.user_id
    # The second claim's own code opens the second claim, never the first.
    other_code = claimed.context["resume_code"]
    laptop = Client()
    assert _join(laptop, link, resume_code=other_code).status_code == 302 and _signed_in(laptop) == duplicate.user_id
    assert ExternalParticipant.objects.count() == 2


def test_a_wrong_typed_or_forged_resume_code_opens_nothing(link):
    owner = Client()
    code = _join(owner, link).context["resume_code"]
    victim = ExternalParticipant.objects.get()
    thief = Client()
    wrong = thief.post(_url(link), {"resume_code": "ABCD-EFGH-JKMN"})
    assert wrong.status_code == 403 and b"resume code does not open" in wrong.content
    assert _signed_in(thief) is None and ExternalParticipant.objects.count() == 1
    # A forged resume cookie (not signed with the site's key) is no code at all: an account of its own, not hers.
    thief.cookies[f"auditorium_resume_{link.study_id}"] = code.replace("-", "")
    thief.post(_url(link), {})
    assert _signed_in(thief) not in (None, victim.user_id)
    assert ExternalParticipant.objects.get(user_id=_signed_in(thief)).duplicate_claim


def test_prolific_flow_fresh_returning_and_new_device(link):
    # Fresh: the link, Start, the resume code page, then consent.
    laptop = Client()
    first = _join(laptop, link)
    assert first.status_code == 200 and b"resume-code" in first.content
    assert first.context["next_url"].startswith(reverse("consent"))
    code = first.context["resume_code"]
    participant = ExternalParticipant.objects.get()
    # Returning on the same browser after the session ended: the signed cookie resumes it.
    del laptop.cookies[settings.SESSION_COOKIE_NAME]
    back = _join(laptop, link)
    assert back.status_code == 302 and _signed_in(laptop) == participant.user_id
    # Still signed in: the link itself carries on, without changing the session.
    assert laptop.get(_url(link)).status_code == 302
    # A new device: the code, typed in lower case with spaces, resumes the same account.
    phone = Client()
    resumed = _join(phone, link, resume_code=code.lower().replace("-", " "))
    assert resumed.status_code == 302 and _signed_in(phone) == participant.user_id
    assert ExternalParticipant.objects.count() == 1


def test_participant_ids_are_nfkc_normalised(link):
    first = _join(Client(), link, pid="ABC123")
    code = first.context["resume_code"]
    wide = Client()
    page = wide.get(_url(link, pid="ＡＢＣ１２３"))
    assert page.context["known"] is True  # the same participant, not a second account
    assert wide.post(_url(link, pid="ＡＢＣ１２３"), {"resume_code": code}).status_code == 302
    assert ExternalParticipant.objects.count() == 1


def test_the_participant_top_bar_shows_only_the_study_and_withdrawal(link):
    browser = Client()
    _join(browser, link)
    services.consent_give(user=ExternalParticipant.objects.get().user)
    page = browser.get(reverse("annotate", kwargs={"name": link.study.name})).content.decode()
    nav = page[page.index('<nav aria-label="Main">') : page.index("</nav>")]
    assert "participant-study" in nav and "Withdraw consent" in nav
    for away in ("Arena", "Leaderboard", "My studies", "Sign out"):
        assert away not in nav
