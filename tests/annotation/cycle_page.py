"""The listening page's judgment cycle as a test client sends it: events and receipts kept until the answer.

Shared by the cycle's tests (tests/annotation/test_judgment_cycle.py) and the separate screens' ones."""

from __future__ import annotations

import json

from django.test import Client
from django.urls import reverse

from annotation.models import Pair
from common import audio_proof
from tests.factories import ClipFactory, PairFactory, StudyAnnotatorFactory

CLIP_SECONDS = 3.0


def make_pairs(study, n: int) -> list[Pair]:
    return [PairFactory(study=study, clip_a=ClipFactory(duration=CLIP_SECONDS), clip_b=ClipFactory(duration=CLIP_SECONDS)) for _ in range(n)]


class CyclePage:
    """What the listening page sends on this path: events and receipts kept on the page until the judgment."""

    def __init__(self, clock, *, study, user=None):
        self.clock, self.study = clock, study
        self.user = user or StudyAnnotatorFactory(study=study).annotator
        self.client = Client()
        self.client.force_login(self.user)
        self.started = clock.now
        self.requests = 0
        self.take(self.post(reverse("api-assignment-next", kwargs={"name": study.name}), {}).json())

    def take(self, answer: dict) -> None:
        self.assignment = answer["assignment"]
        self.events, self.receipts = [], []
        if self.assignment:
            self.seq = self.assignment["listening"]["next_seq"] - 1

    def ms(self) -> float:
        return round((self.clock.now - self.started).total_seconds() * 1000)

    def post(self, url, body):
        self.requests += 1
        return self.client.post(url, json.dumps(body), content_type="application/json")

    def fetch(self, side: str, *, prove: bool = True, **headers) -> None:
        self.requests += 1
        response = self.client.get(self.assignment["clips"][side]["url"], **headers)
        assert response.status_code in (200, 206), response.status_code
        data = b"".join(response.streaming_content)
        if prove:
            token = response[audio_proof.HEADER]
            self.receipts.append({"side": side, "token": token, "bytes": audio_proof.answer_for(data, token)})

    def record(self, kind: str, side: str) -> None:
        self.seq += 1
        self.events.append({"seq": self.seq, "side": side, "kind": kind, "position": 0.0, "client_time": self.ms()})

    def play(self, side: str, seconds: int, *, first: str = "play") -> None:
        self.record(first, side)
        for _ in range(seconds):
            self.clock.advance(1.0)
            self.record("tick", side)

    def url(self, assignment_id=None, study=None) -> str:
        return reverse("api-judgment-cycle", kwargs={"name": (study or self.study).name, "assignment_id": assignment_id or self.assignment["id"]})

    def body(self, key="k-1", listening=None) -> dict:
        batch = {"events": self.events, "receipts": self.receipts, "client_now": self.ms()} if listening is None else listening
        return {
            "idempotency_key": key, "alignment": "A", "alignment_confidence": 3, "musicality": "B", "musicality_confidence": 4,
            "rationale": "A keeps time.", "listening": batch,
        }

    def submit(self, key="k-1", listening=None):
        return self.post(self.url(), self.body(key, listening))

    def listen_honestly(self) -> None:
        self.fetch("A")
        self.fetch("B")
        self.clock.advance(0.5)
        self.play("A", 3)
        self.clock.advance(0.3)
        self.play("B", 3, first="switch")
        self.clock.advance(0.4)
        self.record("pause", "B")


class PassesPage(CyclePage):
    """The page on a separate-screens study: one dimension per request, the listening riding with each."""

    def answer_url(self, assignment_id=None) -> str:
        return reverse("api-dimension-answer", kwargs={"name": self.study.name, "assignment_id": assignment_id or self.assignment["id"]})

    def answer(self, dimension: str, choice: str, *, key: str, confidence=3, rationale: str = "", listening=None):
        batch = {"events": self.events, "receipts": self.receipts, "client_now": self.ms()} if listening is None else listening
        body = {"idempotency_key": key, "dimension": dimension, "choice": choice, "confidence": confidence, "rationale": rationale, "listening": batch}
        response = self.post(self.answer_url(), body)
        if response.status_code in (200, 201):
            self.events, self.receipts = [], []
        return response
