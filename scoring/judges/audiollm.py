"""Audio-LLM judges through transformers: CMI pairwise judge, AQAScore, rubric judge.

Backends load with the library's own classes from a local path (Qwen2-Audio:
Qwen2AudioForConditionalGeneration + AutoProcessor; Qwen2.5-Omni: its thinker class only, which
answers in text). A backend has two operations: `generate` (greedy text) and `yes_probability`
(one forward pass, P(Yes)/(P(Yes)+P(No)) from the next-token logits).
"""

from __future__ import annotations

import json

import numpy as np

from auditorium.runtime import cached_model, pick_device

from . import prompts
from .base import (
    ALIGNMENT,
    BOTH,
    MODEL_A,
    MODEL_B,
    MUSICALITY,
    NEITHER,
    ClipAudio,
    ConditionInput,
    JudgeAdapter,
    JudgeOutputError,
    PairOutcome,
    load_audio,
)

SAMPLE_RATE = 16000
LABELS = (MODEL_A, MODEL_B, BOTH, NEITHER)


class TransformersAudioLLM:
    """A chat model that takes audio parts; `family` picks the classes and the audio part format."""

    def __init__(self, path: str, *, family: str, device: str, max_new_tokens: int = 256):
        self.family, self.device, self.max_new_tokens = family, device, max_new_tokens
        if family == "qwen2_audio":
            from transformers import AutoProcessor, Qwen2AudioForConditionalGeneration

            self.processor = AutoProcessor.from_pretrained(path)
            self.model = Qwen2AudioForConditionalGeneration.from_pretrained(path)
        elif family == "qwen2_5_omni":
            from transformers import Qwen2_5OmniProcessor, Qwen2_5OmniThinkerForConditionalGeneration

            self.processor = Qwen2_5OmniProcessor.from_pretrained(path)
            self.model = Qwen2_5OmniThinkerForConditionalGeneration.from_pretrained(path)
        else:
            raise ValueError(f"unknown audio-LLM family {family!r}; use qwen2_audio or qwen2_5_omni")
        self.model = self.model.to(device).eval()
        tokenizer = self.processor.tokenizer
        self.yes_id, self.no_id = self._single_token(tokenizer, "Yes"), self._single_token(tokenizer, "No")

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

    def _inputs(self, batch: list[tuple[str, list[dict], list[np.ndarray]]]):
        texts, audios = [], []
        for system, parts, waves in batch:
            texts.append(self.processor.apply_chat_template(self._messages(system, parts), add_generation_prompt=True, tokenize=False))
            audios.extend(waves)
        # Left padding keeps every sequence's next-token position at the end.
        self.processor.tokenizer.padding_side = "left"
        kwargs = {"sampling_rate": SAMPLE_RATE} if self.family == "qwen2_audio" else {}
        inputs = self.processor(text=texts, audio=audios or None, return_tensors="pt", padding=True, **kwargs)
        return {k: v.to(self.device) for k, v in inputs.items()}

    def generate(self, system: str, parts: list[dict], waves: list[np.ndarray]) -> str:
        import torch

        inputs = self._inputs([(system, parts, waves)])
        with torch.inference_mode():
            out = self.model.generate(**inputs, max_new_tokens=self.max_new_tokens, do_sample=False)
        return self.processor.batch_decode(out[:, inputs["input_ids"].shape[1] :], skip_special_tokens=True)[0]

    def yes_probabilities(self, batch: list[tuple[str, list[dict], list[np.ndarray]]]) -> list[float]:
        import torch

        if self.yes_id is None or self.no_id is None:
            raise JudgeOutputError("the tokenizer does not encode 'Yes' and 'No' as single tokens, so AQAScore is undefined for it")
        inputs = self._inputs(batch)
        with torch.inference_mode():
            logits = self.model(**inputs).logits[:, -1, :].float()
        pair = torch.stack([logits[:, self.yes_id], logits[:, self.no_id]], dim=-1)
        return torch.softmax(pair, dim=-1)[:, 0].cpu().tolist()


def _transformers_backend(path: str, options: dict):
    device = pick_device(options.get("device"))
    family = options.get("family", "qwen2_audio")
    return TransformersAudioLLM(path, family=family, device=device, max_new_tokens=int(options.get("max_new_tokens", 256)))


# family -> factory(weights_path, options). Tests register scripted backends here.
BACKENDS = {"qwen2_audio": _transformers_backend, "qwen2_5_omni": _transformers_backend}


class AudioLLMJudge(JudgeAdapter):
    packages = ("torch", "transformers")
    modalities = ("text", "text+lyrics", "text+ref", "text+lyrics+ref")

    def availability(self):
        from .base import Availability

        family = self.options.get("family", "qwen2_audio")
        if family not in BACKENDS:
            return Availability(False, f"unknown family {family!r}; use one of {', '.join(sorted(BACKENDS))}")
        return super().availability()

    def backend(self):
        path = self.require()
        family = self.options.get("family", "qwen2_audio")
        factory = BACKENDS[family]
        return cached_model(("audiollm", family, path, pick_device(self.options.get("device")) if factory is _transformers_backend else ""), lambda: factory(path, self.options))

    def templates(self) -> tuple[str, ...]:
        return prompts.TEMPLATES[self.kind]


# --- CMI pairwise judge ----------------------------------------------------------------------


def _json_object(text: str) -> dict:
    """The first balanced {...} in the text (code fences and prose around it are allowed)."""
    start = text.find("{")
    while start != -1:
        depth, in_string, escape = 0, False, False
        for i in range(start, len(text)):
            ch = text[i]
            if in_string:
                if escape:
                    escape = False
                elif ch == "\\":
                    escape = True
                elif ch == '"':
                    in_string = False
            elif ch == '"':
                in_string = True
            elif ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    try:
                        value = json.loads(text[start : i + 1])
                    except json.JSONDecodeError:
                        break
                    if isinstance(value, dict):
                        return value
                    break
        start = text.find("{", start + 1)
    raise JudgeOutputError("no JSON object in the answer", raw=text)


def _score(value, name: str, *, low: float, high: float, raw: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise JudgeOutputError(f"{name} is not a number", raw=raw)
    try:
        number = float(value)
    except ValueError:
        raise JudgeOutputError(f"{name}={value!r} is not a number", raw=raw) from None
    if not np.isfinite(number) or not low <= number <= high:
        raise JudgeOutputError(f"{name}={number} is outside {low:g}-{high:g}", raw=raw)
    return number


def _label(value, name: str, raw: str) -> str:
    label = value.strip().lower() if isinstance(value, str) else None
    if label not in LABELS:
        raise JudgeOutputError(f"{name}={value!r} is not one of {', '.join(LABELS)}", raw=raw)
    return label


def parse_cmi_answer(text: str) -> dict:
    """{"musicality": label, "alignment": label, "scores": {dim: (a, b)}, "reason": str}; JudgeOutputError if malformed."""
    obj = _json_object(text)
    out = {
        MUSICALITY: _label(obj.get("music_quality"), "music_quality", text),
        ALIGNMENT: _label(obj.get("instruction_following"), "instruction_following", text),
        "scores": {
            MUSICALITY: tuple(_score(obj.get(k), k, low=1, high=10, raw=text) for k in ("MQ_score_a", "MQ_score_b")),
            ALIGNMENT: tuple(_score(obj.get(k), k, low=1, high=10, raw=text) for k in ("IF_score_a", "IF_score_b")),
        },
        "reason": str(obj.get("reason") or "").strip(),
    }
    return out


def parse_strict_answer(text: str) -> dict:
    """The strict 1-5 variant: one overall preference, used for both dimensions."""
    obj = _json_object(text)
    label = _label(obj.get("overall_preference"), "overall_preference", text)
    scores = tuple(_score(obj.get(k), k, low=1, high=5, raw=text) for k in ("score_a", "score_b"))
    return {MUSICALITY: label, ALIGNMENT: label, "scores": {MUSICALITY: scores, ALIGNMENT: scores}, "reason": str(obj.get("reason") or "").strip()}


SWAP = {MODEL_A: MODEL_B, MODEL_B: MODEL_A, BOTH: BOTH, NEITHER: NEITHER}


def combine_orders(forward: dict, swapped: dict) -> PairOutcome:
    """Position-consistency filter over two parsed answers.

    `forward` was asked with (A, B), `swapped` with (B, A). A dimension's label is kept only when
    both orders name the same underlying clip (or agree on both/neither); otherwise it is dropped.
    The verdict is "discarded" when no dimension survives.
    """
    labels, scores, consistency = {}, {}, {}
    for dim in (ALIGNMENT, MUSICALITY):
        first, second = forward[dim], SWAP[swapped[dim]]
        consistency[dim] = first == second
        if first == second:
            labels[dim] = first
        fa, fb = forward["scores"][dim]
        sb, sa = swapped["scores"][dim]
        scores[dim] = ((fa + sa) / 2.0, (fb + sb) / 2.0)
    status = "ok" if labels else "discarded"
    reasons = [r for r in (forward.get("reason"), swapped.get("reason")) if r]
    return PairOutcome(status=status, labels=labels, scores=scores, rationale="\n".join(reasons), details={"consistent": consistency})


class LLMPairwiseJudge(AudioLLMJudge):
    kind = "llm_pairwise"
    title = "Audio-LLM pairwise judge (CMI prompt)"
    measures = (
        "Both dimensions: an audio LLM hears prompt, lyrics, reference and both clips and answers JSON "
        "(music_quality, instruction_following, MQ/IF scores 1-10); asked in both orders, kept only if position-consistent."
    )
    dimensions = (ALIGNMENT, MUSICALITY)
    pairwise = True
    code_version = "1"

    def compare(self, clip_a: ClipAudio, clip_b: ClipAudio, condition: ConditionInput) -> PairOutcome:
        backend = self.backend()
        strict = bool(self.options.get("strict"))
        template = self.template or "default"
        system, parts = prompts.pairwise_parts(prompt=condition.prompt, lyrics=condition.lyrics, has_reference=condition.reference is not None, template=template)
        if strict:
            system = prompts.STRICT_SYSTEM
        parse = parse_strict_answer if strict else parse_cmi_answer
        wave = {"first": load_audio(clip_a.path, sample_rate=SAMPLE_RATE), "second": load_audio(clip_b.path, sample_rate=SAMPLE_RATE)}
        if condition.reference is not None:
            wave["reference"] = load_audio(condition.reference.path, sample_rate=SAMPLE_RATE)
        answers, raw = [], {}
        for order, (first, second) in (("ab", ("first", "second")), ("ba", ("second", "first"))):
            slots = {"first": wave[first], "second": wave[second], "reference": wave.get("reference")}
            waves = [slots[p["slot"]] for p in parts if p["type"] == "audio"]
            text = backend.generate(system, parts, waves)
            raw[order] = text
            try:
                answers.append(parse(text))
            except JudgeOutputError as exc:
                return PairOutcome(status="failed", details={"raw": raw, "error": str(exc), "order": order, "template": template})
        outcome = combine_orders(answers[0], answers[1])
        outcome.details.update({"raw": raw, "template": template, "strict": strict})
        return outcome


# --- AQAScore ---------------------------------------------------------------------------------


class AQAJudge(AudioLLMJudge):
    kind = "aqa"
    title = "AQAScore"
    measures = (
        "Per clip, one forward pass per yes/no question; score = P(Yes)/(P(Yes)+P(No)). "
        "Alignment: 'does this match <request>?'; musicality: 'is this well-produced, pleasant music?'."
    )
    dimensions = (ALIGNMENT, MUSICALITY)
    code_version = "1"
    encode_calls = 0

    def context_key(self, condition: ConditionInput) -> str:
        return condition.content_key("aqa", self.template or "default")

    def score_clips(self, clips: list[ClipAudio], condition: ConditionInput) -> list[dict]:
        backend = self.backend()
        questions = prompts.AQA_QUESTIONS[self.template or "default"]
        request = prompts.request_text(prompt=condition.prompt, lyrics=condition.lyrics)
        batch = []
        for clip in clips:
            wave = load_audio(clip.path, sample_rate=SAMPLE_RATE)
            type(self).encode_calls += 1
            for dim in (ALIGNMENT, MUSICALITY):
                text = questions[dim].format(request=request)
                batch.append((prompts.AQA_SYSTEM, [{"type": "audio", "slot": "clip"}, {"type": "text", "text": text}], [wave]))
        probs = _batched(backend, batch, int(self.options.get("batch_size", 8)))
        return [{ALIGNMENT: probs[2 * i], MUSICALITY: probs[2 * i + 1]} for i in range(len(clips))]


def _batched(backend, batch: list, size: int) -> list[float]:
    out: list[float] = []
    for start in range(0, len(batch), max(1, size)):
        out.extend(float(p) for p in backend.yes_probabilities(batch[start : start + size]))
    return out


# --- Rubric judge (AnyAudio-Judge style) ------------------------------------------------------


class RubricJudge(AudioLLMJudge):
    kind = "rubric"
    title = "Rubric judge"
    measures = (
        "Alignment only: the condition is split into binary checks (instruments, genre, mood, tempo/BPM, vocals, lyrics, "
        "reference style), each verified with an AQA-style yes/no pass; score = mean P(Yes), items stored per clip."
    )
    dimensions = (ALIGNMENT,)
    code_version = "1"
    encode_calls = 0

    def context_key(self, condition: ConditionInput) -> str:
        return condition.content_key("rubric", self.template or "default")

    def score_clips(self, clips: list[ClipAudio], condition: ConditionInput) -> list[dict]:
        backend = self.backend()
        items = prompts.rubric_items(prompt=condition.prompt, lyrics=condition.lyrics, has_reference=condition.reference is not None)
        form = prompts.RUBRIC_TEMPLATES[self.template or "default"]
        reference = load_audio(condition.reference.path, sample_rate=SAMPLE_RATE) if condition.reference else None
        batch = []
        for clip in clips:
            wave = load_audio(clip.path, sample_rate=SAMPLE_RATE)
            type(self).encode_calls += 1
            for item in items:
                text = form.format(check=item["check"])
                if item["needs_reference"]:
                    parts = [{"type": "audio", "slot": "reference"}, {"type": "audio", "slot": "clip"}, {"type": "text", "text": text}]
                    waves = [reference, wave]
                else:
                    parts, waves = [{"type": "audio", "slot": "clip"}, {"type": "text", "text": text}], [wave]
                batch.append((prompts.AQA_SYSTEM, parts, waves))
        probs = _batched(backend, batch, int(self.options.get("batch_size", 8)))
        out = []
        for i in range(len(clips)):
            mine = probs[i * len(items) : (i + 1) * len(items)]
            results = [{**item, "p_yes": p, "passed": p >= 0.5} for item, p in zip(items, mine)]
            out.append({ALIGNMENT: float(np.mean(mine)), "pass_share": float(np.mean([r["passed"] for r in results])), "items": results})
        return out
