"""Generation adapters: one interface, four ways to get a system's clip for a prompt.

    adapter = adapter_for(arena_system)
    result = adapter.generate(GenerationRequest(...))   # -> Generated (audio array or stored clip)
    ok, detail = adapter.health()

Web code never imports torch: the transformers adapter loads it lazily inside
the worker that runs it, once per process.
"""

from __future__ import annotations

import hashlib
import io
import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field

import numpy as np
import soundfile as sf
from django.conf import settings

from auditorium.runtime import cached_model, pick_device
from common.loudness import Loudness

from .models import AdapterKind, ArenaSystem, CatalogClip


class GenerationError(Exception):
    """The system could not produce audio; the message is for operators (it may name the system)."""


@dataclass(frozen=True)
class GenerationRequest:
    prompt: str
    lyrics: str = ""
    instrumental: bool = True
    seconds: float = 8.0
    seed: int = 0
    sample_rate: int = 32000


@dataclass
class Generated:
    audio: np.ndarray | None = None
    sample_rate: int | None = None
    clip_id: int | None = None  # a stored clip (catalog) instead of fresh audio
    generation_seconds: float | None = None  # if the system reports its own, else measured around generate()
    # A stored clip's loudness as it was generated (catalog); fresh audio is measured by the arena.
    loudness: Loudness | None = None
    # Whether the clip has vocals, when the system says so; else the arena infers it (services.vocals_present).
    vocals: bool | None = None
    meta: dict = field(default_factory=dict)


def prompt_key(prompt: str, lyrics: str = "") -> str:
    """Catalog lookup key: whitespace and case do not make a different prompt."""
    norm = " ".join(prompt.lower().split()) + "\x1f" + " ".join(lyrics.lower().split())
    return hashlib.sha256(norm.encode()).hexdigest()


class Adapter:
    def __init__(self, arena_system: ArenaSystem):
        self.arena_system = arena_system
        self.config = arena_system.adapter_config or {}

    queue = "cpu"

    def generate(self, request: GenerationRequest) -> Generated:  # pragma: no cover - interface
        raise NotImplementedError

    def health(self) -> tuple[bool, str]:
        return True, "ok"

    def can_serve(self, *, prompt_key: str) -> bool:
        return True


class DemoAdapter(Adapter):
    """Built-in procedural systems (annotation.demo): a fresh machine has a working arena."""

    def generate(self, request: GenerationRequest) -> Generated:
        from annotation import demo

        name = self.config.get("demo", self.arena_system.system.name)
        audio = demo.render(
            name, prompt=request.prompt, lyrics=request.lyrics, seed=request.seed, seconds=request.seconds, sample_rate=request.sample_rate
        )
        return Generated(audio=np.asarray(audio, dtype=np.float32), sample_rate=request.sample_rate)

    def health(self) -> tuple[bool, str]:
        try:
            from annotation import demo
        except ImportError as exc:
            return False, f"annotation.demo unavailable: {exc}"
        name = self.config.get("demo", self.arena_system.system.name)
        known = {getattr(s, "name", s) for s in getattr(demo, "DEMO_SYSTEMS", [])}
        return (True, "ok") if not known or name in known else (False, f"no demo system named {name!r}")


class CatalogAdapter(Adapter):
    """Pre-generated clips per prompt; only prompts in the catalog can be served."""

    def can_serve(self, *, prompt_key: str) -> bool:
        return CatalogClip.objects.filter(arena_system=self.arena_system, prompt_key=prompt_key).exists()

    def generate(self, request: GenerationRequest) -> Generated:
        key = prompt_key(request.prompt, request.lyrics)
        entries = list(CatalogClip.objects.filter(arena_system=self.arena_system, prompt_key=key).order_by("id"))
        if not entries:
            raise GenerationError(f"{self.arena_system} has no catalog clip for this prompt")
        # Several takes per prompt: the battle seed picks one, reproducibly.
        entry = entries[request.seed % len(entries)]
        return Generated(
            clip_id=entry.clip_id, generation_seconds=entry.generation_seconds, loudness=Loudness(lufs=entry.loudness_lufs, true_peak_dbtp=entry.true_peak_dbtp)
        )

    def health(self) -> tuple[bool, str]:
        count = CatalogClip.objects.filter(arena_system=self.arena_system).count()
        return (count > 0, f"{count} catalog clips")


class HttpAdapter(Adapter):
    """A generation server: POST {url}/generate with JSON, answered with an audio file. See docs/arena.md."""

    def _url(self, path: str) -> str:
        base = str(self.config.get("url", "")).rstrip("/")
        if not base.startswith(("http://", "https://")):
            raise GenerationError(f"{self.arena_system}: adapter_config.url must be an http(s) URL")
        return base + path

    def _post(self, body: bytes, timeout: float) -> tuple[bytes, str]:
        headers = {"Content-Type": "application/json", "Accept": "audio/wav, audio/flac, audio/ogg"}
        headers.update(self.config.get("headers", {}))
        request = urllib.request.Request(self._url("/generate"), data=body, headers=headers, method="POST")
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - operator-configured URL
            return response.read(), response.headers.get("Content-Type", "")

    def generate(self, request: GenerationRequest) -> Generated:
        payload = {
            "prompt": request.prompt,
            "lyrics": request.lyrics,
            "instrumental": request.instrumental,
            "duration": request.seconds,
            "seed": request.seed,
            "sample_rate": request.sample_rate,
        }
        body = json.dumps(payload).encode()
        timeout = float(self.config.get("timeout", settings.ARENA_HTTP_TIMEOUT))
        retries = int(self.config.get("retries", 1))
        last: Exception | None = None
        for attempt in range(retries + 1):
            try:
                data, content_type = self._post(body, timeout)
                if content_type.startswith("application/json"):
                    raise GenerationError(f"{self.arena_system}: server answered JSON instead of audio: {data[:200]!r}")
                audio, rate = sf.read(io.BytesIO(data), dtype="float32", always_2d=False)
                if audio.size == 0:
                    raise GenerationError(f"{self.arena_system}: server answered empty audio")
                return Generated(audio=audio, sample_rate=int(rate), meta={"attempts": attempt + 1})
            except (urllib.error.URLError, TimeoutError, OSError, sf.LibsndfileError, GenerationError, RuntimeError) as exc:
                last = exc
        raise GenerationError(f"{self.arena_system}: generation failed after {retries + 1} attempts: {last}")

    def health(self) -> tuple[bool, str]:
        timeout = float(self.config.get("health_timeout", settings.ARENA_HEALTH_TIMEOUT))
        try:
            with urllib.request.urlopen(self._url("/health"), timeout=timeout) as response:  # noqa: S310
                return (200 <= response.status < 300), f"HTTP {response.status}"
        except (urllib.error.URLError, TimeoutError, OSError, GenerationError) as exc:
            return False, str(exc)[:400]


def _musicgen_load(path_or_id: str, device: str):
    from transformers import AutoProcessor, MusicgenForConditionalGeneration

    model = MusicgenForConditionalGeneration.from_pretrained(path_or_id).to(device)
    model.eval()
    return model, AutoProcessor.from_pretrained(path_or_id)


def musicgen_load(path_or_id: str, device: str):
    """Model and processor, loaded once per worker process and kept."""
    return cached_model(("musicgen", path_or_id, device), lambda: _musicgen_load(path_or_id, device))


class TransformersAdapter(Adapter):
    """MusicGen through transformers, on the gpu queue."""

    queue = "gpu"

    def _device(self) -> str:
        return pick_device(self.config.get("device"))

    def generate(self, request: GenerationRequest) -> Generated:
        import torch

        path = self.config.get("model")
        if not path:
            raise GenerationError(f"{self.arena_system}: adapter_config.model (path or hub id) is required")
        device = self._device()
        try:
            model, processor = musicgen_load(path, device)
        except OSError as exc:
            raise GenerationError(f"{self.arena_system}: cannot load {path!r}: {exc}") from exc
        text = request.prompt if not request.lyrics else f"{request.prompt}\nLyrics: {request.lyrics}"
        inputs = processor(text=[text], padding=True, return_tensors="pt").to(device)
        frame_rate = model.config.audio_encoder.frame_rate
        tokens = max(1, int(round(request.seconds * frame_rate)))
        torch.manual_seed(request.seed)
        with torch.inference_mode():
            values = model.generate(
                **inputs,
                max_new_tokens=tokens,
                do_sample=bool(self.config.get("do_sample", True)),
                guidance_scale=float(self.config.get("guidance_scale", 3.0)),
            )
        audio = values[0, 0].float().cpu().numpy()
        return Generated(audio=audio, sample_rate=int(model.config.audio_encoder.sampling_rate))

    def health(self) -> tuple[bool, str]:
        path = self.config.get("model")
        return (bool(path), "configured" if path else "adapter_config.model missing")


ADAPTERS = {
    AdapterKind.DEMO: DemoAdapter,
    AdapterKind.CATALOG: CatalogAdapter,
    AdapterKind.HTTP: HttpAdapter,
    AdapterKind.TRANSFORMERS: TransformersAdapter,
}


def adapter_for(arena_system: ArenaSystem) -> Adapter:
    try:
        return ADAPTERS[arena_system.adapter_kind](arena_system)
    except KeyError:
        raise GenerationError(f"{arena_system}: unknown adapter kind {arena_system.adapter_kind!r}") from None


def timed_generate(adapter: Adapter, request: GenerationRequest) -> Generated:
    start = time.perf_counter()
    result = adapter.generate(request)
    if result.generation_seconds is None:
        result.generation_seconds = time.perf_counter() - start
    return result
