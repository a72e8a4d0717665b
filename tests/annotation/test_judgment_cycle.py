"""The page's four-request cycle: next (first pair only), clip A, clip B, and the judgment with its listening in the
body, answered with the next pair (POST /api/studies/<name>/assignments/<id>/judgment/).

The listening rules are the listening post's (tests/annotation/test_listening_evidence.py): too little listening,
bytes never shown received, wrong or expired receipts and replays are refused on this path too, and a refused
judgment stores nothing of its batch. The server's clock is a controllable fake; the page's clock is the
milliseconds since the test began, as `performance.now()` counts since page load.
"""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from annotation.models import Assignment, AudioReceipt, Judgment, ListeningEvent, Pair
from common import audio_proof
from tests.annotation.cycle_page import CyclePage, make_pairs
from tests.factories import StudyAnnotatorFactory, StudyFactory
from tests.listening import Clock

pytestmark = pytest.mark.django_db

MIN = 2.0


@pytest.fixture
def clock(monkeypatch):
    return Clock(monkeypatch)


def nothing_stored(page) -> None:
    assert not Judgment.objects.exists()
    assert not ListeningEvent.objects.filter(assignment_id=page.assignment["id"]).exists()
    assert not AudioReceipt.objects.filter(user=page.user).exists()
    assignment = Assignment.objects.get(pk=page.assignment["id"])
    assert assignment.listening_seq == 0 and assignment.state == Assignment.State.ACTIVE


def refused(response, *sides) -> dict:
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["code"] == "listening_too_short", body
    for side in sides:
        assert f"clip {side} (" in body["detail"], body["detail"]
    return body


def test_a_cycle_is_four_requests_and_the_answer_carries_the_next_pair(clock):
    study = StudyFactory(min_listen_seconds=MIN, overlap_target=1)
    make_pairs(study, 3)
    page = CyclePage(clock, study=study)
    served = []
    for turn in range(3):
        served.append(page.assignment["id"])
        page.listen_honestly()
        response = page.submit(key=f"k-{turn}")
        assert response.status_code == 201, response.content
        answer = response.json()
        assert set(answer) == {"judgment", "pair", "created_at", "next"}
        page.take(answer["next"])
    # Next once, then two clips and the judgment per pair.
    assert page.requests == 1 + 3 * 3
    assert page.assignment is None and answer["next"]["state"] == "finished" and "3 of 3" in answer["next"]["detail"]
    assert len(set(served)) == 3 and Judgment.objects.filter(annotator=page.user).count() == 3
    assert sorted(Judgment.objects.values_list("pair_id", flat=True)) == sorted(Pair.objects.filter(study=study).values_list("pk", flat=True))
    judgment = Judgment.objects.get(assignment_id=served[0])
    log = judgment.listening_log
    # The page's clock spaced the events; the server's placed them: the same seconds as posts stamped on arrival.
    assert log["source"] == "server"
    assert log["A"]["seconds"] == pytest.approx(3.8) and log["B"]["seconds"] == pytest.approx(3.4)
    assert (log["A"]["plays"], log["B"]["plays"], log["switches"]) == (1, 1, 1)
    assert ListeningEvent.objects.filter(assignment_id=served[0]).count() == 9
    assert AudioReceipt.objects.filter(user=page.user).count() == 6


def test_the_next_pair_in_the_answer_is_the_next_endpoints_and_never_over_assigned(clock):
    study = StudyFactory(min_listen_seconds=MIN, overlap_target=1)
    make_pairs(study, 3)
    first, second = CyclePage(clock, study=study), CyclePage(clock, study=study)
    assert first.assignment["id"] != second.assignment["id"]
    first.listen_honestly()
    answer = first.submit().json()
    following = answer["next"]["assignment"]
    # What the next endpoint says now is the pair the answer named: locked for them, not a second lock.
    again = first.post(reverse("api-assignment-next", kwargs={"name": study.name}), {}).json()["assignment"]
    assert again["id"] == following["id"] and again["clips"] == following["clips"]
    assert Assignment.objects.filter(annotator=first.user, state=Assignment.State.ACTIVE).count() == 1
    # Three pairs of overlap 1 for two people: the third goes to one of them, and then nothing is left for anyone.
    held = {second.assignment["id"], following["id"]}
    assert len(held) == 2
    second.listen_honestly()
    last = second.submit(key="k-2")
    assert last.status_code == 201, last.content
    last = last.json()["next"]
    assert last["assignment"] is None and last["state"] in ("open", "finished")  # the remaining pair is held by the other annotator
    for pair in Pair.objects.filter(study=study):
        assert pair.n_judgments + pair.n_live <= pair.overlap


def test_a_double_submit_stores_one_judgment_and_answers_the_same_next_pair(clock):
    study = StudyFactory(min_listen_seconds=MIN, overlap_target=1)
    make_pairs(study, 3)
    page = CyclePage(clock, study=study)
    page.listen_honestly()
    body = page.body()
    stored = page.post(page.url(), body)
    repeated = page.post(page.url(), body)
    assert (stored.status_code, repeated.status_code) == (201, 200)
    assert repeated.json()["judgment"] == stored.json()["judgment"]
    assert repeated.json()["next"]["assignment"]["id"] == stored.json()["next"]["assignment"]["id"]
    assert Judgment.objects.count() == 1 and ListeningEvent.objects.count() == 9
    assert Assignment.objects.filter(annotator=page.user).count() == 2
    # A fresh key for the judged pair is refused; its batch is not stored.
    other = page.post(page.url(), page.body(key="k-2"))
    assert other.status_code == 409 and other.json()["code"] == "already_submitted"
    assert Judgment.objects.count() == 1 and ListeningEvent.objects.count() == 9


def test_too_little_listening_is_refused_and_stores_nothing(clock):
    study = StudyFactory(min_listen_seconds=MIN, overlap_target=1)
    make_pairs(study, 1)
    page = CyclePage(clock, study=study)
    page.fetch("A")
    page.fetch("B")
    clock.advance(0.5)
    page.play("A", 1)
    page.play("B", 1, first="switch")
    refused(page.submit(), "A", "B")
    nothing_stored(page)
    # The same events and receipts with more listening after them: the page sends them all again, and it counts.
    clock.advance(0.2)
    page.play("A", 2, first="switch")
    page.play("B", 2, first="switch")
    assert page.submit().status_code == 201


def test_a_batch_cannot_claim_more_time_than_passed_on_the_servers_clock(clock):
    study = StudyFactory(min_listen_seconds=MIN, overlap_target=1)
    make_pairs(study, 1)
    page = CyclePage(clock, study=study)
    page.fetch("A")
    page.fetch("B")
    clock.advance(1.0)  # one second between the audio and the judgment
    # Ten seconds of each clip, spaced a second apart on a clock the page makes up.
    burst = [("play", "A")] + [("tick", "A")] * 10 + [("switch", "B")] + [("tick", "B")] * 10 + [("pause", "B")]
    events = [{"seq": k + 1, "side": side, "kind": kind, "client_time": 1000.0 * k} for k, (kind, side) in enumerate(burst)]
    for client_now in (1000.0 * len(burst), 1000.0 * len(burst) + 10**7):
        body = refused(page.submit(listening={"events": events, "receipts": page.receipts, "client_now": client_now}), "A", "B")
        # Whatever the page's clock says, the events lie before the judgment arrived and count only after the first byte.
        assert body["heard"]["A"] + body["heard"]["B"] <= 1.0 + 0.5 + 1e-6
        nothing_stored(page)


def test_a_client_that_never_answers_the_audio_proof_is_refused_with_the_reason(clock):
    study = StudyFactory(min_listen_seconds=MIN, overlap_target=1)
    make_pairs(study, 1)
    page = CyclePage(clock, study=study)
    page.fetch("A", prove=False)
    page.fetch("B", prove=False)
    clock.advance(0.5)
    page.play("A", 3)
    page.play("B", 3, first="switch")
    body = refused(page.submit(), "A", "B")
    assert body["heard"] == {"A": 0.0, "B": 0.0} and "Clip A and B were sent but never shown received" in body["detail"]
    nothing_stored(page)


def test_wrong_expired_refetched_or_misdirected_receipts_refuse_the_judgment_and_store_nothing(clock, monkeypatch):
    study = StudyFactory(min_listen_seconds=MIN, overlap_target=1)
    make_pairs(study, 2)
    page = CyclePage(clock, study=study)
    page.listen_honestly()
    right = page.receipts[0]
    cases = [
        ({**right, "bytes": audio_proof.answer_for(bytes(10**6), right["token"])}, "receipt_wrong"),
        ({**right, "side": "B"}, "bad_receipt"),
        ({**right, "token": right["token"][:-4] + ("AAAA" if not right["token"].endswith("AAAA") else "BBBB")}, "bad_receipt"),
        ({**right, "bytes": "not base64!"}, "bad_receipt"),
    ]
    for receipt, code in cases:
        answer = page.submit(listening={"events": page.events, "receipts": [receipt, page.receipts[1]], "client_now": page.ms()})
        assert answer.status_code == 400 and answer.json()["code"] == code, answer.content
        nothing_stored(page)
    monkeypatch.setattr(audio_proof, "PROOF_MAX_AGE", -1)
    old = page.submit()
    assert old.status_code == 400 and old.json()["code"] == "receipt_expired"
    monkeypatch.undo()
    nothing_stored(page)
    # Another annotator sending this page's receipts for their own pair: the tokens name another clip's URL.
    other = CyclePage(clock, study=study)
    other.fetch("A", prove=False)
    other.fetch("B", prove=False)
    stolen = other.post(other.url(), other.body(listening={"receipts": page.receipts, "events": [], "client_now": None}))
    assert stolen.status_code == 400 and stolen.json()["code"] == "bad_receipt"
    # The challenged bytes fetched again by small Range requests after the challenge: the bytes are right, the proof is not.
    token = right["token"]
    for offset, length in audio_proof.challenge_open(token)["ranges"]:
        page.client.get(page.assignment["clips"]["A"]["url"], HTTP_RANGE=f"bytes={offset}-{offset + length - 1}").getvalue()
    again = page.submit()
    assert again.status_code == 400 and again.json()["code"] == "receipt_refetched"
    nothing_stored(page)


def test_replayed_events_add_nothing(clock):
    study = StudyFactory(min_listen_seconds=MIN, overlap_target=1)
    make_pairs(study, 1)
    page = CyclePage(clock, study=study)
    page.listen_honestly()
    # The listening posted on its own first (the page going away and coming back): stored, stamped by the page's clock.
    posted = page.post(reverse("api-listening-events", kwargs={"assignment_id": page.assignment["id"]}), {"events": page.events, "receipts": page.receipts, "client_now": page.ms()})
    assert posted.status_code == 200 and posted.json()["accepted"] == 9 and posted.json()["heard"]["B"] == pytest.approx(3.4)
    # The same numbered events again with the judgment, much later and respaced: ignored, nothing counted twice.
    clock.advance(60)
    respaced = [{**event, "client_time": page.ms() - 1000.0 * (len(page.events) - k)} for k, event in enumerate(page.events)]
    response = page.submit(listening={"events": respaced, "receipts": [], "client_now": page.ms()})
    assert response.status_code == 201, response.content
    log = Judgment.objects.get().listening_log
    assert log["A"]["seconds"] == pytest.approx(3.8) and log["B"]["seconds"] == pytest.approx(3.4) and log["events"] == 9


@pytest.mark.parametrize(
    ("listening", "words"),
    [
        ("all of it", "Expected a dictionary"),
        ({"events": "play"}, "Expected a list"),
        ({"events": [{"seq": 1, "side": "A", "kind": "play", "client_time": 5}]}, "client_now is required"),
        ({"events": [{"seq": 1, "side": "A", "kind": "play"}], "client_now": 10}, "client_time is required"),
        ({"events": [{"seq": 1, "side": "A", "kind": "play", "client_time": 50}], "client_now": 10}, "is after client_now"),
        ({"events": [{"seq": 1, "side": "A", "kind": "play", "client_time": 9}, {"seq": 2, "side": "B", "kind": "switch", "client_time": 8}], "client_now": 10}, "goes back"),
        ({"events": [{"seq": 1, "side": "C", "kind": "play", "client_time": 1}], "client_now": 10}, "side must be A or B"),
        ({"events": [{"seq": 2, "side": "A", "kind": "play", "client_time": 1}, {"seq": 1, "side": "A", "kind": "tick", "client_time": 2}], "client_now": 10}, "does not follow"),
        ({"events": [{"seq": 1, "side": "A", "kind": "play", "client_time": 1}], "client_now": 10**12}, "more than a day"),
        ({"events": [{"seq": k + 1, "side": "A", "kind": "tick", "client_time": k} for k in range(1001)], "client_now": 2000}, "no more than 1000"),
        ({"receipts": [{"side": "A", "token": "x", "bytes": ""}] * 9}, "no more than 8"),
        ({"receipts": [{"side": "A", "token": "made-up", "bytes": ""}]}, "not an Audio-Proof header"),
        ({"client_now": "soon"}, "A valid number is required"),
    ],
)
def test_a_malformed_batch_is_a_clear_400_and_stores_nothing(clock, listening, words):
    study = StudyFactory(min_listen_seconds=MIN, overlap_target=1)
    make_pairs(study, 1)
    page = CyclePage(clock, study=study)
    page.fetch("A")
    page.fetch("B")
    response = page.submit(listening=listening)
    assert response.status_code == 400, response.content
    assert words in json.dumps(response.json()), response.content
    nothing_stored(page)


def test_another_studys_url_or_someone_elses_assignment_is_not_found(clock):
    study, elsewhere = StudyFactory(min_listen_seconds=MIN, overlap_target=1), StudyFactory(min_listen_seconds=MIN)
    make_pairs(study, 2)
    make_pairs(elsewhere, 1)
    page = CyclePage(clock, study=study)
    StudyAnnotatorFactory(study=elsewhere, annotator=page.user)
    page.listen_honestly()
    assert page.post(page.url(study=elsewhere), page.body()).status_code == 404
    stranger = CyclePage(clock, study=study)
    assert stranger.post(page.url(), stranger.body()).status_code == 404
    assert stranger.post(page.url(), {"listening": "bad"}).status_code == 404  # a bad body tells a stranger nothing either
    nothing_stored(page)
    assert page.submit().status_code == 201


def test_the_listening_post_with_the_pages_clock_places_the_events_by_it(clock):
    # A page going away posts what it kept with client_now (flushOnLeave): spaced as it happened, not bunched at arrival.
    study = StudyFactory(min_listen_seconds=MIN, overlap_target=1)
    make_pairs(study, 1)
    page = CyclePage(clock, study=study)
    page.listen_honestly()
    url = reverse("api-listening-events", kwargs={"assignment_id": page.assignment["id"]})
    # The receipts with the events; without client_now the same events would count nothing.
    answer = page.post(url, {"events": page.events, "receipts": page.receipts, "client_now": page.ms()})
    assert answer.status_code == 200 and answer.json()["heard"] == {"A": pytest.approx(3.8), "B": pytest.approx(3.4)}
    old_style = CyclePage(clock, study=StudyFactory(min_listen_seconds=MIN))
    make_pairs(old_style.study, 1)
    old_style.take(old_style.post(reverse("api-assignment-next", kwargs={"name": old_style.study.name}), {}).json())
    old_style.listen_honestly()
    bunched = old_style.post(reverse("api-listening-events", kwargs={"assignment_id": old_style.assignment["id"]}), {"events": old_style.events, "receipts": old_style.receipts})
    assert bunched.status_code == 200 and bunched.json()["heard"]["B"] < 0.6
