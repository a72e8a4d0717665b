"""Audio-LLM judges through transformers: CMI pairwise judge, AQAScore, rubric judge.

The model backend (llm_backend.TransformersAudioLLM) has two batched operations: greedy text for
many prompts per `generate` call, and P(Yes)/(P(Yes)+P(No)) from one forward pass. The judges
build requests (system, parts, waves), decode each distinct file once in a bounded thread pool,
and hand the backend length-sorted batches; a malformed answer fails only its own pair.
"""

from __future__ import annotations

import json

import numpy as np

from .runtime import cached_model

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
    JudgeUnavailable,
    PairOutcome,
)
from .device import decode_processes, decode_workers, dtype_name, judge_device, prefetch_audio
from .llm_backend import SAMPLE_RATE, TransformersAudioLLM, generate_texts, yes_probabilities

LABELS = (MODEL_A, MODEL_B, BOTH, NEITHER)


def _transformers_backend(path: str, options: dict):
    device = judge_device(options)
    return TransformersAudioLLM(
        path,
        family=options.get("family", "qwen2_audio"),
        device=device,
        dtype=dtype_name(options.get("dtype"), device),
        max_new_tokens=int(options.get("max_new_tokens", 256)),
        device_features=bool(options.get("device_features", True)),
    )


def _endpoint_backend(_path: str, options: dict):
    from .openai_backend import OpenAIChatBackend

    return OpenAIChatBackend(options)


# family -> factory(weights_path, options). Tests and benchmarks register other backends here.
# "openai": an OpenAI-compatible chat completions endpoint (openai_backend.py); no weights here.
BACKENDS = {"qwen2_audio": _transformers_backend, "qwen2_5_omni": _transformers_backend, "qwen3_omni": _transformers_backend, "openai": _endpoint_backend}


def endpoint_records(*answers) -> dict | None:
    """The stored summary of the endpoint requests behind these answers (None for local backends)."""
    records = [a.record for a in answers if hasattr(a, "record")]
    if not records:
        return None
    from .openai_backend import summarise

    return summarise(records)


class AudioLLMJudge(JudgeAdapter):
    packages = ("torch", "transformers")
    modalities = ("text", "text+lyrics", "text+ref", "text+lyrics+ref")

    def availability(self):
        from .base import Availability

        family = self.options.get("family", "qwen2_audio")
        if family not in BACKENDS:
            return Availability(False, f"unknown family {family!r}; use one of {', '.join(sorted(BACKENDS))}")
        if self._endpoint():
            from .openai_backend import EndpointSettings

            try:
                EndpointSettings(self.options)
            except JudgeUnavailable as exc:
                return Availability(False, str(exc))
            return Availability(True)
        if family == "qwen3_omni":
            from .base import package_missing

            # Qwen3OmniMoeProcessor will not build without its image and video processors, which need these even
            # when only audio is sent.
            missing = package_missing("torchvision", "PIL")
            if missing:
                return Availability(False, f"family qwen3_omni needs torchvision and Pillow for Qwen3OmniMoeProcessor (missing: {missing}); install a torchvision build matching the installed torch")
        return super().availability()

    def _endpoint(self) -> bool:
        return BACKENDS.get(self.options.get("family", "qwen2_audio")) is _endpoint_backend

    def _transformers(self) -> bool:
        return BACKENDS.get(self.options.get("family", "qwen2_audio")) is _transformers_backend

    def cache_version(self) -> str:
        version = super().cache_version()
        if self._endpoint():
            import hashlib

            # Another served model (or server) answers differently: its clip scores are kept apart.
            served = f"{self.options.get('endpoint', '')}\x1f{self.options.get('model', '')}"
            return f"{version}.ep{hashlib.sha256(served.encode()).hexdigest()[:10]}"
        if not self._transformers():
            return version
        # bf16 and fp32 probabilities differ slightly: keep them apart in the clip cache.
        try:
            return f"{version}.{dtype_name(self.options.get('dtype'), judge_device(self.options, key=self.config.key))}"
        except JudgeUnavailable:
            return f"{version}.unavailable"  # nothing is computed; the job records why

    def model_key(self) -> tuple:
        path = self.require()
        family = self.options.get("family", "qwen2_audio")
        if self._endpoint():
            settings = {k: v for k, v in self.options.items() if k not in ("cache", "batch_size")}
            return ("audiollm", family, json.dumps(settings, sort_keys=True, default=str), "", "")
        if not self._transformers():
            return ("audiollm", family, path, "", "")
        device = judge_device(self.options, key=self.config.key)
        return ("audiollm", family, path, device, dtype_name(self.options.get("dtype"), device))

    def backend(self):
        key = self.model_key()
        factory = BACKENDS[key[1]]
        return cached_model(key, lambda: factory(key[2], self.options))

    def batch_size(self) -> int:
        """Requests per forward pass or generate call (option `batch_size`)."""
        default = 16 if self._transformers() and judge_device(self.options, key=self.config.key).startswith("cuda") else 8
        return max(1, int(self.options.get("batch_size", default)))

    def waves(self, paths: list[str]) -> dict[str, np.ndarray]:
        """Each distinct file decoded once, ahead in threads; a file that fails raises AudioDecodeError."""
        distinct = list(dict.fromkeys(paths))
        return dict(zip(distinct, prefetch_audio(distinct, sample_rate=SAMPLE_RATE, workers=decode_workers(self.options), processes=decode_processes(self.options))))

    def templates(self) -> tuple[str, ...]:
        return prompts.TEMPLATES[self.kind]

    def warm(self) -> None:
        backend = self.backend()
        if self._endpoint():
            return  # nothing to load; a request at start-up would only cost the endpoint
        request = (prompts.AQA_SYSTEM, [{"type": "audio", "slot": "clip"}, {"type": "text", "text": "Is this music? Answer Yes or No."}], [np.zeros(SAMPLE_RATE, np.float32)])
        if hasattr(backend, "generate_many") and self.pairwise:
            backend.generate_many([request], max_new_tokens=2)
        elif hasattr(backend, "yes_tensor") and getattr(backend, "yes_id", None) is not None:
            backend.yes_probabilities([request])


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
    # Each order's answers in screen positions, for the judge's position-bias table (scoring/pseudo.py).
    orders = {"ab": {dim: forward[dim] for dim in (ALIGNMENT, MUSICALITY)}, "ba": {dim: swapped[dim] for dim in (ALIGNMENT, MUSICALITY)}}
    return PairOutcome(status=status, labels=labels, scores=scores, rationale="\n".join(reasons), details={"consistent": consistency, "orders": orders})


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
        return self.compare_many([(clip_a, clip_b, condition)])[0]

    def compare_many(self, pairs: list[tuple[ClipAudio, ClipAudio, ConditionInput]]) -> list[PairOutcome]:
        """Both orders of every pair, `batch_size` prompts per generate call; one outcome per pair.

        An answer that does not parse fails its own pair only. A file that cannot be decoded
        fails the pairs that need it.
        """
        paths = [c.path for a, b, cond in pairs for c in (a, b, cond.reference) if c is not None]
        broken: dict[str, str] = {}
        waves = self._waves_or_errors(paths, broken)
        outcomes: list[PairOutcome | None] = [None] * len(pairs)
        ready, items = [], []
        for index, (clip_a, clip_b, condition) in enumerate(pairs):
            failed = [broken[c.path] for c in (clip_a, clip_b, condition.reference) if c is not None and c.path in broken]
            if failed:
                outcomes[index] = PairOutcome(status="failed", details={"error": f"AudioDecodeError: {failed[0]}", "template": self.template or "default"})
                continue
            ready.append(index)
            items.append((waves[clip_a.path], waves[clip_b.path], waves[condition.reference.path] if condition.reference else None, condition))
        for index, outcome in zip(ready, self.compare_waves(items)):
            outcomes[index] = outcome
        return outcomes

    def compare_waves(self, items: list[tuple[np.ndarray, np.ndarray, np.ndarray | None, ConditionInput]]) -> list[PairOutcome]:
        """compare_many on decoded audio at 16 kHz: (wave_a, wave_b, reference wave or None, condition) per pair."""
        backend = self.backend()
        strict = bool(self.options.get("strict"))
        template = self.template or "default"
        parse = parse_strict_answer if strict else parse_cmi_answer
        requests = []
        for wave_a, wave_b, reference, condition in items:
            system, parts = prompts.pairwise_parts(prompt=condition.prompt, lyrics=condition.lyrics, has_reference=reference is not None, template=template)
            if strict:
                system = prompts.STRICT_SYSTEM
            for first, second in ((wave_a, wave_b), (wave_b, wave_a)):
                slots = {"reference": reference, "first": first, "second": second}
                requests.append((system, parts, [slots[p["slot"]] for p in parts if p["type"] == "audio"]))
        texts = generate_texts(backend, requests, self.batch_size()) if requests else []
        outcomes = []
        for forward_text, swapped_text in zip(texts[0::2], texts[1::2]):
            raw = {"ab": str(forward_text), "ba": str(swapped_text)}
            usage = endpoint_records(forward_text, swapped_text)
            extra = {"endpoint": usage} if usage is not None else {}
            failed = [(order, text.error) for order, text in (("ab", forward_text), ("ba", swapped_text)) if getattr(text, "error", "")]
            if failed:
                order, error = failed[0]
                outcomes.append(PairOutcome(status="failed", details={"raw": raw, "error": f"endpoint request failed: {error}", "order": order, "template": template, **extra}))
                continue
            answers = []
            for order, text in raw.items():
                try:
                    answers.append(parse(text))
                except JudgeOutputError as exc:
                    outcomes.append(PairOutcome(status="failed", details={"raw": raw, "error": str(exc), "order": order, "template": template, **extra}))
                    break
            else:
                outcome = combine_orders(answers[0], answers[1])
                outcome.details.update({"raw": raw, "template": template, "strict": strict, **extra})
                outcomes.append(outcome)
        return outcomes

    def _waves_or_errors(self, paths: list[str], broken: dict) -> dict[str, np.ndarray]:
        """Decode each distinct file once (ahead in threads); files that fail go into `broken`."""
        from .base import AudioDecodeError, load_audio
        from .device import prefetch

        def decode(path):
            try:
                return load_audio(path, sample_rate=SAMPLE_RATE)
            except AudioDecodeError as exc:
                return exc

        distinct = list(dict.fromkeys(paths))
        waves = {}
        for path, wave in zip(distinct, prefetch(distinct, decode, workers=decode_workers(self.options))):
            if isinstance(wave, AudioDecodeError):
                broken[path] = str(wave)
            else:
                waves[path] = wave
        return waves


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
        waves = self.waves([c.path for c in clips])
        return self.score_waves([waves[c.path] for c in clips], condition)

    def score_waves(self, waves: list[np.ndarray], condition: ConditionInput) -> list[dict]:
        """score_clips on decoded audio at 16 kHz."""
        backend = self.backend()
        questions = prompts.AQA_QUESTIONS[self.template or "default"]
        request = prompts.request_text(prompt=condition.prompt, lyrics=condition.lyrics)
        batch = []
        for wave in waves:
            type(self).encode_calls += 1
            for dim in (ALIGNMENT, MUSICALITY):
                text = questions[dim].format(request=request)
                batch.append((prompts.AQA_SYSTEM, [{"type": "audio", "slot": "clip"}, {"type": "text", "text": text}], [wave]))
        probs = yes_probabilities(backend, batch, self.batch_size())
        out = []
        for i in range(len(waves)):
            scores = {ALIGNMENT: float(probs[2 * i]), MUSICALITY: float(probs[2 * i + 1])}
            usage = endpoint_records(probs[2 * i], probs[2 * i + 1])
            if usage is not None:
                scores["endpoint"] = usage
            out.append(scores)
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
        waves = self.waves([c.path for c in clips] + ([condition.reference.path] if condition.reference else []))
        reference = waves[condition.reference.path] if condition.reference else None
        batch = []
        for clip in clips:
            wave = waves[clip.path]
            type(self).encode_calls += 1
            for item in items:
                text = form.format(check=item["check"])
                if item["needs_reference"]:
                    parts = [{"type": "audio", "slot": "reference"}, {"type": "audio", "slot": "clip"}, {"type": "text", "text": text}]
                    heard = [reference, wave]
                else:
                    parts, heard = [{"type": "audio", "slot": "clip"}, {"type": "text", "text": text}], [wave]
                batch.append((prompts.AQA_SYSTEM, parts, heard))
        probs = yes_probabilities(backend, batch, self.batch_size())
        out = []
        for i in range(len(clips)):
            mine = probs[i * len(items) : (i + 1) * len(items)]
            results = [{**item, "p_yes": float(p), "passed": p >= 0.5} for item, p in zip(items, mine)]
            scores = {ALIGNMENT: float(np.mean(mine)), "pass_share": float(np.mean([r["passed"] for r in results])), "items": results}
            usage = endpoint_records(*mine)
            if usage is not None:
                scores["endpoint"] = usage
            out.append(scores)
        return out
