"""An arena vote counts only audio the visitor proved receiving: the battle clip's Audio-Proof answered with its bytes
(common/audio_proof.py, the rule the pair and rating pages apply too)."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from arena.models import BattleAudioReceipt, ListenEvent
from arena.selectors import battle_audio_url
from common import audio_proof

from .conftest import arena_receipt, arena_system, fetch_audio, ready_battle, send, visitor_client, visitor_with_terms

pytestmark = pytest.mark.django_db


def _post(client, url, body):
    return client.post(url, data=json.dumps(body), content_type="application/json")


def _urls(battle):
    return (
        reverse("arena:api-battle-events", kwargs={"public_id": battle.public_id}),
        reverse("arena:api-battle-vote", kwargs={"public_id": battle.public_id}),
    )


def _played(battle, visitor, start, seconds=6):
    events = [(0.0, "play", "a")] + [(float(k), "tick", "a") for k in range(1, seconds + 1)] + [(float(seconds), "switch", "b")]
    events += [(float(seconds + k), "tick", "b") for k in range(1, seconds + 1)] + [(2.0 * seconds, "pause", "b")]
    return send(battle, visitor, events, start=start)


@pytest.fixture
def battle_and_client():
    visitor, cookie = visitor_with_terms()
    battle = ready_battle(visitor, arena_system("proof-a"), arena_system("proof-b"), ready_ago=120)
    return battle, visitor, visitor_client(cookie)


def test_whole_clips_sent_but_never_proven_count_nothing_and_the_refusal_says_why(battle_and_client):
    battle, visitor, client = battle_and_client
    start = timezone.now() - timedelta(seconds=60)
    for side in ("a", "b"):
        fetch_audio(battle, side=side, at=start, proven=False)
    heard = _played(battle, visitor, start + timedelta(seconds=1))["heard"]
    assert heard == {"a": 0.0, "b": 0.0}
    events_url, vote_url = _urls(battle)
    refused = _post(client, vote_url, {"vote": "a"})
    assert refused.status_code == 403 and refused.json()["code"] == "listen_required"
    assert "never shown received" in refused.json()["detail"]
    # The receipts arrive late (a slow page): the record is counted again from what was already played, and the vote opens.
    receipts = [arena_receipt(battle, side=side, at=start) for side in ("a", "b")]
    answer = _post(client, events_url, {"receipts": receipts})
    assert answer.status_code == 200, answer.content
    assert answer.json()["heard"]["a"] >= 5 and answer.json()["heard"]["b"] >= 5 and answer.json()["can_vote"]
    assert _post(client, vote_url, {"vote": "a"}).status_code == 201


def test_a_wrong_forged_or_foreign_receipt_is_refused_with_its_reason_and_stores_nothing(battle_and_client):
    battle, visitor, client = battle_and_client
    start = timezone.now() - timedelta(seconds=60)
    fetch_audio(battle, side="a", at=start, proven=False)
    fetch_audio(battle, side="b", at=start, proven=False)
    events_url, _ = _urls(battle)
    right = arena_receipt(battle, side="a", at=start)
    event = {"seq": 1, "side": "a", "kind": "play", "position": 0.0}
    cases = {
        "receipt_wrong": {**right, "bytes": audio_proof.answer_for(b"\0" * 400_000, right["token"])},
        "bad_receipt": {**right, "side": "b"},  # side a's token offered for clip b
        "bad_token": {**right, "token": right["token"][:-4] + "AAAA"},
    }
    for code, receipt in cases.items():
        refused = _post(client, events_url, {"events": [event], "receipts": [receipt]})
        assert refused.status_code == 400 and refused.json()["code"] in (code, "bad_receipt"), (code, refused.content)
    # A token for another battle's clip is for another URL: refused.
    other = ready_battle(visitor, arena_system("proof-c"), arena_system("proof-d"))
    fetch_audio(other, side="a", at=start, proven=False)
    foreign = _post(client, events_url, {"events": [event], "receipts": [arena_receipt(other, side="a", at=start)]})
    assert foreign.status_code == 400 and foreign.json()["code"] == "bad_receipt"
    assert not BattleAudioReceipt.objects.exists() and not ListenEvent.objects.filter(battle=battle).exists()
    # An empty post is refused with what to send.
    empty = _post(client, events_url, {})
    assert empty.status_code == 400 and b"at least one event or one receipt" in empty.content


def test_a_receipt_for_bytes_sent_again_after_its_challenge_is_refused(battle_and_client):
    battle, visitor, client = battle_and_client
    start = timezone.now() - timedelta(seconds=60)
    fetch_audio(battle, side="a", at=start, proven=False)
    receipt = arena_receipt(battle, side="a", at=start)
    # A small Range fetch of the challenged bytes after the challenge: the answer could come from it alone.
    offset, length = audio_proof.token_ranges(receipt["token"])[0]
    from arena.audio import battle_audio_fetch_record

    battle_audio_fetch_record(battle=battle, side="a", served=(offset, offset + length - 1, 1), now=start + timedelta(seconds=2))
    from common.deferred import deferred_rows

    deferred_rows.flush()
    events_url, _ = _urls(battle)
    refused = _post(client, events_url, {"receipts": [receipt]})
    assert refused.status_code == 400 and refused.json()["code"] == "receipt_refetched"


def test_the_served_clip_carries_a_challenge_for_its_own_url(battle_and_client):
    battle, visitor, client = battle_and_client
    response = client.get(battle_audio_url(battle, "a"))
    body = b"".join(response.streaming_content)
    challenge = audio_proof.challenge_open(response[audio_proof.HEADER])
    assert challenge["path"] == battle_audio_url(battle, "a") and (challenge["first"], challenge["last"]) == (0, len(body) - 1)
    assert str(battle.clip_a.public_id) not in response[audio_proof.HEADER]
