"""The proof of receiving the audio on a rating page, under a real uvicorn server: a client with a 4 KiB receive buffer
that reads only the headers of every letter is credited nothing, however plausible its listening events; one that
reads the bytes and answers each response's Audio-Proof header is accepted (the rule of the pair page, on the
multi-stimulus page's rendered copies)."""

from __future__ import annotations

import time

import pytest
import requests

from annotation.models import AudioReceipt
from annotation.ratings import services as rating_services
from annotation.ratings.models import RatingSubmission
from common import audio_proof
from tests.factories import ConditionFactory, StudyAnnotatorFactory, StudyFactory
from tests.listening import Clock
from tests.live_uvicorn import serving
from tests.raw_audio import TOKEN, get_headers_then_close, long_clip

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.engine, pytest.mark.usefixtures("own_cache")]



def test_a_rating_client_that_reads_only_the_headers_is_refused_and_one_that_answers_is_accepted(monkeypatch):
    from django.test import Client

    from annotation.services import consent_give

    study = StudyFactory(name="rating-proof", min_listen_seconds=1.5, overlap_target=1, lock_ttl_seconds=600)
    rating_services.rating_task_set(study=study, task="multi", dimensions=["musicality"])
    rating_services.rating_item_add(study=study, condition=ConditionFactory(), clips=[long_clip(300.0, seconds=2.0), long_clip(500.0, seconds=2.0)])
    annotator = StudyAnnotatorFactory(study=study).annotator
    consent_give(user=annotator)
    login = Client()
    login.force_login(annotator)
    session = login.cookies["sessionid"].value
    cookies, headers = {"sessionid": session, "csrftoken": TOKEN}, {"X-CSRFToken": TOKEN}
    clock = Clock(monkeypatch)
    with serving() as (port, _):
        base = f"http://127.0.0.1:{port}"
        assignment = requests.post(f"{base}/api/ratings/studies/{study.name}/next/", json={}, cookies=cookies, headers=headers, timeout=10).json()["assignment"]
        letters = {c["label"]: c["url"] for c in assignment["clips"]}
        listening_url = f"{base}/api/ratings/assignments/{assignment['id']}/listening/"
        submit_url = f"{base}/api/ratings/assignments/{assignment['id']}/submit/"
        tokens = {}
        for label, url in letters.items():
            head = get_headers_then_close(port, url, f"sessionid={session}")
            assert head.startswith(b"HTTP/1.1 200"), head[:200]
            tokens[label] = next(line.split(b": ", 1)[1].decode() for line in head.split(b"\r\n") if line.lower().startswith(b"audio-proof:"))
        time.sleep(1.5)  # the responses end once the server sees the close; only then are they noted
        # A guess at the challenged bytes (digital silence) is refused, and stores nothing.
        first = next(iter(letters))
        guess = {"side": first, "token": tokens[first], "bytes": audio_proof.answer_for(bytes(10**6), tokens[first])}
        wrong = requests.post(listening_url, json={"receipts": [guess]}, cookies=cookies, headers=headers, timeout=10)
        assert wrong.status_code == 400 and wrong.json()["code"] == "receipt_wrong", wrong.text

        seq = 0

        def play_each(ticks: int) -> None:
            nonlocal seq
            for n, label in enumerate(letters):
                for kind in ["play" if n == 0 else "switch"] + ["tick"] * ticks:
                    seq += 1
                    clock.advance(1.0)
                    answer = requests.post(listening_url, json={"events": [{"seq": seq, "side": label, "kind": kind, "position": 0.0}]}, cookies=cookies, headers=headers, timeout=10)
                    assert answer.status_code == 200, answer.text

        play_each(3)
        ratings = {"idempotency_key": "rating-proof-1", "ratings": {label: {"musicality": 60} for label in letters}}
        refused = requests.post(submit_url, json=ratings, cookies=cookies, headers=headers, timeout=10)
        assert refused.status_code == 400 and refused.json()["code"] == "listening_too_short", refused.text
        assert "never shown received" in refused.json()["detail"]
        assert not RatingSubmission.objects.exists() and not AudioReceipt.objects.exists()

        # Reading every letter and answering its header, then listening again: accepted.
        for label, url in letters.items():
            response = requests.get(base + url, cookies=cookies, timeout=30)
            token = response.headers[audio_proof.HEADER]
            receipt = {"side": label, "token": token, "bytes": audio_proof.answer_for(response.content, token)}
            proved = requests.post(listening_url, json={"receipts": [receipt]}, cookies=cookies, headers=headers, timeout=10)
            assert proved.status_code == 200, proved.text
        play_each(2)
        accepted = requests.post(submit_url, json=ratings, cookies=cookies, headers=headers, timeout=10)
        assert accepted.status_code == 201, accepted.text
    assert AudioReceipt.objects.filter(user=annotator).count() == len(letters)
