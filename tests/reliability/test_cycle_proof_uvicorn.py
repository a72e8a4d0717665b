"""The proof of receiving the audio on the page's four-request path, under a real uvicorn server: the listening rides in
the judgment's body, and a client with a 4 KiB receive buffer that reads only the headers of both clips is still
refused, with the reason; one that reads the bytes and answers each Audio-Proof header in the same body is accepted
and handed the next pair (docs/listening.md, "One request for the listening and the judgment")."""

from __future__ import annotations

import time

import pytest
import requests

from annotation.models import AudioReceipt, Judgment, ListeningEvent
from common import audio_proof
from tests.factories import PairFactory, StudyAnnotatorFactory, StudyFactory, UserFactory
from tests.listening import Clock
from tests.live_uvicorn import serving
from tests.raw_audio import TOKEN, get_headers_then_close, long_clip

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.engine, pytest.mark.usefixtures("own_cache")]



def batch(seq: int, start_ms: float) -> tuple[list[dict], float]:
    """Play A for 3 s, switch to B for 3 s, pause: timed on a page clock starting at start_ms."""
    events, at = [], start_ms
    for side in ("A", "B"):
        for kind in ["play" if side == "A" else "switch"] + ["tick"] * 3:
            events.append({"seq": seq, "side": side, "kind": kind, "position": 0.0, "client_time": at})
            seq, at = seq + 1, at + 1000.0
    events.append({"seq": seq, "side": "B", "kind": "pause", "position": 0.0, "client_time": at})
    return events, at


def test_headers_only_is_refused_in_the_judgments_batch_and_the_bytes_answered_are_accepted(monkeypatch):
    from django.test import Client

    from annotation.services import consent_give

    study = StudyFactory(name="cycle-proof", min_listen_seconds=1.5, overlap_target=1)
    for freq in (300.0, 700.0):
        PairFactory(study=study, clip_a=long_clip(freq, seconds=2.0), clip_b=long_clip(freq + 200.0, seconds=2.0))
    annotator = UserFactory(username="cycle-annotator", roles=["annotator"])
    StudyAnnotatorFactory(study=study, annotator=annotator)
    consent_give(user=annotator)
    login = Client()
    login.force_login(annotator)
    session = login.cookies["sessionid"].value
    cookies, headers = {"sessionid": session, "csrftoken": TOKEN}, {"X-CSRFToken": TOKEN}
    clock = Clock(monkeypatch)
    vote = {"idempotency_key": "cycle-1", "alignment": "A", "alignment_confidence": "3.0", "musicality": "B", "musicality_confidence": "3.0"}
    with serving() as (port, _):
        base = f"http://127.0.0.1:{port}"
        assignment = requests.post(f"{base}/api/studies/cycle-proof/next/", json={}, cookies=cookies, headers=headers, timeout=10).json()["assignment"]
        url = f"{base}/api/studies/cycle-proof/assignments/{assignment['id']}/judgment/"
        tokens = {}
        for side in ("A", "B"):
            head = get_headers_then_close(port, assignment["clips"][side]["url"], f"sessionid={session}")
            assert head.startswith(b"HTTP/1.1 200")
            tokens[side] = next(line.split(b": ", 1)[1].decode() for line in head.split(b"\r\n") if line.lower().startswith(b"audio-proof:"))
        time.sleep(1.5)  # the responses end once the server sees the close; only then are they noted
        clock.advance(8.0)
        events, now_ms = batch(assignment["listening"]["next_seq"], 0.0)
        # Plausible events, timed inside the 8 s the server saw pass, and a guess at the bytes: refused, nothing kept.
        guess = [{"side": side, "token": tokens[side], "bytes": audio_proof.answer_for(bytes(10**6), tokens[side])} for side in ("A", "B")]
        wrong = requests.post(url, json={**vote, "listening": {"events": events, "receipts": guess, "client_now": now_ms}}, cookies=cookies, headers=headers, timeout=10)
        assert wrong.status_code == 400 and wrong.json()["code"] == "receipt_wrong", wrong.text
        # The same events with no receipts: sent, never shown received.
        refused = requests.post(url, json={**vote, "listening": {"events": events, "client_now": now_ms}}, cookies=cookies, headers=headers, timeout=10)
        assert refused.status_code == 400 and refused.json()["code"] == "listening_too_short", refused.text
        assert "Clip A and B were sent but never shown received" in refused.json()["detail"] and refused.json()["heard"] == {"A": 0.0, "B": 0.0}
        assert not Judgment.objects.exists() and not AudioReceipt.objects.exists() and not ListeningEvent.objects.exists()

        # The same listener reading both clips and answering their headers in the judgment's body: accepted, next pair in hand.
        receipts = []
        for side in ("A", "B"):
            response = requests.get(base + assignment["clips"][side]["url"], cookies=cookies, timeout=30)
            token = response.headers[audio_proof.HEADER]
            receipts.append({"side": side, "token": token, "bytes": audio_proof.answer_for(response.content, token)})
        clock.advance(8.0)
        accepted = requests.post(url, json={**vote, "listening": {"events": events, "receipts": receipts, "client_now": now_ms}}, cookies=cookies, headers=headers, timeout=10)
        assert accepted.status_code == 201, accepted.text
        following = accepted.json()["next"]["assignment"]
        assert following and following["id"] != assignment["id"]
    judgment = Judgment.objects.get()
    assert judgment.listening_log["A"]["seconds"] >= 1.5 and judgment.listening_log["B"]["seconds"] >= 1.5
    assert AudioReceipt.objects.filter(user=annotator).count() == 2 and ListeningEvent.objects.count() == 9
