"""The audio-LLM judges on an OpenAI-compatible chat completions endpoint (vLLM's `vllm serve`, or a lab's).

A drop-in backend for `llm_pairwise`, `aqa` and `rubric` (option `family: openai`): the same requests the
transformers backend gets (system text, parts, 16 kHz waves) become `POST {endpoint}/chat/completions` with the
audio as `input_audio` content parts (base64 WAV, OpenAI's chat format, which vLLM also reads) or, with option
`audio_part: audio_url`, as `audio_url` data URLs (vLLM's own part type). Greedy text (`temperature: 0`) answers
the pairwise prompt; AQA's P(Yes) / (P(Yes) + P(No)) comes from the first answer token's `top_logprobs`, so it
needs a server that returns log-probabilities (vLLM does, up to its `--max-logprobs`, 20 by default); a server that
returns none fails the judge with that reason instead of a guessed score.

Each request has one deadline for all it does (connect, send, answer), retries 429 and 5xx answers and refused or
reset connections with exponential backoff (honouring Retry-After), and records its latency, token usage (the
answer's `usage`) and attempts; the judges store those records with what each request produced, and a run sums
them (scoring.selectors.run_endpoint_usage).

The API key is read from the environment variable the option `api_key_env` names, never from the options (which
pages show), and it is cut out of every error text. The platform checks the endpoint's address before each request
(runtime.use_endpoint_check); as a library, requests go where the endpoint says.
"""

from __future__ import annotations

import base64
import http.client
import io
import json
import math
import os
import random
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from urllib.parse import urlsplit

import numpy as np

from .base import JudgeOutputError, JudgeUnavailable
from .runtime import endpoint_check

SAMPLE_RATE = 16000
DEFAULT_KEY_ENV = "AUDITORIUM_JUDGE_API_KEY"
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
AUDIO_PARTS = ("input_audio", "audio_url")


@dataclass
class RequestRecord:
    """What one request cost: seconds from the first attempt to the answer, tokens from `usage`, attempts."""

    latency_s: float = 0.0
    attempts: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    error: str = ""
    timed_out: bool = False
    # AQA only: one of Yes/No was missing from the top log-probabilities, so its probability is the
    # smallest listed one (an upper bound), which pulls the score towards 0.5.
    bounded: bool = False

    def as_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v not in ("", False) or k in ("latency_s", "attempts")}


class Answer(str):
    """A text answer carrying its RequestRecord (`record`); an empty Answer with `error` set when the request failed."""

    record: RequestRecord

    @property
    def error(self) -> str:
        return self.record.error


class Probability(float):
    """P(Yes) carrying its RequestRecord."""

    record: RequestRecord


def _answer(text: str, record: RequestRecord) -> Answer:
    out = Answer(text)
    out.record = record
    return out


def _probability(value: float, record: RequestRecord) -> Probability:
    out = Probability(value)
    out.record = record
    return out


def summarise(records: list[RequestRecord]) -> dict:
    """The records of the requests behind one verdict or clip score, as stored with it."""
    return {
        "requests": len(records),
        "failed": sum(1 for r in records if r.error),
        "attempts": sum(r.attempts for r in records),
        "prompt_tokens": sum(r.prompt_tokens for r in records),
        "completion_tokens": sum(r.completion_tokens for r in records),
        "latency_s": [round(r.latency_s, 4) for r in records],
        **({"errors": [r.error for r in records if r.error]} if any(r.error for r in records) else {}),
        **({"bounded": sum(1 for r in records if r.bounded)} if any(r.bounded for r in records) else {}),
    }


def wav_base64(wave: np.ndarray, sample_rate: int = SAMPLE_RATE) -> str:
    """16-bit PCM WAV of a mono float wave, base64 (what `input_audio.data` carries)."""
    import soundfile as sf

    buffer = io.BytesIO()
    sf.write(buffer, np.clip(np.asarray(wave, dtype=np.float32), -1.0, 1.0), sample_rate, format="WAV", subtype="PCM_16")
    return base64.b64encode(buffer.getvalue()).decode("ascii")


class EndpointSettings:
    """The endpoint options of a judge, checked: endpoint, model, api_key_env, timeout_s, retries, backoff_s, ..."""

    def __init__(self, options: dict):
        if "api_key" in options:
            raise JudgeUnavailable("options must not hold the API key (judge options are shown on pages): put it in an environment variable and name it in `api_key_env`")
        self.endpoint = str(options.get("endpoint") or "").strip().rstrip("/")
        self.model = str(options.get("model") or "").strip()
        if not self.endpoint:
            raise JudgeUnavailable("no endpoint configured: set option `endpoint` to the server's base URL, e.g. http://127.0.0.1:8000/v1")
        parts = urlsplit(self.endpoint)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise JudgeUnavailable(f"endpoint {self.endpoint!r} is not an http(s) URL")
        if parts.username or parts.password or parts.query or parts.fragment:
            raise JudgeUnavailable("the endpoint URL must not carry credentials, a query or a fragment")
        if not self.model:
            raise JudgeUnavailable("no model configured: set option `model` to the name the server serves (vLLM: the --served-model-name or the model path)")
        self.key_env = str(options.get("api_key_env") or DEFAULT_KEY_ENV)
        self.key = os.environ.get(self.key_env, "")
        if options.get("api_key_env") and not self.key:
            raise JudgeUnavailable(f"the environment variable {self.key_env} named by `api_key_env` is not set")
        self.timeout = _positive(options, "timeout_s", 120.0)
        self.retries = int(_positive(options, "retries", 3, allow_zero=True))
        self.backoff = _positive(options, "backoff_s", 1.0, allow_zero=True)
        self.max_backoff = _positive(options, "max_backoff_s", 30.0)
        self.concurrency = max(1, int(_positive(options, "concurrency", 4)))
        self.max_new_tokens = int(_positive(options, "max_new_tokens", 256))
        self.top_logprobs = int(_positive(options, "top_logprobs", 20))
        self.audio_part = str(options.get("audio_part") or "input_audio")
        if self.audio_part not in AUDIO_PARTS:
            raise JudgeUnavailable(f"audio_part must be one of {', '.join(AUDIO_PARTS)}")
        self.url = parts

    def scrub(self, text: str) -> str:
        return text.replace(self.key, "[api key]") if self.key else text


def _positive(options: dict, name: str, default: float, *, allow_zero: bool = False) -> float:
    raw = options.get(name, default)
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise JudgeUnavailable(f"option {name}={raw!r} is not a number") from None
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        raise JudgeUnavailable(f"option {name}={raw!r} must be {'non-negative' if allow_zero else 'positive'}")
    return value


class _Deadline:
    """One deadline over everything a request does: when it passes, the request's socket is shut down, so an
    endpoint that trickles its answer cannot stretch a per-read timeout into minutes."""

    def __init__(self, seconds: float):
        self.expired = False
        self._sock = None
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def _expire(self):
        with self._lock:
            self.expired = True
            if self._sock is not None:
                try:
                    self._sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def watch(self, sock):
        with self._lock:
            self._sock = sock
            if self.expired:
                sock.shutdown(socket.SHUT_RDWR)

    def __enter__(self):
        self._timer.start()
        return self

    def __exit__(self, *exc):
        self._timer.cancel()


class _Retry(Exception):
    def __init__(self, message: str, wait: float | None = None):
        super().__init__(message)
        self.wait = wait


class OpenAIChatBackend:
    """A chat completions client with the operations the audio-LLM judges use: generate_many and yes_probabilities."""

    family = "openai"

    def __init__(self, options: dict):
        self.settings = EndpointSettings(options)
        self.yes_id = "Yes"  # the judges only ask whether the backend can score Yes/No

    # --- HTTP -------------------------------------------------------------------------------------
    def _connection(self, deadline: _Deadline):
        parts = self.settings.url
        port = parts.port or (443 if parts.scheme == "https" else 80)
        address = endpoint_check(self.settings.endpoint)  # the platform refuses addresses it must not reach
        host = str(address) if address is not None else parts.hostname
        timeout = self.settings.timeout

        class Pinned(http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection):
            def connect(self):
                # Connect to the checked address; the Host header and TLS server name stay the URL's host.
                self.sock = socket.create_connection((host, port), timeout)
                deadline.watch(self.sock)
                if isinstance(self, http.client.HTTPSConnection):
                    self.sock = self._context.wrap_socket(self.sock, server_hostname=parts.hostname)

        return Pinned(parts.hostname, port, timeout=timeout)

    def _post_once(self, body: bytes) -> dict:
        settings = self.settings
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if settings.key:
            headers["Authorization"] = f"Bearer {settings.key}"
        path = (settings.url.path or "").rstrip("/") + "/chat/completions"
        with _Deadline(settings.timeout) as deadline:
            conn = self._connection(deadline)
            try:
                conn.request("POST", path, body=body, headers=headers)
                response = conn.getresponse()
                raw = response.read()
            except (OSError, http.client.HTTPException) as exc:
                if deadline.expired:
                    raise TimeoutError(f"no answer within the {settings.timeout:g} s deadline") from None
                if isinstance(exc, (ConnectionRefusedError, ConnectionResetError, http.client.RemoteDisconnected)):
                    raise _Retry(f"connection failed: {type(exc).__name__}") from None
                raise JudgeOutputError(f"request failed: {type(exc).__name__}: {settings.scrub(str(exc))[:300]}") from None
            finally:
                conn.close()
        if deadline.expired:
            raise TimeoutError(f"no answer within the {settings.timeout:g} s deadline")
        text = raw.decode("utf-8", "replace")
        if response.status in RETRY_STATUSES:
            raise _Retry(f"HTTP {response.status}: {settings.scrub(text)[:300]}", _retry_after(response.getheader("Retry-After")))
        if response.status != 200:
            raise JudgeOutputError(f"HTTP {response.status}: {settings.scrub(text)[:500]}", raw=settings.scrub(text)[:2000])
        try:
            answer = json.loads(text)
        except json.JSONDecodeError:
            raise JudgeOutputError("the endpoint's answer is not JSON", raw=settings.scrub(text)[:2000]) from None
        if not isinstance(answer, dict) or not answer.get("choices"):
            raise JudgeOutputError("the endpoint's answer has no choices", raw=settings.scrub(text)[:2000])
        return answer

    def post(self, payload: dict) -> tuple[dict | None, RequestRecord]:
        """(answer JSON or None, record): retries 429/5xx and refused connections; never raises for one request's failure."""
        settings = self.settings
        record = RequestRecord()
        body = json.dumps(payload).encode("utf-8")
        start = time.monotonic()
        answer = None
        for attempt in range(settings.retries + 1):
            record.attempts = attempt + 1
            try:
                answer = self._post_once(body)
                break
            except _Retry as exc:
                record.error = str(exc)
                if attempt == settings.retries:
                    break
                wait = exc.wait if exc.wait is not None else settings.backoff * (2**attempt) * (1 + random.random() * 0.25)
                time.sleep(min(wait, settings.max_backoff))
            except TimeoutError as exc:
                # Not retried: an endpoint that cannot answer within the deadline is overloaded or the
                # request is too long for it, and asking again multiplies the run's time.
                record.error, record.timed_out = str(exc), True
                break
            except JudgeOutputError as exc:
                record.error = str(exc)
                break
        record.latency_s = time.monotonic() - start
        if answer is not None:
            record.error = ""
            usage = answer.get("usage") or {}
            record.prompt_tokens = int(usage.get("prompt_tokens") or 0)
            record.completion_tokens = int(usage.get("completion_tokens") or 0)
        return answer, record

    # --- requests ---------------------------------------------------------------------------------
    def messages(self, system: str, parts: list[dict], waves: list[np.ndarray], encoded: dict) -> list[dict]:
        """The chat messages for one judge request; `encoded` caches each wave's base64 WAV by identity."""
        content, audio = [], iter(waves)
        for part in parts:
            if part["type"] != "audio":
                content.append({"type": "text", "text": part["text"]})
                continue
            wave = next(audio)
            if id(wave) not in encoded:
                encoded[id(wave)] = (wave, wav_base64(wave))  # the wave is kept so its id is not reused
            data = encoded[id(wave)][1]
            if self.settings.audio_part == "audio_url":
                content.append({"type": "audio_url", "audio_url": {"url": f"data:audio/wav;base64,{data}"}})
            else:
                content.append({"type": "input_audio", "input_audio": {"data": data, "format": "wav"}})
        return [{"role": "system", "content": system}, {"role": "user", "content": content}]

    def _map(self, fn, items: list) -> list:
        if len(items) <= 1 or self.settings.concurrency == 1:
            return [fn(item) for item in items]
        with ThreadPoolExecutor(max_workers=min(self.settings.concurrency, len(items))) as pool:
            return list(pool.map(fn, items))

    def generate_many(self, batch: list[tuple[str, list[dict], list[np.ndarray]]], *, max_new_tokens: int | None = None) -> list[Answer]:
        """Greedy answers, `concurrency` requests at a time; a failed request gives an empty Answer with its error."""
        encoded: dict = {}
        payloads = [
            {
                "model": self.settings.model,
                "messages": self.messages(system, parts, waves, encoded),
                "temperature": 0,
                "max_tokens": int(max_new_tokens or self.settings.max_new_tokens),
            }
            for system, parts, waves in batch
        ]

        def one(payload):
            answer, record = self.post(payload)
            if answer is None:
                return _answer("", record)
            message = (answer["choices"][0] or {}).get("message") or {}
            return _answer(str(message.get("content") or ""), record)

        return self._map(one, payloads)

    def generate(self, system: str, parts: list[dict], waves: list[np.ndarray]) -> Answer:
        return self.generate_many([(system, parts, waves)])[0]

    def yes_probabilities(self, batch: list[tuple[str, list[dict], list[np.ndarray]]]) -> list[Probability]:
        """P(Yes) / (P(Yes) + P(No)) of the first answer token, from its top log-probabilities.

        Raises JudgeUnavailable when the server returns no log-probabilities (the judge cannot work with it) and
        JudgeOutputError when a request fails or neither Yes nor No is among the top tokens, so that nothing is cached.
        """
        encoded: dict = {}
        payloads = [
            {
                "model": self.settings.model,
                "messages": self.messages(system, parts, waves, encoded),
                "temperature": 0,
                "max_tokens": 1,
                "logprobs": True,
                "top_logprobs": self.settings.top_logprobs,
            }
            for system, parts, waves in batch
        ]
        results = self._map(self.post, payloads)
        out = []
        for answer, record in results:
            if answer is None:
                raise JudgeOutputError(f"endpoint request failed: {record.error}")
            out.append(_probability(self._yes_share(answer, record), record))
        return out

    def _yes_share(self, answer: dict, record: RequestRecord) -> float:
        logprobs = (answer["choices"][0] or {}).get("logprobs") or {}
        content = logprobs.get("content") if isinstance(logprobs, dict) else None
        if not content:
            raise JudgeUnavailable(
                "the endpoint returned no log-probabilities; AQA and the rubric judge need `logprobs`/`top_logprobs` "
                "in chat completions (vLLM returns them; see docs/judges.md)"
            )
        top = content[0].get("top_logprobs") or [{"token": content[0].get("token", ""), "logprob": content[0].get("logprob", 0.0)}]
        listed = [(str(t.get("token", "")).strip(), float(t.get("logprob", -math.inf))) for t in top]
        # The local backend reads the logits of the single tokens "Yes" and "No"; a server may spell them with a
        # leading space, so tokens are compared stripped (the case stays: "yes" is another token).
        yes = sum(math.exp(lp) for tok, lp in listed if tok == "Yes")
        no = sum(math.exp(lp) for tok, lp in listed if tok == "No")
        if yes == 0 and no == 0:
            raw = json.dumps(content[0])[:500]
            raise JudgeOutputError(f"neither Yes nor No among the top {len(listed)} answer tokens", raw=raw)
        if yes == 0 or no == 0:
            record.bounded = True
            floor = math.exp(min(lp for _, lp in listed))
            yes, no = yes or floor, no or floor
        return yes / (yes + no)


def _retry_after(value: str | None) -> float | None:
    try:
        seconds = float(value) if value is not None else None
    except ValueError:
        return None  # an HTTP date: the exponential backoff applies
    return max(0.0, seconds) if seconds is not None and math.isfinite(seconds) else None
