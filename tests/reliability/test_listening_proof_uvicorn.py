"""The proof of receiving the audio under a real uvicorn server: a client with a 4 KiB receive buffer that reads only the
headers of both clips is credited nothing, however plausible its listening events; one that reads the bytes and answers
each response's Audio-Proof header is accepted (common/audio_proof.py, docs/listening.md)."""

from __future__ import annotations

import time

import pytest
import requests

from annotation.models import AudioFetch, AudioReceipt, Judgment
from common import audio_proof
from tests.factories import PairFactory, StudyAnnotatorFactory, StudyFactory, UserFactory
from tests.listening import Clock
from tests.live_uvicorn import serving
from tests.raw_audio import TOKEN, get_headers_then_close, long_clip

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.engine, pytest.mark.usefixtures("own_cache")]



def test_headers_only_is_refused_with_the_reason_and_the_bytes_answered_are_accepted(monkeypatch):
    from django.test import Client

    from annotation.services import consent_give

    # Two-second clips of 375 KiB: the kernel's buffers take each whole, so the server notes both as sent in full.
    study = StudyFactory(name="proof", min_listen_seconds=1.5)
    PairFactory(study=study, clip_a=long_clip(300.0, seconds=2.0), clip_b=long_clip(500.0, seconds=2.0))
    annotator = UserFactory(username="proof-annotator", roles=["annotator"])
    StudyAnnotatorFactory(study=study, annotator=annotator)
    consent_give(user=annotator)
    login = Client()
    login.force_login(annotator)
    session = login.cookies["sessionid"].value
    cookies, headers = {"sessionid": session, "csrftoken": TOKEN}, {"X-CSRFToken": TOKEN}
    clock = Clock(monkeypatch)
    with serving() as (port, _):
        base = f"http://127.0.0.1:{port}"
        assignment = requests.post(f"{base}/api/studies/proof/next/", json={}, cookies=cookies, headers=headers, timeout=10).json()["assignment"]
        listening_url = f"{base}/api/assignments/{assignment['id']}/listening/"
        tokens = {}
        for side in ("A", "B"):
            head = get_headers_then_close(port, assignment["clips"][side]["url"], f"sessionid={session}")
            assert head.startswith(b"HTTP/1.1 200")
            tokens[side] = next(line.split(b": ", 1)[1].decode() for line in head.split(b"\r\n") if line.lower().startswith(b"audio-proof:"))
        time.sleep(1.5)  # the responses end once the server sees the close; only then are they noted
        sent = list(AudioFetch.objects.filter(user=annotator).values_list("first_byte", "last_byte", "total_bytes"))
        print("noted as sent to a client that read only the headers (first, last, total):", sent)
        # A guess at the challenged bytes (digital silence) is refused, and stores nothing.
        guess = {"side": "A", "token": tokens["A"], "bytes": audio_proof.answer_for(bytes(10**6), tokens["A"])}
        wrong = requests.post(listening_url, json={"receipts": [guess]}, cookies=cookies, headers=headers, timeout=10)
        assert wrong.status_code == 400 and wrong.json()["code"] == "receipt_wrong", wrong.text
        seq = assignment["listening"]["next_seq"] - 1
        for side in ("A", "B"):
            for kind in ["play" if side == "A" else "switch"] + ["tick"] * 3:
                seq += 1
                clock.advance(1.0)
                answer = requests.post(listening_url, json={"events": [{"seq": seq, "side": side, "kind": kind, "position": 0.0}]}, cookies=cookies, headers=headers, timeout=10)
                assert answer.status_code == 200, answer.text
        vote = {"idempotency_key": "proof-1", "alignment": "A", "alignment_confidence": "3.0", "musicality": "B", "musicality_confidence": "3.0"}
        refused = requests.post(f"{base}/api/assignments/{assignment['id']}/judgment/", json=vote, cookies=cookies, headers=headers, timeout=10)
        assert refused.status_code == 400 and refused.json()["code"] == "listening_too_short", refused.text
        assert "Clip A and B were sent but never shown received" in refused.json()["detail"] and refused.json()["heard"] == {"A": 0.0, "B": 0.0}
        assert not Judgment.objects.exists() and not AudioReceipt.objects.exists()

        # The same listener reading both clips and answering their headers, then listening again: accepted.
        for side in ("A", "B"):
            response = requests.get(base + assignment["clips"][side]["url"], cookies=cookies, timeout=30)
            token = response.headers[audio_proof.HEADER]
            receipt = {"side": side, "token": token, "bytes": audio_proof.answer_for(response.content, token)}
            proved = requests.post(listening_url, json={"receipts": [receipt]}, cookies=cookies, headers=headers, timeout=10)
            assert proved.status_code == 200, proved.text
        for side in ("A", "B"):
            for kind in ["switch"] + ["tick"] * 2:
                seq += 1
                clock.advance(1.0)
                assert requests.post(listening_url, json={"events": [{"seq": seq, "side": side, "kind": kind}]}, cookies=cookies, headers=headers, timeout=10).status_code == 200
        accepted = requests.post(f"{base}/api/assignments/{assignment['id']}/judgment/", json=vote, cookies=cookies, headers=headers, timeout=10)
        assert accepted.status_code == 201, accepted.text
    assert AudioReceipt.objects.filter(user=annotator).count() == 2
