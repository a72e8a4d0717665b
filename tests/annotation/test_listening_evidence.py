"""Listening is proven on the server: every way of faking it, through the real endpoints.

The annotator's client fetches audio from /audio/<clip>/ and posts events to
/api/assignments/<id>/listening/; the judgment is accepted only when what the server
recorded covers the study's minimum per clip. The server's clock is a controllable
fake here, so "three seconds later" costs no real time.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from django.test import Client
from django.urls import reverse

from annotation import services
from annotation.models import Assignment, AudioFetch, Clip, Judgment, ListeningEvent
from common import audio_proof
from tests.factories import ClipFactory, PairFactory, StudyAnnotatorFactory, StudyFactory
from tests.listening import Clock, clip_at, prove

pytestmark = pytest.mark.django_db


@pytest.fixture
def clock(monkeypatch):
    return Clock(monkeypatch)

MIN = 2.0
CLIP_SECONDS = 3.0


class Page:
    """What a listening page (or a script pretending to be one) can do, over HTTP."""

    def __init__(self, *, study=None):
        self.study = study or StudyFactory(min_listen_seconds=MIN, overlap_target=1)
        clips = [ClipFactory(duration=CLIP_SECONDS) for _ in range(2)]
        self.pair = PairFactory(study=self.study, clip_a=clips[0], clip_b=clips[1])
        self.user = StudyAnnotatorFactory(study=self.study).annotator
        self.client = Client()
        self.client.force_login(self.user)
        response = self.post(reverse("api-assignment-next", kwargs={"name": self.study.name}), {})
        assert response.status_code == 200, response.content
        self.assignment = response.json()["assignment"]
        self.seq = self.assignment["listening"]["next_seq"] - 1

    def post(self, url, body):
        return self.client.post(url, json.dumps(body), content_type="application/json")

    def clip(self, side: str) -> Clip:
        return clip_at(self.assignment["clips"][side]["url"])

    def fetch(self, side: str, *, prove: bool = True, **headers) -> bytes:
        """GET the clip as the page does, and (unless told not to) answer its Audio-Proof header from the bytes received."""
        response = self.client.get(self.assignment["clips"][side]["url"], **headers)
        assert response.status_code in (200, 206), response.status_code
        data = b"".join(response.streaming_content)
        if prove:
            proved = self.prove(side, response, data)
            assert proved.status_code == 200, proved.content
        return data

    def prove(self, side: str, response, data: bytes):
        first = int(response["Content-Range"].split()[1].split("-")[0]) if response.status_code == 206 else 0
        token = response[audio_proof.HEADER]
        receipt = {"side": side, "token": token, "bytes": audio_proof.answer_for(data, token, offset=first)}
        return self.post(reverse("api-listening-events", kwargs={"assignment_id": self.assignment["id"]}), {"receipts": [receipt]})

    def events(self, *items, seqs=None):
        """Post (kind, side) events in one batch, numbered after the last one sent (unless seqs are given)."""
        body = []
        for index, (kind, side) in enumerate(items):
            if seqs is None:
                self.seq += 1
            body.append({"seq": self.seq if seqs is None else seqs[index], "side": side, "kind": kind, "position": 0.0})
        return self.post(reverse("api-listening-events", kwargs={"assignment_id": self.assignment["id"]}), {"events": body})

    def play(self, clock, side: str, seconds: float, *, first: str = "play"):
        """`first` on `side`, a tick a second for `seconds` (each its own post), as a playing page does."""
        self.events((first, side))
        for _ in range(int(seconds)):
            clock.advance(1.0)
            last = self.events(("tick", side))
        return last

    def submit(self, log=None, key="k-1"):
        body = {
            "idempotency_key": key,
            "alignment": "A",
            "alignment_confidence": 3,
            "musicality": "B",
            "musicality_confidence": 4,
            "rationale": "A keeps time.",
        }
        if log is not None:
            body["listening_log"] = log
        return self.post(reverse("api-judgment-submit", kwargs={"assignment_id": self.assignment["id"]}), body)


CLAIM = {"A": {"plays": 1, "seconds": 5.0}, "B": {"plays": 1, "seconds": 5.0}, "switches": 1}


def refused(response, *sides):
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["code"] == "listening_too_short", body
    for side in sides:
        assert f"clip {side} (" in body["detail"], body["detail"]
    assert not Judgment.objects.exists()
    return body


def test_honest_listening_is_accepted_and_kept_with_the_judgment(clock):
    page = Page()
    page.fetch("A")
    page.fetch("B")
    clock.advance(0.5)
    page.play(clock, "A", 3)
    clock.advance(0.3)
    page.play(clock, "B", 3, first="switch")
    clock.advance(0.4)
    done = page.events(("pause", "B"))
    assert done.status_code == 200 and done.json()["heard"]["B"] == pytest.approx(3.4)
    response = page.submit(CLAIM)
    assert response.status_code == 201, response.content
    judgment = Judgment.objects.get()
    log = judgment.listening_log
    # A: the play may start half a second before it arrived; then 3 s of ticks and 0.3 s to the switch.
    assert log["source"] == "server"
    assert log["A"]["seconds"] == pytest.approx(3.8) and log["B"]["seconds"] == pytest.approx(3.4)
    assert log["A"]["served_seconds"] == log["B"]["served_seconds"] == CLIP_SECONDS
    assert (log["A"]["plays"], log["B"]["plays"], log["switches"]) == (1, 1, 1)
    assert log["client"] == {"A": {"plays": 1, "seconds": 5.0, "seeks": 0, "loops": 0}, "B": {"plays": 1, "seconds": 5.0, "seeks": 0, "loops": 0}, "switches": 1}
    # The events and the bytes sent stay with the assignment the judgment points to.
    assert ListeningEvent.objects.filter(assignment=judgment.assignment).count() == 9
    assert AudioFetch.objects.filter(user=page.user).count() == 2


def test_never_fetched_audio_cannot_have_been_heard(clock):
    # The reported case: no audio fetched, 11 s of waiting, a log claiming 5 s of each clip.
    page = Page()
    page.play(clock, "A", 5)
    page.play(clock, "B", 5, first="switch")
    clock.advance(1)
    body = refused(page.submit(CLAIM), "A", "B")
    assert "its audio was never fetched" in body["detail"]
    assert body["heard"] == {"A": 0.0, "B": 0.0}
    # Fetching one clip afterwards does not reach back over listening claimed before it.
    page.fetch("A")
    body = refused(page.submit(CLAIM, key="k-2"), "A", "B")
    assert body["heard"]["A"] == 0.0


def test_a_forged_log_in_the_submit_counts_for_nothing(clock):
    page = Page()
    page.fetch("A")
    page.fetch("B")
    clock.advance(30)  # plenty of wall-clock time, but the page never said it played
    body = refused(page.submit({"A": {"plays": 4, "seconds": 60}, "B": {"plays": 4, "seconds": 60}, "switches": 3}), "A", "B")
    assert body["heard"] == {"A": 0.0, "B": 0.0}
    assert "at least 2 s" in body["detail"]


def test_a_replayed_batch_adds_nothing(clock):
    page = Page()
    page.fetch("A")
    page.fetch("B")
    page.play(clock, "A", 3)
    clock.advance(0.2)
    page.events(("switch", "B"))
    clock.advance(0.5)
    page.events(("pause", "B"))
    heard = Assignment.objects.get(pk=page.assignment["id"]).listening["B"]["seconds"]
    assert heard == pytest.approx(0.5)
    # The same numbered events posted again, over and over, much later: ignored, not counted.
    for _ in range(5):
        clock.advance(1)
        again = page.events(("play", "B"), ("tick", "B"), ("tick", "B"), seqs=[page.seq - 2, page.seq - 1, page.seq])
        assert again.status_code == 200 and again.json()["accepted"] == 0 and again.json()["ignored"] == 3
    assert again.json()["heard"]["B"] == pytest.approx(0.5)
    refused(page.submit(CLAIM), "B")
    assert ListeningEvent.objects.count() == 6
    # Numbers must grow within a batch too.
    disorder = page.events(("play", "B"), ("tick", "B"), seqs=[page.seq + 2, page.seq + 1])
    assert disorder.status_code == 400 and disorder.json()["code"] == "bad_events"


def test_a_log_faster_than_the_clock_is_cut_to_the_clock(clock):
    page = Page()
    page.fetch("A")
    page.fetch("B")
    clock.advance(0.5)
    # Ten seconds of each clip claimed in one burst, positions and all.
    burst = [("play", "A")] + [("tick", "A")] * 10 + [("switch", "B")] + [("tick", "B")] * 10 + [("pause", "B")]
    assert page.events(*burst).json()["heard"] == {"A": 0.5, "B": 0.0}
    # The same again as a stream of posts a tenth of a second apart.
    for kind, side in burst:
        clock.advance(0.1)
        last = page.events((kind, side))
    heard = last.json()["heard"]
    assert heard["A"] + heard["B"] <= 0.5 + 2.3 + 1e-6
    refused(page.submit(CLAIM), "A", "B")


def test_both_clips_playing_at_once_count_once(clock):
    page = Page()
    page.fetch("A")
    page.fetch("B")
    clock.advance(1)
    # A script saying both clips play, with ticks for both every second: one transport, one clip at a time.
    page.events(("play", "A"), ("play", "B"))
    for _ in range(5):
        clock.advance(1)
        last = page.events(("tick", "A"), ("tick", "B"))
    heard = last.json()["heard"]
    assert heard["A"] + heard["B"] <= 5.5 + 1e-6
    # A's interval ends the moment B's play arrives; only B runs on.
    assert heard == {"A": 0.5, "B": 5.0}
    refused(page.submit(CLAIM), "A")


def test_a_clip_counts_only_as_much_audio_as_was_sent(clock):
    page = Page()
    page.fetch("A")
    whole = page.clip("B").file.size
    # Of B only the first fifth of the bytes: at most 0.6 s of its audio can have been heard.
    assert len(page.fetch("B", HTTP_RANGE=f"bytes=0-{whole // 5 - 1}")) == whole // 5
    page.play(clock, "A", 3)
    page.play(clock, "B", 4, first="switch")
    last = page.events(("pause", "B"))
    assert last.json()["heard"]["B"] == pytest.approx(CLIP_SECONDS / 5, abs=0.01)
    refused(page.submit(CLAIM), "B")
    # The rest of B fetched later (a seek, say): now the listening counts in full.
    page.fetch("B", HTTP_RANGE=f"bytes={whole // 5}-")
    page.play(clock, "B", 1)
    assert page.submit(CLAIM, key="k-3").status_code == 201


def test_bad_events_are_refused_and_change_nothing(clock):
    page = Page()
    url = reverse("api-listening-events", kwargs={"assignment_id": page.assignment["id"]})
    for events in (
        [{"seq": 1, "side": "C", "kind": "play"}],
        [{"seq": 1, "side": "A", "kind": "rewind"}],
        [{"side": "A", "kind": "play"}],
        [{"seq": 1.5, "side": "A", "kind": "play"}],
        [{"seq": 0, "side": "A", "kind": "play"}],
        [{"seq": 1, "side": "A", "kind": "play", "position": -1}],
        [{"seq": 1, "side": "A", "kind": "play", "client_time": "soon"}],
        ["play"],
        [],
    ):
        response = page.post(url, {"events": events})
        assert response.status_code == 400, (events, response.content)
        assert response.json()["detail"], response.content
    assert not ListeningEvent.objects.exists() and Assignment.objects.get(pk=page.assignment["id"]).listening_seq == 0
    # Someone else's assignment: not found, nothing stored.
    other = Page(study=page.study)
    stranger = other.post(url, {"events": [{"seq": 1, "side": "A", "kind": "play"}]})
    assert stranger.status_code == 404 and not ListeningEvent.objects.exists()


def test_listening_is_posted_with_the_csrf_token_only(clock):
    page = Page()
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(page.user)
    url = reverse("api-listening-events", kwargs={"assignment_id": page.assignment["id"]})
    response = strict.post(url, json.dumps({"events": [{"seq": 1, "side": "A", "kind": "play"}]}), content_type="application/json")
    assert response.status_code == 403 and not ListeningEvent.objects.exists()


def test_no_events_after_the_judgment_and_a_new_page_continues_the_numbers(clock):
    page = Page()
    page.fetch("A")
    page.fetch("B")
    page.play(clock, "A", 3)
    # A reload: the next-pair payload tells the page where its numbers continue.
    again = page.post(reverse("api-assignment-next", kwargs={"name": page.study.name}), {}).json()["assignment"]
    assert again["id"] == page.assignment["id"] and again["listening"]["next_seq"] == page.seq + 1
    assert again["listening"]["heard"]["A"] == pytest.approx(3.0)
    page.play(clock, "B", 3, first="switch")
    assert page.submit().status_code == 201
    late = page.events(("play", "A"))
    assert late.status_code == 409 and late.json()["code"] == "not_listening"


def test_a_judgment_after_consent_is_withdrawn_is_refused(clock):
    page = Page()
    page.fetch("A")
    page.fetch("B")
    page.play(clock, "A", 3)
    page.play(clock, "B", 3, first="switch")
    services.consent_withdraw(user=page.user)
    clock.advance(1.3)
    response = page.submit()
    assert response.status_code == 403 and response.json()["code"] == "consent_withdrawn", response.content
    assert not Judgment.objects.exists()


def test_export_carries_the_seconds_the_server_counted(clock, tmp_path):
    from annotation.dataset import dataset_export

    page = Page()
    page.fetch("A")
    page.fetch("B")
    page.play(clock, "A", 3)
    page.play(clock, "B", 2, first="switch")
    page.events(("pause", "B"))
    assert page.submit(CLAIM).status_code == 201
    dataset_export(out_dir=tmp_path / "out", studies=[page.study])
    [row] = [json.loads(line) for line in (tmp_path / "out" / "train.jsonl").read_text().splitlines()]
    assert (row["total_listening_time_a"], row["total_listening_time_b"]) == (3.0, 2.0)
    # The listening times follow the CMI keys; the aggregated-label columns come after them.
    from annotation.dataset.aggregates import AGGREGATE_KEYS
    from annotation.dataset.provenance import PROVENANCE_KEYS

    tail = ["total_listening_time_a", "total_listening_time_b", *AGGREGATE_KEYS, "duplicate_claim", *PROVENANCE_KEYS, "dimension_passes"]
    assert list(row)[-len(tail) :] == tail
    assert np.isclose(Judgment.objects.get().listening_log["B"]["seconds"], 2.0)


def test_an_audio_note_that_reaches_the_database_after_the_last_post_still_counts_at_the_submit(clock):
    # Under several server processes the audio GET's note is written a moment after the response (common deferred
    # rows), by the process that served it. The submit counts once more from the rows before refusing.
    page = Page()
    page.fetch("A")
    sent_b = clock.now
    clock.advance(0.5)
    page.play(clock, "A", 3)
    clock.advance(0.3)
    page.play(clock, "B", 3, first="switch")
    clock.advance(0.4)
    assert page.events(("pause", "B")).json()["heard"]["B"] == 0.0
    clip_b = page.clip("B")
    size = clip_b.file.size
    services.audio_fetch_record(user=page.user, clip=clip_b, served=(0, size - 1, size), now=sent_b)
    # The page's proof of receiving B reached the server with its events; only the note of sending it lagged.
    prove(Assignment.objects.get(pk=page.assignment["id"]), "B", at=sent_b)
    response = page.submit(CLAIM)
    assert response.status_code == 201, response.content
    log = Judgment.objects.get().listening_log
    assert log["B"]["seconds"] == pytest.approx(3.4) and log["B"]["served_seconds"] == CLIP_SECONDS
    assert Assignment.objects.get(pk=page.assignment["id"]).listening["B"]["seconds"] == pytest.approx(3.4)


def test_a_late_note_of_audio_sent_after_the_listening_still_counts_for_nothing(clock):
    page = Page()
    page.fetch("A")
    page.play(clock, "A", 3)
    page.play(clock, "B", 3, first="switch")
    page.events(("pause", "B"))
    clip_b = page.clip("B")
    size = clip_b.file.size
    services.audio_fetch_record(user=page.user, clip=clip_b, served=(0, size - 1, size), now=clock.now)
    body = refused(page.submit(CLAIM), "B")
    assert body["heard"]["B"] == 0.0


# --- The proof of receiving the bytes (common/audio_proof.py) -------------------------------------------------------


def _listened(page, clock, *, prove_a=True, prove_b=True):
    page.fetch("A", prove=prove_a)
    page.fetch("B", prove=prove_b)
    clock.advance(0.5)
    page.play(clock, "A", 3)
    page.play(clock, "B", 3, first="switch")
    page.events(("pause", "B"))


def test_a_client_that_never_shows_it_received_a_clip_is_refused_with_the_reason(clock):
    page = Page()
    _listened(page, clock, prove_b=False)
    body = refused(page.submit(CLAIM), "B")
    assert body["heard"]["B"] == 0.0 and "Clip B was sent but never shown received" in body["detail"] and "Audio-Proof" in body["detail"]
    # Answering B's header afterwards is enough: the listening then counts, the same events and all.
    response = page.client.get(page.assignment["clips"]["B"]["url"])
    assert page.prove("B", response, b"".join(response.streaming_content)).status_code == 200
    assert page.submit(CLAIM).status_code == 201


def test_wrong_forged_or_misdirected_receipts_are_refused_and_store_nothing(clock, monkeypatch):
    from annotation.models import AudioReceipt

    page = Page()
    url = reverse("api-listening-events", kwargs={"assignment_id": page.assignment["id"]})
    response = page.client.get(page.assignment["clips"]["A"]["url"])
    data = b"".join(response.streaming_content)
    token = response[audio_proof.HEADER]
    right = audio_proof.answer_for(data, token)
    wrong = audio_proof.answer_for(bytes(len(data)), token)  # zeros: what a client guessing digital silence answers
    forged = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
    cases = [
        ({"side": "A", "token": token, "bytes": wrong}, "receipt_wrong", "not those of clip A"),
        ({"side": "B", "token": token, "bytes": right}, "bad_receipt", "another clip than B"),
        ({"side": "A", "token": forged, "bytes": right}, "bad_receipt", "not an Audio-Proof header this server issued"),
        ({"side": "A", "token": token, "bytes": "not base64!"}, "bad_receipt", "base64"),
        ({"side": "C", "token": token, "bytes": right}, "bad_receipt", "side must be one of A, B"),
    ]
    for receipt, code, words in cases:
        answer = page.post(url, {"receipts": [receipt], "events": [{"seq": page.seq + 1, "side": "A", "kind": "play"}]})
        assert answer.status_code == 400 and answer.json()["code"] == code and words in answer.json()["detail"], answer.content
    # Nothing of a refused post is kept: not the receipt, not the events that came with it.
    assert not AudioReceipt.objects.exists() and not ListeningEvent.objects.exists()
    monkeypatch.setattr(audio_proof, "PROOF_MAX_AGE", -1)
    old = page.post(url, {"receipts": [{"side": "A", "token": token, "bytes": right}]})
    assert old.status_code == 400 and old.json()["code"] == "receipt_expired"
    monkeypatch.undo()
    assert page.post(url, {"receipts": [{"side": "A", "token": token, "bytes": right}]}).status_code == 200
    assert AudioReceipt.objects.count() == 1
    # The same receipt again stores nothing new.
    assert page.post(url, {"receipts": [{"side": "A", "token": token, "bytes": right}]}).status_code == 200
    assert AudioReceipt.objects.count() == 1


def test_fetching_the_challenged_bytes_after_the_challenge_proves_nothing(clock):
    page = Page()
    url = reverse("api-listening-events", kwargs={"assignment_id": page.assignment["id"]})
    headers_only = page.client.get(page.assignment["clips"]["A"]["url"])
    token = headers_only[audio_proof.HEADER]
    # Its body is never read.
    clock.advance(0.2)
    # A small Range request for each challenged range, after the challenge: the bytes are right, the proof is not.
    ranges = audio_proof.challenge_open(token)["ranges"]
    pieces = {}
    for offset, length in ranges:
        part = page.client.get(page.assignment["clips"]["A"]["url"], HTTP_RANGE=f"bytes={offset}-{offset + length - 1}")
        pieces[offset] = b"".join(part.streaming_content)
    answer = __import__("base64").b64encode(b"".join(pieces[o] for o, _ in ranges)).decode()
    refused_receipt = page.post(url, {"receipts": [{"side": "A", "token": token, "bytes": answer}]})
    assert refused_receipt.status_code == 400 and refused_receipt.json()["code"] == "receipt_refetched"


def test_a_proof_covers_its_own_range_only(clock):
    page = Page()
    clip = page.clip("A")
    half = clip.file.size // 2
    page.fetch("A", HTTP_RANGE=f"bytes=0-{half - 1}")
    page.fetch("B")
    clock.advance(0.5)
    page.play(clock, "A", 3)
    record = page.events(("pause", "A")).json()
    # Half the bytes of a 3 s clip sent and proven: at most 1.5 s of it can have been heard.
    assert record["heard"]["A"] == pytest.approx(CLIP_SECONDS * half / clip.file.size, abs=0.01)


def test_the_challenge_names_no_clip_only_the_url_the_page_already_has():
    from django.core import signing

    page = Page()
    response = page.client.get(page.assignment["clips"]["A"]["url"])
    payload = signing.loads(response[audio_proof.HEADER], salt=audio_proof.SALT)
    assert set(payload) == {"p", "f", "l", "t", "r", "d"} and payload["p"] == page.assignment["clips"]["A"]["url"]
    # The digest is keyed and covers ranges drawn per response: two responses of one clip share no digest.
    again = signing.loads(page.client.get(page.assignment["clips"]["A"]["url"])[audio_proof.HEADER], salt=audio_proof.SALT)
    assert again["d"] != payload["d"] and len(payload["d"]) == 64
    size = page.clip("A").file.size
    # One range is the response's last bytes: answering means reading the stream to its end.
    assert payload["r"][-1] == [size - audio_proof.RANGE_BYTES, audio_proof.RANGE_BYTES] and len(payload["r"]) <= audio_proof.RANGES + 1
    assert all(0 <= o and o + n <= size for o, n in payload["r"])
