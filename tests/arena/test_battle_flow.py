"""A battle through the HTTP API: terms, prompt rules, blind generation, server-side listening, one vote, reveal, limits."""

from __future__ import annotations

import io
import json
from datetime import timedelta

import pytest
import soundfile as sf
from django.apps import apps
from django.conf import settings
from django.urls import reverse
from django.utils import timezone

from arena.models import AdapterKind, Battle, BattleAudioFetch, ListenEvent, RejectedVote, Vote
from arena.services import ArenaError, listen_events_record, vote_submit
from common import audio_proof, listening

from .conftest import arena_system, fetch_audio, listen, ready_battle, send, visitor_client, visitor_with_terms

CREATE = reverse("arena:api-battle-create")


def detail_url(battle_id):
    return reverse("arena:api-battle-detail", kwargs={"public_id": battle_id})


def events_url(battle_id):
    return reverse("arena:api-battle-events", kwargs={"public_id": battle_id})


def vote_url(battle_id):
    return reverse("arena:api-battle-vote", kwargs={"public_id": battle_id})


def post(client, url, body):
    return client.post(url, data=json.dumps(body), content_type="application/json")


@pytest.fixture
def demo_pair(db):
    return arena_system("aurora", adapter_config={"demo": "aurora"}), arena_system("clipper", adapter_config={"demo": "clipper"})


def test_battle_needs_accepted_terms(client, demo_pair):
    response = post(client, CREATE, {"prompt": "calm ambient pads"})
    assert response.status_code == 403 and response.json()["code"] == "terms_required"
    assert not Battle.objects.exists()


def test_terms_acceptance_sets_cookie_and_stores_version(client, db):
    response = post(client, reverse("arena:api-terms"), {"accept": True, "version": settings.ARENA_TERMS_VERSION})
    assert response.status_code == 200
    cookie = response.cookies[settings.ARENA_VISITOR_COOKIE]
    assert cookie["httponly"]
    visitor = apps.get_model("arena", "Visitor").objects.get()
    assert visitor.terms_version == settings.ARENA_TERMS_VERSION and visitor.terms_accepted_at is not None
    # Only hashes of the cookie are stored.
    assert cookie.value not in (visitor.cookie_hash, visitor.pseudonym)
    stale = post(client, reverse("arena:api-terms"), {"accept": True, "version": "0"})
    assert stale.status_code == 409


def test_full_battle_on_demo_systems_reveals_only_after_the_vote(demo_pair, django_capture_on_commit_callbacks):
    visitor, cookie = visitor_with_terms()
    client = visitor_client(cookie)
    with django_capture_on_commit_callbacks(execute=True):
        created = post(client, CREATE, {"prompt": "Slow melancholic piano ballad in A minor"})
    assert created.status_code == 201, created.content
    pre_vote = [created.content]
    state = client.get(detail_url(created.json()["id"]))
    pre_vote.append(state.content)
    data = state.json()
    assert data["status"] == "ready" and data["reveal"] is None and data["vote"] is None
    assert data["progress"] == {"ready": 2, "total": 2}
    battle = Battle.objects.get(public_id=data["id"])
    assert battle.clip_a.duration == pytest.approx(settings.ARENA_CLIP_SECONDS, abs=0.01)
    assert battle.clip_a.sample_rate == battle.clip_b.sample_rate == settings.ARENA_SAMPLE_RATE
    assert battle.generation_seconds_a is not None and battle.is_instrumental

    # Everything the visitor can fetch before voting: JSON, the page, both audio files with headers.
    for side in ("a", "b"):
        audio = client.get(data["audio"][side])
        assert audio.status_code == 200
        body = b"".join(audio.streaming_content)
        samples, rate = sf.read(io.BytesIO(body))
        assert rate == settings.ARENA_SAMPLE_RATE and len(samples) > rate
        pre_vote.append(body)
        pre_vote.append(json.dumps(dict(audio.headers)).encode())
        assert data["audio"][side] == f"/arena/audio/{data['id']}/{side}/"
        # The page's proof of receiving the clip, as arena.js sends it with its next events post.
        receipt = {"side": side, "token": audio[audio_proof.HEADER], "bytes": audio_proof.answer_for(body, audio[audio_proof.HEADER])}
        proved = post(client, events_url(data["id"]), {"receipts": [receipt]})
        assert proved.status_code == 200, proved.content
    pre_vote.append(client.get(reverse("arena:arena")).content)
    # Pretend the clips became ready and were fetched a minute ago, so the listening below happened after that.
    Battle.objects.filter(pk=battle.pk).update(ready_at=timezone.now() - timedelta(seconds=60))
    assert BattleAudioFetch.objects.filter(battle=battle).count() == 2
    BattleAudioFetch.objects.filter(battle=battle).update(served_at=timezone.now() - timedelta(seconds=60))
    battle.refresh_from_db()
    start = timezone.now() - timedelta(seconds=30)
    end = listen(battle, visitor, side="a", seconds=6, start=start)
    listen(battle, visitor, side="b", seconds=6, start=end)
    pre_vote.append(post(client, events_url(data["id"]), {"events": [{"seq": 1000, "side": "a", "kind": "pause", "position": 6.0}]}).content)
    blob = b"\n".join(pre_vote).lower()
    for system in demo_pair:
        for word in (system.system.name, system.system.organisation):
            if word:
                assert word.lower().encode() not in blob, f"{word!r} leaked before the vote"
    assert b"generation_seconds" not in b"\n".join(pre_vote[:2])

    voted = post(client, vote_url(data["id"]), {"vote": "a", "feedback": "warmer piano"})
    assert voted.status_code == 201, voted.content
    reveal = voted.json()["reveal"]
    assert {reveal["a"]["system"], reveal["b"]["system"]} == {"aurora", "clipper"}
    assert reveal["a"]["system"] == battle.system_a.system.name
    assert reveal["a"]["generation_seconds"] == battle.generation_seconds_a
    vote = Vote.objects.get()
    assert vote.choice == "a" and vote.listen_seconds_a >= 5 and vote.feedback == "warmer piano"


def test_vote_without_server_observed_listening_is_refused(db):
    visitor, cookie = visitor_with_terms()
    battle = ready_battle(visitor, arena_system("s1"), arena_system("s2"))
    client = visitor_client(cookie)
    response = post(client, vote_url(battle.public_id), {"vote": "a"})
    assert response.status_code == 403
    body = response.json()
    assert body["code"] == "listen_required" and body["heard"] == {"a": 0.0, "b": 0.0}
    assert not Vote.objects.exists()
    assert RejectedVote.objects.get().reason == "listen_required"


def test_listening_is_measured_on_the_server_clock(db):
    visitor, _ = visitor_with_terms()
    battle = ready_battle(visitor, arena_system("s1"), arena_system("s2"), ready_ago=120)
    t0 = timezone.now() - timedelta(seconds=100)
    listen(battle, visitor, side="a", seconds=6, start=t0)
    listen(battle, visitor, side="b", seconds=1, start=t0 + timedelta(seconds=10))
    with pytest.raises(ArenaError) as err:
        vote_submit(battle=battle, visitor=visitor, choice="b")
    assert err.value.code == "listen_required" and err.value.extra["heard"] == {"a": 6.0, "b": 1.0}
    assert "clip B (1.0 s of 5 s)" in err.value.message

    # A page claiming a long play by its own clock, in one burst, earns at most the half
    # second a play may have started before it arrived.
    burst = t0 + timedelta(seconds=50)
    listen_events_record(
        battle=battle,
        visitor=visitor,
        events=[{"seq": 100, "side": "b", "kind": "play", "client_time": 0}, {"seq": 101, "side": "b", "kind": "tick", "client_time": 60000},
                {"seq": 102, "side": "b", "kind": "pause", "client_time": 90000}],
        now=burst,
    )
    battle.refresh_from_db()
    assert battle.listening["b"]["seconds"] == pytest.approx(1.5)
    # "play" and then silence: only up to the gap limit counts, not the whole wall-clock time.
    send(battle, visitor, [(60, "play", "b"), (90, "pause", "b")], start=t0)
    battle.refresh_from_db()
    assert battle.listening["b"]["seconds"] == pytest.approx(1.5 + listening.MAX_EVENT_GAP_SECONDS)
    vote = vote_submit(battle=battle, visitor=visitor, choice="b")
    assert vote.listen_seconds_b >= 5.0 and vote.choice == "b"


def test_audio_never_fetched_or_fetched_after_the_listening_counts_for_nothing(db):
    visitor, _ = visitor_with_terms()
    battle = ready_battle(visitor, arena_system("s1"), arena_system("s2"), ready_ago=120)
    t0 = timezone.now() - timedelta(seconds=100)
    send(battle, visitor, [(0, "play", "a")] + [(k, "tick", "a") for k in range(1, 9)] + [(8, "pause", "a")], start=t0)
    fetch_audio(battle, side="a", at=t0 + timedelta(seconds=5))  # only the last three seconds came after the audio was sent
    listen(battle, visitor, side="b", seconds=8, start=t0 + timedelta(seconds=20))
    with pytest.raises(ArenaError) as err:
        vote_submit(battle=battle, visitor=visitor, choice="a")
    battle.refresh_from_db()
    # The record is refreshed by the next events post; the vote reads what it holds.
    assert battle.listening["a"]["seconds"] == pytest.approx(3.0)
    assert err.value.extra["heard"] == {"a": 3.0, "b": 8.0}


def test_playing_both_clips_at_once_counts_once_through_the_api(db):
    """The scripted case: `play` for both clips together, ticks for both, 8 s of wall time: no double credit."""
    visitor, cookie = visitor_with_terms()
    battle = ready_battle(visitor, arena_system("s1"), arena_system("s2"), ready_ago=120)
    client = visitor_client(cookie)
    t0 = timezone.now() - timedelta(seconds=60)
    for side in ("a", "b"):
        fetch_audio(battle, side=side, at=t0)
    send(battle, visitor, [(1, "play", "a"), (1, "play", "b")] + [(1 + k, kind, side) for k in range(1, 9) for kind, side in (("tick", "a"), ("tick", "b"))], start=t0)
    battle.refresh_from_db()
    heard = battle.listening
    assert heard["a"]["seconds"] + heard["b"]["seconds"] <= 8.5 + 1e-6
    assert (heard["a"]["seconds"], heard["b"]["seconds"]) == (0.5, 8.0)
    response = post(client, vote_url(battle.public_id), {"vote": "a"})
    assert response.status_code == 403 and response.json()["code"] == "listen_required"
    assert "clip A (0.5 s of 5 s)" in response.json()["detail"]
    assert not Vote.objects.exists()


def test_replayed_events_are_ignored(db):
    visitor, cookie = visitor_with_terms()
    battle = ready_battle(visitor, arena_system("s1"), arena_system("s2"), ready_ago=120)
    client = visitor_client(cookie)
    listen(battle, visitor, side="a", seconds=6, start=timezone.now() - timedelta(seconds=60))
    battle.refresh_from_db()
    seq = battle.listen_seq
    # The whole play of A posted again under its old numbers, as a script replaying a capture would.
    replay = [{"seq": n, "side": "b", "kind": "tick"} for n in range(1, seq + 1)]
    for _ in range(3):
        response = post(client, events_url(battle.public_id), {"events": replay})
        assert response.status_code == 200 and response.json()["accepted"] == 0 and response.json()["ignored"] == seq
    assert response.json()["heard"] == {"a": 6.0, "b": 0.0} and response.json()["last_seq"] == seq
    assert ListenEvent.objects.filter(battle=battle).count() == seq
    assert post(client, events_url(battle.public_id), {"events": [{"seq": seq + 2, "side": "b", "kind": "play"}, {"seq": seq + 1, "side": "b", "kind": "tick"}]}).status_code == 400


def test_a_battle_refuses_events_past_its_limit_and_keeps_what_it_had(settings, db):
    settings.ARENA_MAX_EVENTS_PER_BATTLE = 5
    visitor, _cookie = visitor_with_terms()
    battle = ready_battle(visitor, arena_system("s1"), arena_system("s2"), ready_ago=120)
    now = timezone.now()
    first = listen_events_record(battle=battle, visitor=visitor, events=[{"seq": n, "side": "a", "kind": "tick"} for n in range(1, 5)], now=now)
    assert first["accepted"] == 4 and first["last_seq"] == 4
    with pytest.raises(ArenaError) as refused:
        listen_events_record(battle=battle, visitor=visitor, events=[{"seq": n, "side": "a", "kind": "tick"} for n in range(5, 7)], now=now)
    assert refused.value.code == "too_many_events" and refused.value.status == 429
    battle.refresh_from_db()
    assert ListenEvent.objects.filter(battle=battle).count() == 4 and battle.listen_seq == 4 and battle.listening["events"] == 4
    # A replay adds nothing, so it is answered even at the limit; one more new event still fits.
    assert listen_events_record(battle=battle, visitor=visitor, events=[{"seq": 4, "side": "a", "kind": "tick"}], now=now)["ignored"] == 1
    assert listen_events_record(battle=battle, visitor=visitor, events=[{"seq": 5, "side": "a", "kind": "tick"}], now=now)["last_seq"] == 5


def test_second_vote_is_rejected_logged_and_never_overwrites(db):
    visitor, cookie = visitor_with_terms()
    battle = ready_battle(visitor, arena_system("s1"), arena_system("s2"), ready_ago=60)
    t0 = timezone.now() - timedelta(seconds=50)
    listen(battle, visitor, side="a", seconds=6, start=t0)
    listen(battle, visitor, side="b", seconds=6, start=t0 + timedelta(seconds=10))
    client = visitor_client(cookie)
    assert post(client, vote_url(battle.public_id), {"vote": "a"}).status_code == 201
    again = post(client, vote_url(battle.public_id), {"vote": "b"})
    assert again.status_code == 409 and again.json()["code"] == "already_voted"
    assert list(Vote.objects.values_list("choice", flat=True)) == ["a"]
    assert RejectedVote.objects.get().reason == "already_voted"
    # Listening events after the vote are refused too.
    late = post(client, events_url(battle.public_id), {"events": [{"seq": 999, "side": "a", "kind": "play"}]})
    assert late.status_code == 409


def test_other_visitors_cannot_see_vote_or_hear_a_battle(db):
    owner, _ = visitor_with_terms()
    _, stranger_cookie = visitor_with_terms()
    battle = ready_battle(owner, arena_system("s1"), arena_system("s2"))
    stranger = visitor_client(stranger_cookie)
    assert stranger.get(detail_url(battle.public_id)).status_code == 404
    assert post(stranger, vote_url(battle.public_id), {"vote": "a"}).status_code == 404
    assert stranger.get(reverse("arena:audio", kwargs={"public_id": battle.public_id, "side": "a"})).status_code == 404


def test_audio_supports_ranges_and_hides_the_clip_hash(db):
    visitor, cookie = visitor_with_terms()
    battle = ready_battle(visitor, arena_system("s1"), arena_system("s2"))
    client = visitor_client(cookie)
    url = reverse("arena:audio", kwargs={"public_id": battle.public_id, "side": "b"})
    response = client.get(url, HTTP_RANGE="bytes=0-99")
    assert response.status_code == 206 and response["Content-Range"].startswith("bytes 0-99/")
    assert battle.clip_b.sha256 not in json.dumps(dict(response.headers))
    assert client.get(reverse("arena:audio", kwargs={"public_id": battle.public_id, "side": "c"})).status_code == 404


def test_vote_rate_limit_answers_429_with_retry_after(settings, db):
    settings.ARENA_VOTE_RATE = "2/60"
    visitor, cookie = visitor_with_terms()
    battle = ready_battle(visitor, arena_system("s1"), arena_system("s2"))
    client = visitor_client(cookie)
    codes = [post(client, vote_url(battle.public_id), {"vote": "a"}).status_code for _ in range(2)]
    assert codes == [403, 403]  # not listened yet, but counted
    limited = post(client, vote_url(battle.public_id), {"vote": "a"})
    assert limited.status_code == 429
    assert 1 <= int(limited["Retry-After"]) <= 60
    assert limited.json()["code"] == "rate_limited"
    assert RejectedVote.objects.filter(reason="rate_limited").count() == 1


def test_ip_rate_limit_spans_visitors_and_stores_no_raw_ip(settings, db):
    settings.ARENA_IP_BATTLE_RATE = "2/60"
    arena_system("s1")
    arena_system("s2")
    statuses = []
    for _ in range(3):
        _, cookie = visitor_with_terms()
        statuses.append(post(visitor_client(cookie), CREATE, {"prompt": "calm ambient pads"}).status_code)
    assert statuses[:2] == [201, 201] and statuses[2] == 429
    battle = Battle.objects.first()
    assert battle.ip_hash and "203.0.113.7" not in battle.ip_hash
    for model in apps.get_app_config("arena").get_models():
        for row in model.objects.values():
            assert "203.0.113.7" not in json.dumps(row, default=str)


def test_daily_vote_cap(settings, db):
    settings.ARENA_DAILY_VOTE_CAP = 1
    visitor, _ = visitor_with_terms()
    s1, s2 = arena_system("s1"), arena_system("s2")
    for expected in ("ok", "daily_cap"):
        battle = ready_battle(visitor, s1, s2, ready_ago=60)
        t0 = timezone.now() - timedelta(seconds=50)
        listen(battle, visitor, side="a", seconds=6, start=t0)
        listen(battle, visitor, side="b", seconds=6, start=t0 + timedelta(seconds=10))
        if expected == "ok":
            vote_submit(battle=battle, visitor=visitor, choice="tie")
        else:
            with pytest.raises(ArenaError) as err:
                vote_submit(battle=battle, visitor=visitor, choice="tie")
            assert err.value.status == 429 and err.value.code == "daily_cap"
            assert 86000 < err.value.retry_after <= 86401


def test_moderation_refusal_is_machine_readable_and_creates_nothing(db):
    arena_system("s1")
    arena_system("s2")
    _, cookie = visitor_with_terms()
    response = post(visitor_client(cookie), CREATE, {"prompt": "A breakup song that sounds like T4ylor Sw1ft"})
    assert response.status_code == 422
    body = response.json()
    assert body["allowed"] is False and body["reasons"] == ["artist_reference"]
    assert not Battle.objects.exists()


def test_moderation_hook_is_pluggable(settings, db):
    settings.ARENA_MODERATION_HOOK = "tests.arena.test_battle_flow.refuse_kazoo"
    arena_system("s1")
    arena_system("s2")
    _, cookie = visitor_with_terms()
    response = post(visitor_client(cookie), CREATE, {"prompt": "a kazoo concerto"})
    assert response.status_code == 422 and response.json()["reasons"] == ["kazoo"]


def refuse_kazoo(prompt, lyrics=""):
    return {"allowed": "kazoo" not in prompt, "reasons": ["kazoo"] if "kazoo" in prompt else []}


@pytest.mark.parametrize("prompt,code", [("", "prompt_too_short"), ("x" * 501, "prompt_too_long")])
def test_prompt_limits(db, prompt, code):
    arena_system("s1")
    arena_system("s2")
    _, cookie = visitor_with_terms()
    response = post(visitor_client(cookie), CREATE, {"prompt": prompt})
    assert response.status_code == 400 and response.json()["code"] == code


def test_prebaked_prompt_is_flagged_and_vocal_prompt_routed(db, django_capture_on_commit_callbacks):
    from arena.seed import arena_seed

    arena_seed()
    _, cookie = visitor_with_terms()
    client = visitor_client(cookie)
    drawn = client.get(reverse("arena:api-prompt-random")).json()
    with django_capture_on_commit_callbacks(execute=True):
        created = post(client, CREATE, drawn)
    battle = Battle.objects.get(public_id=created.json()["id"])
    assert battle.is_prebaked is True
    assert battle.is_instrumental is (not drawn["lyrics"] and "sing" not in drawn["prompt"].lower())
    with django_capture_on_commit_callbacks(execute=True):
        typed = post(client, CREATE, {"prompt": "a duet with two singers", "lyrics": "hello there"})
    typed_battle = Battle.objects.get(public_id=typed.json()["id"])
    assert typed_battle.is_prebaked is False and typed_battle.is_instrumental is False


def test_csrf_is_enforced_for_anonymous_visitors(db):
    visitor, cookie = visitor_with_terms()
    battle = ready_battle(visitor, arena_system("s1"), arena_system("s2"))
    client = visitor_client(cookie, csrf=True)
    response = post(client, vote_url(battle.public_id), {"vote": "a"})
    assert response.status_code == 403 and "CSRF" in response.json()["detail"]


def test_failed_generation_fails_the_battle_without_naming_the_system(db, django_capture_on_commit_callbacks):
    arena_system("fine")
    broken = arena_system("broken-server", adapter_kind=AdapterKind.HTTP, adapter_config={"url": "http://127.0.0.1:9", "timeout": 1, "retries": 0})
    _, cookie = visitor_with_terms()
    client = visitor_client(cookie)
    with django_capture_on_commit_callbacks(execute=True):
        created = post(client, CREATE, {"prompt": "calm ambient pads"})
    state = client.get(detail_url(created.json()["id"])).json()
    assert state["status"] == "failed" and state["audio"] is None
    assert "broken" not in json.dumps(state)
    broken.refresh_from_db()
    assert broken.health == "unhealthy"


def test_events_are_validated(db):
    visitor, cookie = visitor_with_terms()
    battle = ready_battle(visitor, arena_system("s1"), arena_system("s2"))
    client = visitor_client(cookie)
    assert post(client, events_url(battle.public_id), {"events": [{"seq": 1, "side": "c", "kind": "play"}]}).status_code == 400
    assert post(client, events_url(battle.public_id), {"events": [{"side": "a", "kind": "play"}]}).status_code == 400
    assert post(client, events_url(battle.public_id), {"events": []}).status_code == 400
    assert not ListenEvent.objects.exists()


def test_pre_release_systems_stay_unnamed_after_the_vote(db):
    from arena.selectors import PRIVATE_LABEL

    visitor, cookie = visitor_with_terms()
    battle = ready_battle(visitor, arena_system("secret-v2", is_private=True), arena_system("public-one"), ready_ago=60)
    t0 = timezone.now() - timedelta(seconds=50)
    listen(battle, visitor, side="a", seconds=6, start=t0)
    listen(battle, visitor, side="b", seconds=6, start=t0 + timedelta(seconds=10))
    response = post(visitor_client(cookie), vote_url(battle.public_id), {"vote": "b"})
    assert response.status_code == 201
    assert response.json()["reveal"]["a"]["system"] == PRIVATE_LABEL and b"secret-v2" not in response.content
    assert response.json()["reveal"]["b"]["system"] == "public-one"
    # The vote is kept (and goes into the release under the real name).
    assert Vote.objects.get().battle.system_a.system.name == "secret-v2"


def test_a_retry_with_the_same_key_gets_the_stored_vote_and_a_revote_is_refused(db):
    visitor, _ = visitor_with_terms()
    battle = ready_battle(visitor, arena_system("s1"), arena_system("s2"), ready_ago=120)
    t0 = timezone.now() - timedelta(seconds=100)
    listen(battle, visitor, side="a", seconds=6, start=t0)
    listen(battle, visitor, side="b", seconds=6, start=t0 + timedelta(seconds=10))
    first = vote_submit(battle=battle, visitor=visitor, choice="b", idempotency_key="k1")
    again = vote_submit(battle=battle, visitor=visitor, choice="b", idempotency_key="k1")
    assert again.pk == first.pk and getattr(again, "replayed", False)
    with pytest.raises(ArenaError) as exc:
        vote_submit(battle=battle, visitor=visitor, choice="a", idempotency_key="k2")
    assert exc.value.code == "already_voted"
    assert Vote.objects.filter(battle=battle).count() == 1
    assert RejectedVote.objects.filter(battle=battle, reason="already_voted").count() == 1


def _heard_b_before_its_note_was_written():
    """A battle whose clip B was played for 6 s from t0 + 10 s while no note of B's audio was stored yet."""
    visitor, cookie = visitor_with_terms()
    battle = ready_battle(visitor, arena_system("s1"), arena_system("s2"), ready_ago=120)
    t0 = timezone.now() - timedelta(seconds=100)
    listen(battle, visitor, side="a", seconds=6, start=t0)
    send(battle, visitor, [(0.0, "play", "b")] + [(float(k), "tick", "b") for k in range(1, 7)] + [(6.0, "pause", "b")], start=t0 + timedelta(seconds=10))
    return battle, cookie, t0


def test_an_audio_note_that_reaches_the_database_after_the_last_post_still_counts_at_the_vote(db):
    # With several server processes the audio GET's note is written a moment after the response by the process that
    # served it; the vote counts once more from the rows before refusing, with the note's own time of sending.
    battle, cookie, t0 = _heard_b_before_its_note_was_written()
    assert Battle.objects.get(pk=battle.pk).listening["b"]["seconds"] == 0.0
    fetch_audio(battle, side="b", at=t0 + timedelta(seconds=9))
    response = post(visitor_client(cookie), vote_url(battle.public_id), {"vote": "b", "idempotency_key": "late-note"})
    assert response.status_code == 201, response.content
    vote = Vote.objects.get(battle=battle)
    # 6 s of play plus the half second a play may start before its arrival (the audio was sent before that).
    assert vote.listen_seconds_b == pytest.approx(6.5)
    assert Battle.objects.get(pk=battle.pk).listening["b"]["seconds"] == pytest.approx(6.5)


def test_a_late_note_of_audio_sent_after_the_listening_still_counts_for_nothing_at_the_vote(db):
    battle, cookie, t0 = _heard_b_before_its_note_was_written()
    fetch_audio(battle, side="b", at=t0 + timedelta(seconds=30))
    response = post(visitor_client(cookie), vote_url(battle.public_id), {"vote": "b", "idempotency_key": "late-send"})
    assert response.status_code == 403 and response.json()["code"] == "listen_required", response.content
    assert not Vote.objects.filter(battle=battle).exists()
