"""Lyrics adherence: Whisper (transformers' WhisperForConditionalGeneration) transcribes each clip and jiwer
scores the transcript against the condition's lyrics.

The error rate is the judge's alignment score (1 - rate, higher follows the lyrics better; a rate can pass 1
through insertions, so the score can fall below 0). Lyrics in unspaced scripts (Chinese, Japanese, Thai, Lao,
Khmer, Burmese) and Korean are scored by character error rate, other lyrics by word error rate; both rates are
always stored. The language is the judge's option `language` (a Whisper code such as "en" or "zh"), else read from
the lyrics' script (Han -> zh, kana -> ja, Hangul -> ko, Thai -> th, Latin -> en); "detect" leaves it to Whisper.
It is passed to generate, so Whisper neither detects it nor translates.

One normalisation serves lyrics and transcript alike (jiwer transforms): section tags and LRC timestamps in square
brackets dropped ("[chorus]", "[00:12.50]", Whisper's "[Music]"), lower case, punctuation removed, whitespace
collapsed; for the character rate, spaces removed in unspaced scripts and kept as one character elsewhere.

Phoneme error rate is not given: phonemizer needs the espeak-ng system library and g2p_en downloads NLTK data at
import, neither of which a worker here has; the character error rate is the sub-word measure instead.

Whisper reads 30 s windows: a clip is cut into consecutive windows (the tail under 3 s dropped after a full one),
all windows of a call go through generate in batches, and a clip's transcript is its windows' joined. A word cut
at a window edge can be misheard. There is no vocal separation: accompaniment stays in the input, as in the
published lyric-WER evaluations that run Whisper on the mix. Transcripts are cached per clip and language, so a
clip judged under several lyric conditions is transcribed once.
"""

from __future__ import annotations

import unicodedata

from .base import ALIGNMENT, BOTH, ClipAudio, ConditionInput, JudgeAdapter, chunks, prefer, store_fill
from .device import OnDevice, decode_processes, decode_workers, prefetch_audio, torch_dtype
from .runtime import cached_model

SAMPLE_RATE = 16000
WINDOW_SECONDS = 30
NOT_APPLICABLE = "the condition has no lyrics"

# Scripts written without spaces between words (Korean is spaced, but scored by characters by convention).
_UNSPACED = {"han": "zh", "kana": "ja", "hangul": "ko", "thai": "th", "lao": "lo", "khmer": "km", "myanmar": "my"}
_RANGES = (
    ("kana", 0x3040, 0x30FF),
    ("kana", 0x31F0, 0x31FF),
    ("han", 0x3400, 0x4DBF),
    ("han", 0x4E00, 0x9FFF),
    ("han", 0xF900, 0xFAFF),
    ("han", 0x20000, 0x2FA1F),
    ("hangul", 0xAC00, 0xD7AF),
    ("hangul", 0x1100, 0x11FF),
    ("hangul", 0x3130, 0x318F),
    ("thai", 0x0E00, 0x0E7F),
    ("lao", 0x0E80, 0x0EFF),
    ("myanmar", 0x1000, 0x109F),
    ("khmer", 0x1780, 0x17FF),
)
_UNSPACED_LANGUAGES = set(_UNSPACED.values()) | {"yue"}


def script_of(char: str) -> str:
    code = ord(char)
    for name, low, high in _RANGES:
        if low <= code <= high:
            return name
    return "latin" if "LATIN" in unicodedata.name(char, "") else "other"


def lyrics_language(text: str) -> str:
    """The Whisper language code the lyrics' script says: the most frequent script (characters of unspaced
    scripts, words of others), kana before Han (Japanese mixes both), Latin read as English; "" without letters."""
    counts: dict[str, int] = {}
    previous = ""
    for char in text:
        name = script_of(char) if char.isalpha() else ""
        # A spaced script's word counts once, as a Han character does: Chinese lyrics with English words stay Chinese.
        if name and not (name in ("latin", "other") and name == previous):
            counts[name] = counts.get(name, 0) + 1
        previous = name
    if not counts:
        return ""
    if counts.get("kana", 0) and counts.get("kana", 0) + counts.get("han", 0) >= max(counts.values()):
        return "ja"
    top = max(counts, key=counts.get)
    return _UNSPACED.get(top, "en" if top == "latin" else "")


def is_unspaced(language: str) -> bool:
    return language in _UNSPACED_LANGUAGES


def _transforms(*, unspaced: bool):
    """(word transform, character transform), the same for lyrics and transcript."""
    import jiwer

    common = [
        jiwer.SubstituteRegexes({r"\[[^\]]*\]": " ", r"\s+": " "}),
        jiwer.ToLowerCase(),
        jiwer.RemovePunctuation(),
        jiwer.RemoveMultipleSpaces(),
        jiwer.Strip(),
    ]
    words = jiwer.Compose([*common, jiwer.ReduceToListOfListOfWords()])
    characters = jiwer.Compose([*common, *([jiwer.RemoveWhiteSpace(replace_by_space=False)] if unspaced else []), jiwer.ReduceToListOfListOfChars()])
    return words, characters


def has_words(text: str) -> bool:
    words, _ = _transforms(unspaced=False)
    return bool(text.strip()) and bool(sum(words(text), []))


def error_rates(reference: str, hypothesis: str, *, language: str) -> dict:
    """Word and character error rates of `hypothesis` against `reference` (jiwer, one normalisation for both),
    and which of them is the judge's measure for `language`."""
    import jiwer

    unspaced = is_unspaced(language)
    words, characters = _transforms(unspaced=unspaced)
    if not has_words(reference):
        raise ValueError("the lyrics have no words left after normalisation")
    # Nothing heard (an empty transcript) is every reference unit deleted: rate 1, as jiwer counts it.
    wer = float(jiwer.wer(reference, hypothesis, reference_transform=words, hypothesis_transform=words))
    cer = float(jiwer.cer(reference, hypothesis, reference_transform=characters, hypothesis_transform=characters))
    measure = "cer" if unspaced else "wer"
    return {"wer": wer, "cer": cer, "measure": measure, "rate": cer if unspaced else wer}


def _load(path: str, device: str, dtype: str):
    from transformers import WhisperForConditionalGeneration, WhisperProcessor

    model = WhisperForConditionalGeneration.from_pretrained(path, dtype=torch_dtype(dtype)).to(device).eval()
    processor = WhisperProcessor.from_pretrained(path)
    return model, processor


class LyricsJudge(OnDevice, JudgeAdapter):
    kind = "lyrics"
    title = "Lyrics error rate (Whisper ASR)"
    measures = (
        "Alignment only, for lyric conditions: Whisper transcribes the clip; score = 1 - error rate against the lyrics "
        "(character error rate for Chinese and other unspaced scripts, word error rate otherwise; jiwer). Clips of "
        "conditions without lyrics are not applicable."
    )
    dimensions = (ALIGNMENT,)
    modalities = ("text+lyrics", "text+lyrics+ref")
    packages = ("torch", "transformers", "jiwer")
    code_version = "1"
    # fp16 on CUDA, as Whisper's own package decodes there; bf16's shorter mantissa was not checked against it.
    cuda_dtype = "float16"

    transcribe_calls = 0


    def availability(self):
        from .base import Availability

        try:
            self.tie_margin()
            self.max_new_tokens()
        except (TypeError, ValueError) as exc:
            return Availability(False, str(exc))
        return super().availability()

    # --- options ------------------------------------------------------------------------
    def tie_margin(self) -> float:
        value = float(self.options.get("tie_margin", 0.02))
        if not 0.0 <= value < 1.0:
            raise ValueError(f"tie_margin must be in [0, 1), got {value}")
        return value

    def max_new_tokens(self) -> int:
        value = int(self.options.get("max_new_tokens", 220))
        if value < 1:
            raise ValueError(f"max_new_tokens must be at least 1, got {value}")
        return value

    def language(self, condition: ConditionInput) -> str:
        """The Whisper language for this condition's clips: the option, else the lyrics' script; "" = Whisper detects."""
        option = str(self.options.get("language") or "auto").strip().lower()
        if option == "detect":
            return ""
        if option != "auto":
            return option
        return lyrics_language(condition.lyrics)

    def context_key(self, condition: ConditionInput) -> str:
        return condition.content_key("lyrics", self.language(condition), str(self.max_new_tokens()))

    # --- the model ----------------------------------------------------------------------
    def _model(self):
        key = ("lyrics", self.require(), self.device(), self.dtype())
        _, path, device, dtype = key
        model, processor = cached_model(key, lambda: _load(path, device, dtype))
        return model, processor, device

    def batch_size(self, device: str) -> int:
        return max(1, int(self.options.get("batch_size", 16 if device.startswith("cuda") else 4)))

    def transcribe_waves(self, waves, *, language: str) -> list[str]:
        """One transcript per 16 kHz mono wave: its 30 s windows through generate in batches, joined."""
        import torch

        model, processor, device = self._model()
        dtype = next(model.parameters()).dtype
        limit = getattr(model.config, "max_target_positions", 448)
        # The decoder prompt (start, language, task, no-timestamps) takes four positions.
        new_tokens = min(self.max_new_tokens(), max(1, limit - 4))
        windows, owner = [], []
        count = 0
        for i, wave in enumerate(waves):
            count += 1
            for part in chunks(wave, size=SAMPLE_RATE * WINDOW_SECONDS):
                windows.append(part)
                owner.append(i)
        batch = self.batch_size(device)
        texts: list[str] = []
        kwargs = {"task": "transcribe", "max_new_tokens": new_tokens, "num_beams": 1, "do_sample": False}
        if language:
            kwargs["language"] = language
        with torch.inference_mode():
            for start in range(0, len(windows), batch):
                # The library's torch log-mel, computed on the judge's device.
                inputs = processor.feature_extractor(windows[start : start + batch], sampling_rate=SAMPLE_RATE, return_tensors="pt", device=device)
                features = inputs["input_features"].to(device, dtype)
                ids = model.generate(features, **kwargs)
                texts.extend(processor.batch_decode(ids, skip_special_tokens=True))
        type(self).transcribe_calls += count
        joined = [[] for _ in range(count)]
        for i, text in zip(owner, texts):
            if text.strip():
                joined[i].append(text.strip())
        return [("" if is_unspaced(language) else " ").join(parts) for parts in joined]

    def transcripts(self, clips: list[ClipAudio], *, language: str) -> dict[str, str]:
        """Transcript per clip hash, from the clip cache (context: language and token budget) or computed."""

        def compute(missing):
            waves = prefetch_audio([c.path for c in missing], sample_rate=SAMPLE_RATE, workers=decode_workers(self.options), processes=decode_processes(self.options))
            return [{"transcript": text} for text in self.transcribe_waves(waves, language=language)]

        context = f"asr:{language or 'detect'}:{self.max_new_tokens()}"
        found = store_fill(self.store, clips, context, compute)
        return {sha: value["transcript"] for sha, value in found.items()}

    # --- scores -------------------------------------------------------------------------
    def score_clips(self, clips: list[ClipAudio], condition: ConditionInput) -> list[dict]:
        if not condition.lyrics.strip():
            return [{ALIGNMENT: None, "not_applicable": NOT_APPLICABLE} for _ in clips]
        language = self.language(condition)
        measure_language = language or lyrics_language(condition.lyrics)
        if not has_words(condition.lyrics):
            return [{ALIGNMENT: None, "not_applicable": "the lyrics have no words left after normalisation (only tags or punctuation)"} for _ in clips]
        heard = self.transcripts(clips, language=language)
        out = []
        for clip in clips:
            text = heard[clip.sha256]
            rates = error_rates(condition.lyrics, text, language=measure_language)
            out.append({ALIGNMENT: 1.0 - rates["rate"], **rates, "language": language or "detect", "transcript": text})
        return out

    def pair_label(self, dimension: str, score_a, score_b) -> str | None:
        """Within the tie margin of each other the two clips follow the lyrics equally (both), else the lower rate wins."""
        label = prefer(score_a, score_b)
        if label is not None and abs(float(score_a) - float(score_b)) <= self.tie_margin():
            return BOTH
        return label

    def warm(self) -> None:
        import numpy as np

        self.transcribe_waves([np.zeros(SAMPLE_RATE, dtype=np.float32)], language="en")

