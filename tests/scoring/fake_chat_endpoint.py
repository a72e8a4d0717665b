"""A chat completions server on 127.0.0.1 that follows the OpenAI request and response shapes, for endpoint judges.

`respond(request, index)` decides each answer: it returns a Reply (status, JSON body or text, delay, headers). The
server keeps every request (JSON body and headers) in `requests`.
"""

from __future__ import annotations

import base64
import io
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import soundfile as sf


@dataclass
class Reply:
    status: int = 200
    body: dict | str = ""
    delay: float = 0.0
    headers: dict = field(default_factory=dict)


def chat_reply(content: str, *, prompt_tokens: int = 100, completion_tokens: int = 20, logprobs=None) -> Reply:
    choice = {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop", "logprobs": logprobs}
    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "total_tokens": prompt_tokens + completion_tokens}
    return Reply(body={"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "served", "choices": [choice], "usage": usage})


def top_logprobs_reply(pairs: list[tuple[str, float]]) -> Reply:
    """A one-token answer whose `logprobs.content[0].top_logprobs` lists `pairs` (token, logprob), best first."""
    top = [{"token": t, "logprob": lp, "bytes": list(t.encode())} for t, lp in pairs]
    logprobs = {"content": [{"token": pairs[0][0], "logprob": pairs[0][1], "bytes": list(pairs[0][0].encode()), "top_logprobs": top}]}
    return chat_reply(pairs[0][0], completion_tokens=1, logprobs=logprobs)


def audio_parts(request: dict) -> list[np.ndarray]:
    """The waves of a request's audio parts, in order (input_audio or audio_url data URLs)."""
    waves = []
    for message in request["messages"]:
        content = message["content"]
        for part in content if isinstance(content, list) else []:
            if part["type"] == "input_audio":
                data = part["input_audio"]["data"]
            elif part["type"] == "audio_url":
                data = part["audio_url"]["url"].split("base64,", 1)[1]
            else:
                continue
            wave, _ = sf.read(io.BytesIO(base64.b64decode(data)), dtype="float32")
            waves.append(wave)
    return waves


class FakeChatEndpoint:
    def __init__(self, respond):
        self.respond = respond
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                with outer._lock:
                    index = len(outer.requests)
                    outer.requests.append(body)
                    outer.headers.append(dict(self.headers))
                if self.path != "/v1/chat/completions":
                    reply = Reply(status=404, body={"error": {"message": f"no route {self.path}"}})
                else:
                    reply = outer.respond(body, index)
                if reply.delay:
                    time.sleep(reply.delay)
                data = reply.body if isinstance(reply.body, str) else json.dumps(reply.body)
                raw = data.encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(raw)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(raw)
                except OSError:
                    pass  # the client gave up (deadline)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
