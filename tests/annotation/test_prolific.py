"""Prolific through its API, against a local fake that follows the documented endpoints: approving, rejecting and
paying bonuses singly and by rule; a lost pay answer mid-bulk never pays twice; the token stays out of pages,
log lines, the call log and exports."""

from __future__ import annotations

import io
import logging
import re
import threading
import time
import zipfile
from datetime import timedelta

import pytest
from django.db import connection
from django.urls import reverse

from annotation.prolific_models import BonusState, ProlificBonus, ProlificCall, ProlificCredential, ProlificSubmission, WorkState
from annotation.services import prolific as prolific_service
from tests.factories import UserFactory

from .fake_prolific import FakeProlific
from .prolific_helpers import PIDS, TOKEN, crowd_study

pytestmark = [pytest.mark.engine, pytest.mark.django_db]

REASON_MESSAGE = "Your answers on the check pairs were wrong far more often than chance allows, so the instructions were not followed; sorry."


@pytest.fixture
def fake(settings):
    with FakeProlific(token=TOKEN, late_s=0.6) as server:
        settings.PROLIFIC_API_BASE = server.base_url
        settings.PROLIFIC_TIMEOUT_S = 0.3
        settings.PROLIFIC_RETRIES = 2
        settings.PROLIFIC_BACKOFF_S = 0.0
        settings.PROLIFIC_BONUS_CHUNK = 2
        settings.PROLIFIC_PAY_RECHECK_S = 0
        yield server


@pytest.fixture
def crowd(fake):
    return crowd_study(fake, name="paid")


def _url(name, study, **kw):
    return reverse(name, kwargs={"name": study.name, **kw})


def _tied(client, crowd):
    study = crowd["study"]
    client.force_login(crowd["owner"])
    assert client.post(_url("study-prolific-token", study), {"token": TOKEN}).status_code == 302
    response = client.post(_url("study-prolific-tie", study), {"link_id": crowd["link"].pk, "prolific_study_id": crowd["study_id"]})
    assert response.status_code == 302
    tie = crowd["link"].prolific
    assert client.post(_url("study-prolific-fetch", study, tie_id=tie.pk)).status_code == 302
    return tie


def test_fetch_matches_by_participant_id_and_rules_approve_and_reject_in_bulk(client, crowd, fake, django_capture_on_commit_callbacks):
    tie = _tied(client, crowd)
    study = crowd["study"]
    rows = {s.submission_id: s for s in ProlificSubmission.objects.filter(tie=tie)}
    assert len(rows) == 6
    for pid, participant in crowd["people"].items():
        assert rows[crowd["subs"][pid]].participant == participant
    assert rows[crowd["subs"]["unknown-on-our-side-00001"]].participant is None
    # Approve: completed, passed the screen, gold >= 0.75 -> p1 and p2 (p3's gold is 0.5).
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(_url("study-prolific-decide", study, tie_id=tie.pk), {"action": "APPROVE", "completed": "on", "screen_passed": "on", "gold_min": "0.75"}, follow=True)
    assert "2 decision(s) queued" in response.content.decode()
    approved = {pid for pid in PIDS if fake.submissions[crowd["subs"][pid]]["status"] == "APPROVED"}
    assert approved == {PIDS[0], PIDS[1]}
    # Reject below 0.6 gold: a short message is refused (nothing sent), a long one rejects p3 and p4 with the category.
    before = len(fake.calls)
    short = client.post(_url("study-prolific-decide", study, tie_id=tie.pk), {"action": "REJECT", "gold_below": "0.6", "rejection_category": "FAILED_CHECK", "message": "bad"})
    assert short.status_code == 400 and "at least 100 characters" in short.content.decode() and len(fake.calls) == before
    no_category = client.post(_url("study-prolific-decide", study, tie_id=tie.pk), {"action": "REJECT", "gold_below": "0.6", "message": REASON_MESSAGE})
    assert no_category.status_code == 400 and "rejection categories" in no_category.content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        client.post(_url("study-prolific-decide", study, tie_id=tie.pk), {"action": "REJECT", "gold_below": "0.6", "rejection_category": "FAILED_CHECK", "message": REASON_MESSAGE})
    rejected = {pid for pid in PIDS if fake.submissions[crowd["subs"][pid]]["status"] == "REJECTED"}
    assert rejected == {PIDS[2], PIDS[3]}
    bodies = [c["body"] for c in fake.calls if c["path"].endswith("/transition/") and c["body"]["action"] == "REJECT"]
    assert all(b["rejection_category"] == "FAILED_CHECK" and b["message"] == REASON_MESSAGE for b in bodies) and len(bodies) == 2
    # Already decided submissions are skipped, not sent again.
    with django_capture_on_commit_callbacks(execute=True):
        again = client.post(_url("study-prolific-decide", study, tie_id=tie.pk), {"action": "APPROVE"}, follow=True)
    assert "1 decision(s) queued" in again.content.decode()  # only p5 is still awaiting review
    assert fake.submissions[crowd["subs"][PIDS[4]]]["status"] == "APPROVED"
    # Each call is logged with its answer and key; no call log row carries a participant id.
    logged = ProlificCall.objects.filter(study=study)
    assert logged.filter(endpoint__endswith="/transition/", status_code=200).count() == 5
    assert all(pid not in c.answer + c.endpoint for c in logged for pid in PIDS)
    assert all(c.idempotency_key for c in logged.filter(method="POST"))


def test_a_single_rejection_that_prolific_refuses_shows_its_reason(client, crowd, fake, django_capture_on_commit_callbacks):
    tie = _tied(client, crowd)
    sub = ProlificSubmission.objects.get(tie=tie, submission_id=crowd["subs"][PIDS[0]])
    fake.submissions[sub.submission_id]["status"] = "RETURNED"  # no longer reviewable at Prolific
    ProlificSubmission.objects.filter(pk=sub.pk).update(status="AWAITING REVIEW")  # our copy is stale
    with django_capture_on_commit_callbacks(execute=True):
        client.post(_url("study-prolific-decide", crowd["study"], tie_id=tie.pk), {"action": "REJECT", "submission": sub.pk, "rejection_category": "LOW_EFFORT", "message": REASON_MESSAGE})
    sub.refresh_from_db()
    assert sub.decision_state == WorkState.FAILED and "Cannot transition" in sub.error
    page = client.get(_url("study-prolific", crowd["study"])).content.decode()
    assert "Cannot transition" in page


@pytest.mark.parametrize("fault", ["timeout_after", "timeout_before"])
def test_a_lost_answer_mid_bulk_bonus_pays_each_participant_exactly_once(client, crowd, fake, fault, settings, django_capture_on_commit_callbacks):
    tie = _tied(client, crowd)
    # The second bulk's pay (of three: chunks of 2 over 5 participants) gets no answer in time; it acted or it did not.
    pays = []
    fake.faults.append((lambda method, path: path.endswith("/pay/") and (pays.append(path) or len(pays) == 2), fault))
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(_url("study-prolific-bonus", crowd["study"], tie_id=tie.pk), {"amount": "0.75", "reason": "thanks"}, follow=True)
    assert "5 bonus(es) queued" in response.content.decode()
    states = list(ProlificBonus.objects.filter(tie=tie).values_list("state", flat=True))
    assert states.count(BonusState.PAID) == 3 and states.count(BonusState.SENT) == 2
    assert len(fake.ledger) == (5 if fault == "timeout_after" else 3)
    sent = ProlificBonus.objects.filter(tie=tie, state=BonusState.SENT)
    key, bulk = sent[0].idempotency_key, sent[0].bulk_id
    # Retried (the page's "send again", or the task redelivered): Prolific's state is read first. Not before two
    # timeouts have passed since the lost pay: until then it may still be waiting for its answer.
    time.sleep(2 * settings.PROLIFIC_TIMEOUT_S)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(_url("study-prolific-queue", crowd["study"], tie_id=tie.pk))
    assert set(ProlificBonus.objects.filter(tie=tie).values_list("state", flat=True)) == {BonusState.PAID}
    for pid in PIDS:
        assert fake.paid(pid) == [75], pid
    pay_calls = [c for c in fake.calls if c["path"].endswith(f"/bulk-bonus-payments/{bulk}/pay/")]
    # Re-sent only when Prolific showed no payment, and then with the same bulk id and idempotency key.
    assert len(pay_calls) == (1 if fault == "timeout_after" else 2)
    assert {c["headers"].get("Idempotency-Key") for c in pay_calls} == {key}
    # Asking again for the same reason owes nothing more; a new reason is a new bonus.
    with django_capture_on_commit_callbacks(execute=True):
        again = client.post(_url("study-prolific-bonus", crowd["study"], tie_id=tie.pk), {"amount": "0.75", "reason": "thanks"}, follow=True)
    assert "0 bonus(es) queued" in again.content.decode() and len(fake.ledger) == 5
    # By rule: gold >= 0.75 are p1 and p2.
    with django_capture_on_commit_callbacks(execute=True):
        client.post(_url("study-prolific-bonus", crowd["study"], tie_id=tie.pk), {"amount": "1.20", "reason": "gold", "gold_min": "0.75"})
    assert fake.paid(PIDS[0]) == [75, 120] and fake.paid(PIDS[1]) == [75, 120] and fake.paid(PIDS[2]) == [75]


def test_bad_bonus_input_is_refused_and_sends_nothing(client, crowd, fake):
    tie = _tied(client, crowd)
    before = len(fake.calls)
    for data, text in (({"amount": "0", "reason": "x"}, "greater than or equal to 0.01"), ({"amount": "500", "reason": "x"}, "from 0.01 to 50.00"), ({"amount": "1"}, "Name the reason")):
        response = client.post(_url("study-prolific-bonus", crowd["study"], tie_id=tie.pk), data)
        assert response.status_code == 400 and text in response.content.decode(), data
    assert len(fake.calls) == before and not ProlificBonus.objects.exists()
    bad_tie = client.post(_url("study-prolific-tie", crowd["study"]), {"link_id": crowd["link"].pk, "prolific_study_id": "not/an id"})
    assert bad_tie.status_code == 400 and "letters and digits only" in bad_tie.content.decode()


def test_retries_a_failing_read_with_the_same_key_and_gives_a_clear_error(client, crowd, fake):
    tie = _tied(client, crowd)
    fake.faults.append((lambda m, p: "/submissions/" in p and m == "GET", 503))
    assert client.post(_url("study-prolific-fetch", crowd["study"], tie_id=tie.pk)).status_code == 302
    statuses = list(ProlificCall.objects.filter(endpoint__contains="/studies/").values_list("status_code", flat=True))
    assert statuses[:2] == [200, 503]  # newest first: the retry succeeded
    fake.faults.extend([(lambda m, p: m == "GET", 503)] * 3)
    failed = client.post(_url("study-prolific-fetch", crowd["study"], tie_id=tie.pk))
    assert failed.status_code == 502 and "HTTP 503" in failed.content.decode() and "try again" in failed.content.decode()


def test_the_token_never_appears_in_a_page_a_log_line_the_call_log_or_an_export(client, crowd, fake, caplog, django_capture_on_commit_callbacks):
    caplog.set_level(logging.DEBUG)
    tie = _tied(client, crowd)
    stored = ProlificCredential.objects.get(study=crowd["study"])
    assert TOKEN not in stored.token_ciphertext and prolific_service._client(crowd["study"])._token == TOKEN
    fake.faults.append((lambda m, p: p.endswith("/pay/"), "timeout_after"))
    with django_capture_on_commit_callbacks(execute=True):
        client.post(_url("study-prolific-bonus", crowd["study"], tie_id=tie.pk), {"amount": "0.10", "reason": "r"})
    # A wrong token: Prolific's 401 is shown, without the token.
    bad = client.post(_url("study-prolific-token", crowd["study"]), {"token": "wrong-" + TOKEN[6:]})
    assert bad.status_code == 302
    refused = client.post(_url("study-prolific-fetch", crowd["study"], tie_id=tie.pk))
    assert refused.status_code == 502 and "HTTP 401" in refused.content.decode()
    pages = [client.get(_url("study-prolific", crowd["study"])), client.get(_url("study-manage", crowd["study"])), refused]
    token_page = client.post(_url("study-prolific-token", crowd["study"]), {"token": "short"})
    assert token_page.status_code == 400 and "does not look like" in token_page.content.decode()
    pages.append(token_page)
    for page in pages:
        body = page.content.decode()
        assert TOKEN not in body and TOKEN[6:] not in body
        for field in re.findall(r'<input[^>]*name="token"[^>]*>', body):
            assert "value=" not in field  # write-only: not even what was just typed comes back
    assert all(TOKEN not in r.getMessage() and TOKEN not in str(r.__dict__) for r in caplog.records)
    for call in ProlificCall.objects.all():
        assert TOKEN not in call.answer + call.endpoint + call.error
    export = client.get(reverse("api-study-export", kwargs={"name": crowd["study"].name}))
    assert export.status_code == 200
    with zipfile.ZipFile(io.BytesIO(b"".join(export.streaming_content))) as archive:
        names = archive.namelist()
        assert names and all(TOKEN.encode() not in archive.read(n) for n in names)
    # Only those who may change the study reach the page.
    stranger = UserFactory(username="stranger-p", roles=["researcher"])
    client.force_login(stranger)
    assert client.get(_url("study-prolific", crowd["study"])).status_code == 403


def _bonus_with_lost_pay(client, crowd, fake, fault, django_capture_on_commit_callbacks):
    tie = _tied(client, crowd)
    fake.faults.append((lambda method, path: path.endswith("/pay/"), fault))
    with django_capture_on_commit_callbacks(execute=True):
        client.post(_url("study-prolific-bonus", crowd["study"], tie_id=tie.pk), {"amount": "0.50", "reason": "first two", "gold_min": "0.75"})
    sent = list(ProlificBonus.objects.filter(tie=tie))
    assert [b.state for b in sent] == [BonusState.SENT, BonusState.SENT] and len({b.bulk_id for b in sent}) == 1
    return tie, sent[0].bulk_id


def test_a_lost_pay_is_sent_again_only_after_the_wait(client, crowd, fake, settings, django_capture_on_commit_callbacks):
    settings.PROLIFIC_PAY_RECHECK_S = 900
    tie, bulk = _bonus_with_lost_pay(client, crowd, fake, "timeout_before", django_capture_on_commit_callbacks)
    pays = lambda: [c for c in fake.calls if c["path"].endswith(f"/{bulk}/pay/")]  # noqa: E731
    prolific_service.prolific_work(tie_id=tie.pk)  # Prolific shows nothing yet, but it may still be paying: wait
    assert len(pays()) == 1 and not fake.ledger
    later = ProlificBonus.objects.get(tie=tie, participant=crowd["people"][PIDS[0]]).sent_at + timedelta(seconds=901)
    prolific_service.prolific_work(tie_id=tie.pk, now=later)
    assert len(pays()) == 2 and fake.paid(PIDS[0]) == [50] and fake.paid(PIDS[1]) == [50]
    assert set(ProlificBonus.objects.filter(tie=tie).values_list("state", flat=True)) == {BonusState.PAID}


def test_a_partly_confirmed_bulk_is_never_paid_again(client, crowd, fake, django_capture_on_commit_callbacks):
    tie, bulk = _bonus_with_lost_pay(client, crowd, fake, "timeout_after", django_capture_on_commit_callbacks)
    # Prolific paid both, but shows only the first one's bonus so far.
    fake.submissions[crowd["subs"][PIDS[1]]]["bonus_payments"].clear()
    for _ in range(2):
        prolific_service.prolific_work(tie_id=tie.pk)
    states = dict(ProlificBonus.objects.filter(tie=tie).values_list("participant__participant_hash", "state"))
    assert sorted(states.values()) == [BonusState.PAID, BonusState.SENT]
    assert len([c for c in fake.calls if c["path"].endswith(f"/{bulk}/pay/")]) == 1 and len(fake.ledger) == 2
    assert "check it on Prolific" in client.get(_url("study-prolific", crowd["study"])).content.decode()


def test_submissions_are_read_page_by_page(client, crowd, fake):
    fake.page_size = 2
    tie = _tied(client, crowd)
    assert ProlificSubmission.objects.filter(tie=tie).count() == 6
    assert len([c for c in fake.calls if "/studies/" in c["path"]]) == 3


def test_a_token_the_site_can_no_longer_read_asks_for_it_again(client, crowd, fake, settings):
    tie = _tied(client, crowd)
    settings.PROLIFIC_TOKEN_KEY = "a-new-key-for-tokens-0123456789"
    response = client.post(_url("study-prolific-fetch", crowd["study"], tie_id=tie.pk))
    assert response.status_code == 409 and "enter the token again" in response.content.decode()


@pytest.mark.django_db(transaction=True)
def test_two_workers_paying_the_same_bonuses_at_once_pay_each_participant_once(client, crowd, fake, settings, monkeypatch):
    settings.PROLIFIC_TIMEOUT_S = 2.0
    tie = _tied(client, crowd)
    # The rows are owed first; the two runs below are the only senders.
    monkeypatch.setattr(prolific_service.jobs, "prolific_work_on_commit", lambda **kw: None)
    prolific_service.prolific_bonus(study=crowd["study"], tie_id=tie.pk, amount="0.30", reason="both")
    fake.slow_s = 0.5
    fake.faults.extend([(lambda m, p: p.endswith("/pay/"), "slow")] * 3)  # each pay acts late, still within the timeout
    errors = []

    def run():
        try:
            prolific_service.prolific_work(tie_id=tie.pk)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run) for _ in range(2)]
    threads[0].start()
    # The second run starts while the first one's pay is out and Prolific shows nothing yet: it must not pay that bulk too.
    deadline = time.monotonic() + 10
    while not any(c["path"].endswith("/pay/") for c in fake.calls) and time.monotonic() < deadline:
        time.sleep(0.01)
    threads[1].start()
    for t in threads:
        t.join(60)
    assert not errors
    for pid in PIDS:
        assert fake.paid(pid) == [30], pid
    assert set(ProlificBonus.objects.filter(tie=tie).values_list("state", flat=True)) == {BonusState.PAID}
