"""The transformers backend of the audio-LLM judges, and the batching they share with scripted backends.

Backends load with the library's own classes from a local path (Qwen2-Audio:
Qwen2AudioForConditionalGeneration + AutoProcessor; Qwen2.5-Omni: its thinker class only, which
answers in text). Operations, each on a batch of requests (system, parts, waves):

- `generate_many`: greedy text, left-padded, many prompts per `generate` call;
- `yes_tensor`: one forward pass, P(Yes)/(P(Yes)+P(No)) from the next-token logits, left on the
  device so the host can prepare the next batch while the GPU works.

For Qwen2-Audio the Whisper log-mel features are computed on the device (features.WhisperMel)
and each distinct waveform of a batch once; the prompt is expanded with one audio token per
encoder frame exactly as the library's processor does (tested against it). Qwen2.5-Omni keeps
the library's processor on the host.
"""

from __future__ import annotations

import numpy as np

from .device import length_batches, split_on_oom, torch_dtype
from .features import UnsupportedExtractor, WhisperMel

SAMPLE_RATE = 16000
# Whisper frames: 100 per second, two per encoder position after the stride-2 convolution,
# and one language-model token per two positions after Qwen2-Audio's pooling.
SAMPLES_PER_AUDIO_TOKEN = 640


def audio_tokens(frames: int) -> int:
    """Qwen2-Audio's audio tokens for `frames` valid mel frames (its processor's formula)."""
    return (((frames - 1) // 2 + 1) - 2) // 2 + 1


class TransformersAudioLLM:
    """A chat model that takes audio parts; `family` picks the classes and the audio part format."""

    def __init__(self, path: str, *, family: str, device: str, dtype: str = "float32", max_new_tokens: int = 256, device_features: bool = True):
        if family == "qwen2_audio":
            from transformers import AutoProcessor, Qwen2AudioForConditionalGeneration

            processor = AutoProcessor.from_pretrained(path)
            model = Qwen2AudioForConditionalGeneration.from_pretrained(path, dtype=torch_dtype(dtype))
        elif family == "qwen2_5_omni":
            from transformers import Qwen2_5OmniProcessor, Qwen2_5OmniThinkerForConditionalGeneration

            processor = Qwen2_5OmniProcessor.from_pretrained(path)
            model = Qwen2_5OmniThinkerForConditionalGeneration.from_pretrained(path, dtype=torch_dtype(dtype))
        elif family == "qwen3_omni":
            # The thinker answers in text; the talker (speech output) is never loaded.
            from transformers import Qwen3OmniMoeProcessor, Qwen3OmniMoeThinkerForConditionalGeneration

            processor = Qwen3OmniMoeProcessor.from_pretrained(path)
            model = Qwen3OmniMoeThinkerForConditionalGeneration.from_pretrained(path, dtype=torch_dtype(dtype))
        else:
            raise ValueError(f"unknown audio-LLM family {family!r}; use qwen2_audio, qwen2_5_omni or qwen3_omni")
        self._setup(model.to(device).eval(), processor, family=family, device=device, max_new_tokens=max_new_tokens, device_features=device_features)

    @classmethod
    def from_parts(cls, model, processor, *, family: str, device: str, max_new_tokens: int = 256, device_features: bool = True):
        """A backend around an already built model (benchmarks build random full-size ones this way)."""
        self = cls.__new__(cls)
        self._setup(model, processor, family=family, device=device, max_new_tokens=max_new_tokens, device_features=device_features)
        return self

    def _setup(self, model, processor, *, family: str, device: str, max_new_tokens: int, device_features: bool) -> None:
        self.model, self.processor = model, processor
        self.family, self.device, self.max_new_tokens = family, device, max_new_tokens
        self.dtype = next(model.parameters()).dtype
        tokenizer = processor.tokenizer
        # Left padding keeps every sequence's next-token position at the end.
        tokenizer.padding_side = "left"
        self.yes_id, self.no_id = self._single_token(tokenizer, "Yes"), self._single_token(tokenizer, "No")
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        self.audio_token = getattr(processor, "audio_token", "<|AUDIO|>")
        self.mel = None
        if family == "qwen2_audio" and device_features:
            try:
                self.mel = WhisperMel(processor.feature_extractor, device)
            except UnsupportedExtractor:
                self.mel = None

    @staticmethod
    def _single_token(tokenizer, word: str) -> int | None:
        ids = tokenizer.encode(word, add_special_tokens=False)
        return ids[0] if len(ids) == 1 else None

    def _messages(self, system: str, parts: list[dict]) -> list[dict]:
        content = []
        for part in parts:
            if part["type"] == "audio":
                content.append({"type": "audio", "audio_url": "clip"} if self.family == "qwen2_audio" else {"type": "audio", "audio": "clip"})
            else:
                content.append({"type": "text", "text": part["text"]})
        return [{"role": "system", "content": system}, {"role": "user", "content": content}]

    def _texts(self, batch) -> list[str]:
        return [self.processor.apply_chat_template(self._messages(system, parts), add_generation_prompt=True, tokenize=False) for system, parts, _ in batch]

    def _inputs(self, batch: list[tuple[str, list[dict], list[np.ndarray]]]) -> dict:
        texts = self._texts(batch)
        audios = [wave for _, _, waves in batch for wave in waves]
        if self.mel is None or not audios:
            kwargs = {"sampling_rate": SAMPLE_RATE} if self.family == "qwen2_audio" else {}
            inputs = self.processor(text=texts, audio=audios or None, return_tensors="pt", padding=True, **kwargs)
            return {k: (v.to(self.device, self.dtype) if v.is_floating_point() else v.to(self.device)) for k, v in inputs.items()}
        return self._device_inputs(texts, audios)

    def _device_inputs(self, texts: list[str], audios: list[np.ndarray]) -> dict:
        import torch

        # One feature row per distinct waveform: the two AQA questions about a clip, or the two
        # orders of a pair, share theirs.
        slot: dict[int, int] = {}
        distinct: list[np.ndarray] = []
        for wave in audios:
            if id(wave) not in slot:
                slot[id(wave)] = len(distinct)
                distinct.append(wave)
        feats, frame_mask = self.mel.features(distinct)
        counts = iter(audio_tokens(self.mel.frames(len(wave))) for wave in audios)
        expanded = []
        for text in texts:
            pieces = text.split(self.audio_token)
            out = [pieces[0]]
            for piece in pieces[1:]:
                out.append(self.audio_token * next(counts))
                out.append(piece)
            expanded.append("".join(out))
        tokens = self.processor.tokenizer(expanded, padding=True, return_tensors="pt")
        if len(distinct) != len(audios):
            index = torch.tensor([slot[id(w)] for w in audios], device=feats.device)
            feats, frame_mask = feats.index_select(0, index), frame_mask.index_select(0, index)
        return {
            "input_ids": tokens["input_ids"].to(self.device),
            "attention_mask": tokens["attention_mask"].to(self.device),
            "input_features": feats.to(self.dtype),
            "feature_attention_mask": frame_mask,
        }

    def generate_many(self, batch: list[tuple[str, list[dict], list[np.ndarray]]], *, max_new_tokens: int | None = None) -> list[str]:
        import torch

        inputs = self._inputs(batch)
        with torch.inference_mode():
            out = self.model.generate(**inputs, max_new_tokens=max_new_tokens or self.max_new_tokens, do_sample=False, pad_token_id=self.pad_id)
        return self.processor.batch_decode(out[:, inputs["input_ids"].shape[1] :], skip_special_tokens=True)

    def generate(self, system: str, parts: list[dict], waves: list[np.ndarray]) -> str:
        return self.generate_many([(system, parts, waves)])[0]

    def yes_tensor(self, batch: list[tuple[str, list[dict], list[np.ndarray]]]):
        """P(Yes) per request as a float32 tensor on the device (no wait for the GPU)."""

        from .base import JudgeOutputError

        if self.yes_id is None or self.no_id is None:
            raise JudgeOutputError("the tokenizer does not encode 'Yes' and 'No' as single tokens, so AQAScore is undefined for it")
        return self.yes_from_inputs(self._inputs(batch))

    def yes_from_inputs(self, inputs: dict):
        """The device work of `yes_tensor` on ready inputs (also what benchmarks time as forward-only)."""
        import torch

        with torch.inference_mode():
            logits = self.last_logits(inputs).float()
        pair = torch.stack([logits[:, self.yes_id], logits[:, self.no_id]], dim=-1)
        return torch.softmax(pair, dim=-1)[:, 0]

    def last_logits(self, inputs: dict):
        """Next-token logits at the last position only.

        The full forward projects every position onto the vocabulary: for 32 prompts of ~1,000
        tokens and Qwen2-Audio's 156k vocabulary that is a 10 GB tensor, of which one row each
        is read. Running the base model and projecting the last hidden state gives the same row.
        """
        base, head = getattr(self.model, "model", None), getattr(self.model, "lm_head", None)
        if base is not None and head is not None and hasattr(base, "audio_tower"):
            hidden = base(**inputs, use_cache=False).last_hidden_state[:, -1, :]
            return head(hidden)
        return self.model(**inputs).logits[:, -1, :]

    def yes_probabilities(self, batch) -> list[float]:
        return self.yes_tensor(batch).cpu().tolist()


def approx_tokens(request) -> int:
    """A request's prompt length in tokens, roughly: enough to batch similar lengths together."""
    _, parts, waves = request
    text = sum(len(p.get("text", "")) for p in parts)
    return sum(min(len(w), 30 * SAMPLE_RATE) for w in waves) // SAMPLES_PER_AUDIO_TOKEN + text // 4


def yes_probabilities(backend, requests: list, size: int) -> list[float]:
    """P(Yes) per request, `size` requests per forward pass, similar lengths together, in request order."""
    out: list = [None] * len(requests)
    batches = length_batches([approx_tokens(r) for r in requests], size)
    if hasattr(backend, "yes_tensor"):
        import torch

        parts = []
        for idx in batches:
            probs = split_on_oom(lambda b: list(backend.yes_tensor(b).unbind(0)), [requests[i] for i in idx])
            parts.append((idx, probs))
        flat = torch.stack([p for _, probs in parts for p in probs]).cpu().tolist() if parts else []  # one wait
        order = [i for idx, _ in parts for i in idx]
        for i, value in zip(order, flat):
            out[i] = float(value)
        return out
    for idx in batches:
        for i, value in zip(idx, backend.yes_probabilities([requests[i] for i in idx])):
            # A float subclass (an endpoint's answer with its request record) is kept as it is.
            out[i] = value if isinstance(value, float) else float(value)
    return out


def generate_texts(backend, requests: list, size: int) -> list[str]:
    """Greedy answers in request order: `size` prompts per generate call when the backend batches."""
    if not hasattr(backend, "generate_many"):
        return [backend.generate(*request) for request in requests]
    out: list = [None] * len(requests)
    for idx in length_batches([approx_tokens(r) for r in requests], size):
        for i, text in zip(idx, split_on_oom(backend.generate_many, [requests[i] for i in idx])):
            out[i] = text
    return out
