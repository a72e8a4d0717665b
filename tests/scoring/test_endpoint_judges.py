"""The audio-LLM judges on an OpenAI-compatible endpoint (family: openai), against a fake server on 127.0.0.1.

The fake follows the documented chat completions shapes: audio arrives as input_audio parts (base64 WAV), answers
carry `usage`, and AQA reads `logprobs.content[0].top_logprobs`.
"""

from __future__ import annotations

import json
import logging
import math
import time

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from annotation.services import clip_ingest_array, condition_get_or_create, pair_get_or_create
from scoring import services
from scoring.judges import JudgeConfig, adapter_for, prompts
from scoring.models import Judge, ScoringRun, Verdict
from tests.factories import StudyFactory

from .fake_chat_endpoint import FakeChatEndpoint, Reply, audio_parts, chat_reply, top_logprobs_reply

# The fake server answers from a thread of this process.
pytestmark = pytest.mark.engine

KEY = "sk-test-7f3a9c-do-not-show"


def cmi(mq="model_a", inf="model_a", scores=(7.0, 5.0, 6.5, 4.0), reason="r") -> str:
    return json.dumps({"music_quality": mq, "instruction_following": inf, "MQ_score_a": scores[0], "MQ_score_b": scores[1], "IF_score_a": scores[2], "IF_score_b": scores[3], "reason": reason})


def loud_first(request) -> bool:
    """Whether the first candidate heard (second-to-last audio part) is the loud clip."""
    return float(np.abs(audio_parts(request)[-2]).max()) > 0.25


@pytest.fixture
def loopback(settings):
    settings.JUDGE_ENDPOINT_ALLOW_LOOPBACK = True


def _pair(name: str):
    study = StudyFactory(name=name)
    condition, _ = condition_get_or_create(prompt="calm piano with strings", lyrics="")
    t = np.arange(16000) / 16000
    loud = clip_ingest_array(audio=(0.5 * np.sin(2 * np.pi * 300 * t)).astype(np.float32), sample_rate=16000, fmt="WAV")[0]
    quiet = clip_ingest_array(audio=(0.1 * np.sin(2 * np.pi * 500 * t)).astype(np.float32), sample_rate=16000, fmt="WAV")[0]
    pair, _ = pair_get_or_create(study=study, condition=condition, clip_a=loud, clip_b=quiet)
    return pair


def _judge(server, kind=Judge.Kind.LLM_PAIRWISE, **options) -> Judge:
    base = {"family": "openai", "endpoint": server.base_url, "model": "served", "backoff_s": 0.01, "timeout_s": 5}
    return Judge.objects.create(key=f"ep-{kind}-{len(server.requests)}-{time.monotonic_ns()}", kind=kind, options={**base, **options})


def _run(judge, pair):
    run = services.run_create(judge=judge, pair_ids=[pair.pk])
    from scoring.tasks import run_start

    run_start.apply(args=(run.pk,))
    run.refresh_from_db()
    return run


@pytest.mark.django_db
def test_both_orders_are_sent_with_the_local_prompts_and_a_consistent_answer_picks_a_clip(loopback):
    # Prefers the loud clip for musicality and the quiet one for alignment, whichever is heard first.
    def respond(request, index):
        first = loud_first(request)
        return chat_reply(cmi("model_a" if first else "model_b", "model_b" if first else "model_a"), prompt_tokens=300 + index, completion_tokens=40)

    pair = _pair("ep-consistent")
    with FakeChatEndpoint(respond) as server:
        run = _run(_judge(server), pair)
    verdict = Verdict.objects.get(run=run)
    assert verdict.status == Verdict.Status.OK
    assert (verdict.musicality_choice_id, verdict.alignment_choice_id) == (pair.clip_a_id, pair.clip_b_id)
    assert len(server.requests) == 2
    orders = [loud_first(r) for r in server.requests]
    assert sorted(orders) == [False, True]  # A then B, and B then A
    system, parts = prompts.pairwise_parts(prompt="calm piano with strings", lyrics="", has_reference=False)
    for request in server.requests:
        assert request["model"] == "served" and request["temperature"] == 0 and request["max_tokens"] == 256
        assert request["messages"][0] == {"role": "system", "content": system}
        content = request["messages"][1]["content"]
        assert [c.get("text") for c in content if c["type"] == "text"] == [p["text"] for p in parts if p["type"] == "text"]
        assert [c["input_audio"]["format"] for c in content if c["type"] == "input_audio"] == ["wav", "wav"]
    # The clips arrive as 16 kHz WAV, to 16-bit rounding.
    forward = server.requests[orders.index(True)]
    heard = audio_parts(forward)
    assert len(heard[0]) == 16000 and np.abs(heard[0]).max() == pytest.approx(0.5, abs=1e-3)
    usage = run.summary["endpoint"]
    assert usage["requests"] == 2 and usage["failed"] == 0 and usage["retries"] == 0
    assert usage["prompt_tokens"] == 601 and usage["completion_tokens"] == 80 and usage["total_tokens"] == 681
    assert usage["latency_p50_s"] > 0 and usage["latency_p95_s"] >= usage["latency_p50_s"]
    assert usage["failed_verdicts"] == 0
    assert verdict.details["endpoint"]["requests"] == 2
    # The run's page shows the figures.
    staff = get_user_model().objects.create_user(username="ep-staff", password="pw", is_staff=True, is_superuser=True)
    client = Client()
    client.force_login(staff)
    page = client.get(reverse("scoring:run-detail", args=[run.pk])).content.decode()
    assert 'id="endpoint-usage"' in page and "prompt tokens <strong>601</strong>" in page


@pytest.mark.django_db
def test_an_answer_that_flips_with_the_order_is_discarded(loopback):
    pair = _pair("ep-biased")
    with FakeChatEndpoint(lambda request, index: chat_reply(cmi("model_a", "model_a"))) as server:
        run = _run(_judge(server), pair)
    verdict = Verdict.objects.get(run=run)
    assert verdict.status == Verdict.Status.DISCARDED
    assert verdict.details["consistent"] == {"alignment": False, "musicality": False}
    assert run.summary["verdicts"]["discarded_share"] == 1.0


@pytest.mark.django_db
def test_a_malformed_answer_is_a_failed_verdict_with_the_raw_text(loopback):
    def respond(request, index):
        return chat_reply(cmi() if loud_first(request) else "I like the second one more.")

    pair = _pair("ep-malformed")
    with FakeChatEndpoint(respond) as server:
        run = _run(_judge(server), pair)
    verdict = Verdict.objects.get(run=run)
    assert verdict.status == Verdict.Status.FAILED
    assert verdict.details["raw"]["ba"] == "I like the second one more."
    assert "no JSON object" in verdict.details["error"]
    assert run.summary["endpoint"]["failed_verdicts"] == 1 and run.summary["endpoint"]["failed"] == 0


@pytest.mark.django_db
def test_a_slow_endpoint_hits_the_deadline_and_fails_its_pair(loopback):
    pair = _pair("ep-slow")
    with FakeChatEndpoint(lambda request, index: Reply(**{**chat_reply(cmi()).__dict__, "delay": 3.0})) as server:
        started = time.monotonic()
        run = _run(_judge(server, timeout_s=0.4, concurrency=2), pair)
        elapsed = time.monotonic() - started
    verdict = Verdict.objects.get(run=run)
    assert verdict.status == Verdict.Status.FAILED
    assert "0.4 s deadline" in verdict.details["error"]
    assert elapsed < 2.5  # two requests in parallel, each cut at 0.4 s, never retried
    assert len(server.requests) == 2
    assert run.summary["endpoint"]["failed"] == 2 and run.summary["endpoint"]["retries"] == 0


@pytest.mark.django_db
def test_503_is_retried_with_backoff_then_the_answer_counts(loopback):
    seen = {}

    def respond(request, index):
        key = loud_first(request)
        seen[key] = seen.get(key, 0) + 1
        if seen[key] == 1:
            return Reply(status=503, body={"error": {"message": "overloaded"}}, headers={"Retry-After": "0.05"})
        first = key
        return chat_reply(cmi("model_a" if first else "model_b", "model_a" if first else "model_b"))

    pair = _pair("ep-retry")
    with FakeChatEndpoint(respond) as server:
        run = _run(_judge(server, concurrency=1), pair)
    verdict = Verdict.objects.get(run=run)
    assert verdict.status == Verdict.Status.OK
    assert len(server.requests) == 4
    assert run.summary["endpoint"]["retries"] == 2 and run.summary["endpoint"]["failed"] == 0
    # Out of retries, a request fails with the last status.
    pair2 = _pair("ep-retry-out")
    with FakeChatEndpoint(lambda request, index: Reply(status=503, body="busy")) as server:
        run = _run(_judge(server, retries=1), pair2)
    verdict = Verdict.objects.get(run=run)
    assert verdict.status == Verdict.Status.FAILED and "HTTP 503" in verdict.details["error"]
    assert len(server.requests) == 4  # 2 orders x (1 try + 1 retry)


@pytest.mark.django_db
def test_the_api_key_is_sent_but_never_stored_or_logged(loopback, monkeypatch, caplog):
    monkeypatch.setenv("LAB_KEY", KEY)
    caplog.set_level(logging.DEBUG)

    def respond(request, index):
        # A server that echoes the credentials in its error text.
        return Reply(status=401, body={"error": {"message": f"bad key Bearer {KEY}"}})

    pair = _pair("ep-key")
    with FakeChatEndpoint(respond) as server:
        judge = _judge(server, api_key_env="LAB_KEY")
        run = _run(judge, pair)
    assert server.headers[0]["Authorization"] == f"Bearer {KEY}"
    verdict = Verdict.objects.get(run=run)
    assert verdict.status == Verdict.Status.FAILED and "HTTP 401" in verdict.details["error"]
    stored = json.dumps([verdict.details, verdict.rationale, run.summary, run.error, judge.options], default=str)
    assert "[api key]" in stored and KEY not in stored
    assert KEY not in caplog.text
    staff = get_user_model().objects.create_user(username="ep-key-staff", password="pw", is_staff=True, is_superuser=True)
    client = Client()
    client.force_login(staff)
    for url in (reverse("scoring:run-detail", args=[run.pk]), reverse("scoring:judge-list")):
        page = client.get(url)
        assert page.status_code == 200 and KEY not in page.content.decode()
    # The key may not be put in the options, which pages show.
    state = adapter_for(JudgeConfig(key="x", kind="llm_pairwise", options={"family": "openai", "endpoint": server.base_url, "model": "m", "api_key": KEY})).availability()
    assert not state.available and "environment variable" in state.reason and KEY not in state.reason
    monkeypatch.delenv("LAB_KEY")
    state = adapter_for(JudgeConfig(key="x", kind="llm_pairwise", options={"family": "openai", "endpoint": server.base_url, "model": "m", "api_key_env": "LAB_KEY"})).availability()
    assert not state.available and "LAB_KEY" in state.reason


@pytest.mark.django_db
@pytest.mark.parametrize("kind", [Judge.Kind.AQA, Judge.Kind.RUBRIC])
def test_aqa_and_rubric_read_yes_and_no_from_the_top_logprobs(loopback, kind):
    # Loud clip: Yes is likelier; quiet clip: No is, and for the quiet one "Yes" is missing from the top list.
    def respond(request, index):
        if float(np.abs(audio_parts(request)[-1]).max()) > 0.25:
            return top_logprobs_reply([("Yes", -0.2), (" No", -1.8), ("yes", -4.0)])
        return top_logprobs_reply([("No", -0.1), ("Maybe", -3.0)])

    pair = _pair(f"ep-{kind}")
    with FakeChatEndpoint(respond) as server:
        run = _run(_judge(server, kind=kind), pair)
    verdict = Verdict.objects.get(run=run)
    assert verdict.status == Verdict.Status.OK
    loud = math.exp(-0.2) / (math.exp(-0.2) + math.exp(-1.8))
    quiet = math.exp(-3.0) / (math.exp(-3.0) + math.exp(-0.1))  # Yes bounded by the smallest listed logprob
    assert verdict.alignment_score_a == pytest.approx(loud) and verdict.alignment_score_b == pytest.approx(quiet)
    assert verdict.alignment_choice_id == pair.clip_a_id
    for request in server.requests:
        assert (request["max_tokens"], request["logprobs"], request["top_logprobs"]) == (1, True, 20)
    assert run.summary["endpoint"]["bounded_yes_no"] >= 1
    assert run.summary["endpoint"]["requests"] == len(server.requests)


@pytest.mark.django_db
def test_aqa_on_a_server_without_logprobs_fails_with_the_reason(loopback):
    pair = _pair("ep-nologprobs")
    with FakeChatEndpoint(lambda request, index: chat_reply("Yes")) as server:
        run = _run(_judge(server, kind=Judge.Kind.AQA), pair)
    verdict = Verdict.objects.get(run=run)
    assert verdict.status == Verdict.Status.FAILED
    assert "no log-probabilities" in verdict.details["error"]
    assert run.state == ScoringRun.State.DONE


@pytest.mark.django_db
def test_loopback_is_refused_unless_the_setting_allows_it(settings):
    settings.JUDGE_ENDPOINT_ALLOW_LOOPBACK = False
    pair = _pair("ep-refused")
    with FakeChatEndpoint(lambda request, index: chat_reply(cmi())) as server:
        run = _run(_judge(server), pair)
    verdict = Verdict.objects.get(run=run)
    assert verdict.status == Verdict.Status.FAILED
    assert "loopback" in verdict.details["error"] and "JUDGE_ENDPOINT_ALLOW_LOOPBACK" in verdict.details["error"]
    assert server.requests == []


def test_audio_url_parts_for_older_vllm_and_bad_options_are_refused():
    from scoring.judges.openai_backend import OpenAIChatBackend

    backend = OpenAIChatBackend({"endpoint": "http://127.0.0.1:1/v1", "model": "m", "audio_part": "audio_url"})
    wave = np.zeros(1600, np.float32)
    messages = backend.messages("sys", [{"type": "audio", "slot": "clip"}, {"type": "text", "text": "q"}], [wave], {})
    assert messages[1]["content"][0]["audio_url"]["url"].startswith("data:audio/wav;base64,")
    for options, message in [
        ({"model": "m"}, "no endpoint"),
        ({"endpoint": "ftp://x/v1", "model": "m"}, "not an http"),
        ({"endpoint": "http://u:p@x/v1", "model": "m"}, "credentials"),
        ({"endpoint": "http://x/v1"}, "no model"),
        ({"endpoint": "http://x/v1", "model": "m", "timeout_s": 0}, "timeout_s"),
        ({"endpoint": "http://x/v1", "model": "m", "audio_part": "mp3"}, "audio_part"),
    ]:
        state = adapter_for(JudgeConfig(key="x", kind="aqa", options={"family": "openai", **options})).availability()
        assert not state.available and message in state.reason, (options, state.reason)
