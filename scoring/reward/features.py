"""Frozen inputs of the reward model, from one existing judge (the "feature judge").

- Clips: the judge's per-clip vector, read from (and written to) that judge's clip cache:
  the signal judge's measurements (loudness, peaks, clipping, silence, DC, spectrum, its
  penalties and score; no weights needed), or a CLAP / MuQ-MuLan audio embedding.
- Condition: the prompt's text embedding from the same judge when it has a text tower (CLAP,
  MuQ-MuLan); otherwise, and always for lyrics, a hashed bag of words and word bigrams
  (signed feature hashing, blake2b, L2-normalised). The hashed embedding knows which words
  occur, not what they mean: "bright" and "brilliant" share nothing. The model card says which
  was used.
- Reference: the reference clip's vector from the same judge (the model adds the difference).
- Prompt attributes (PROMPT_ATTRIBUTES, last in every condition vector): tempo, mood and
  instrument word groups and a number named in the prompt. With hashed text the model crosses
  them with every clip feature, so a preference that depends on the prompt ("bright" wants a high
  centroid, "dark" a low one) is a linear term; with a judge's text tower the model instead adds
  the cosine similarity of the clip's audio embedding to the prompt's text embedding.
"""

from __future__ import annotations

import hashlib
import re

import numpy as np

from ..judges.base import ClipAudio, ConditionInput, store_fill

FEATURE_KINDS = ("signal", "clap", "muq_mulan")
PROMPT_DIM, LYRICS_DIM = 64, 32
TEXT_MODES = ("auto", "judge", "hashed")
SIGNAL_KEYS = (
    "integrated_lufs",
    "loudness_range_lu",
    "sample_peak_dbfs",
    "true_peak_dbtp",
    "clipping_ratio",
    "silence_ratio",
    "dc_offset",
    "spectral_flatness",
    "spectral_centroid_hz",
    "spectral_rolloff_hz",
    "high_band_share",
)
PENALTY_KEYS = ("clipping", "overs", "silence", "dc", "noise", "hiss", "level")
_TOKEN = re.compile(r"[a-z0-9']+")
_NUMBER = re.compile(r"(?<![a-z0-9.])(\d+(?:\.\d+)?)")
# What a prompt asks for, as a few named attributes the signal features can be crossed with
# (model_inputs): a 1 when any of the words occurs (whole words, lower case). Word lists are short
# on purpose: they name the tempo, mood and instrument terms prompts commonly use, and say nothing
# about words outside them.
PROMPT_WORDS = (
    ("tempo_fast", ("fast", "quick", "rapid", "upbeat", "uptempo", "driving", "danceable")),
    ("tempo_slow", ("slow", "downtempo", "ballad", "laid-back", "laidback", "unhurried")),
    ("mood_bright", ("bright", "happy", "cheerful", "joyful", "uplifting", "sunny", "shimmering", "airy", "brilliant", "sparkling")),
    ("mood_dark", ("dark", "sad", "melancholic", "melancholy", "gloomy", "somber", "sombre", "ominous", "murky", "deep", "brooding")),
    ("mood_calm", ("calm", "peaceful", "gentle", "soft", "mellow", "relaxing", "relaxed", "soothing", "ambient", "quiet")),
    ("mood_intense", ("aggressive", "intense", "energetic", "powerful", "heavy", "loud", "epic", "fierce")),
    ("piano", ("piano", "keys", "keyboard")),
    ("guitar", ("guitar", "guitars", "acoustic")),
    ("drums", ("drum", "drums", "percussion", "beat", "beats")),
    ("strings", ("strings", "violin", "violins", "cello", "orchestra", "orchestral")),
    ("synth", ("synth", "synths", "synthesizer", "electronic")),
    ("bass", ("bass", "bassline", "808")),
    ("voice", ("vocal", "vocals", "voice", "singing", "choir", "sung")),
)
# Plus two columns for a number named in the prompt (usually a tempo in BPM): whether there is one,
# and the first one over 100, capped at 3.
PROMPT_ATTRIBUTES = tuple(name for name, _ in PROMPT_WORDS) + ("has_number", "number")


class FeatureUnavailable(ValueError):
    """The judge cannot give per-clip features; the message names the judges that can."""


def hashed_text(text: str, dim: int) -> np.ndarray:
    """Signed hashing of lower-cased words and word bigrams into `dim` slots, unit length (zeros for no words)."""
    words = _TOKEN.findall((text or "").lower())
    vector = np.zeros(dim)
    for token in words + [f"{a} {b}" for a, b in zip(words, words[1:])]:
        h = int.from_bytes(hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest(), "big")
        vector[h % dim] += 1.0 if (h >> 63) & 1 else -1.0
    norm = np.linalg.norm(vector)
    return vector / norm if norm > 0 else vector


def prompt_attributes(text: str) -> np.ndarray:
    """The PROMPT_ATTRIBUTES of a prompt: one 0/1 per word group, then has-number and the number / 100 (capped at 3)."""
    lowered = (text or "").lower()
    words = set(re.findall(r"[a-z0-9'-]+", lowered)) | set(_TOKEN.findall(lowered))
    out = [float(bool(words & set(group))) for _, group in PROMPT_WORDS]
    number = _NUMBER.search(lowered)
    out += [1.0, min(float(number.group(1)) / 100.0, 3.0)] if number else [0.0, 0.0]
    return np.asarray(out, dtype=np.float64)


def condition_features(prompts: np.ndarray, lyrics: list[str], prompt_texts: list[str], has_prompt: list[bool]) -> np.ndarray:
    """(n, e): prompt embedding, hashed lyrics, has-prompt and has-lyrics flags, and the prompt attributes last."""
    hashed = np.stack([hashed_text(t, LYRICS_DIM) for t in lyrics])
    flags = np.asarray([[float(p), float(bool(t.strip()))] for p, t in zip(has_prompt, lyrics)])
    attributes = np.stack([prompt_attributes(t) for t in prompt_texts])
    return np.concatenate([np.asarray(prompts, dtype=np.float64).reshape(len(lyrics), -1), hashed, flags, attributes], axis=1)


def signal_vector(scores: dict) -> np.ndarray:
    """The signal judge's stored scores of a clip as a fixed-order vector (NaN where a measure is missing)."""
    features, penalties = scores.get("features") or {}, scores.get("penalties") or {}

    def value(x) -> float:
        return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and np.isfinite(x) else np.nan

    parts = [value(features.get(k)) for k in SIGNAL_KEYS] + [value(penalties.get(k)) for k in PENALTY_KEYS] + [value(scores.get("musicality"))]
    return np.asarray(parts, dtype=np.float64)


class Featurizer:
    """Per-clip and per-condition vectors from one feature judge's adapter (with its clip cache attached)."""

    def __init__(self, adapter, *, text: str = "auto"):
        if adapter.kind not in FEATURE_KINDS:
            raise FeatureUnavailable(f"judge {adapter.config.key} ({adapter.kind}) gives no per-clip features; use a judge of kind {', '.join(FEATURE_KINDS)}")
        if text not in TEXT_MODES:
            raise FeatureUnavailable(f"text must be one of {', '.join(TEXT_MODES)}, not {text!r}")
        has_tower = hasattr(adapter, "embed_text")
        if text == "judge" and not has_tower:
            raise FeatureUnavailable(f"judge {adapter.config.key} has no text encoder; use text=hashed")
        self.adapter = adapter
        self.text = ("judge" if has_tower else "hashed") if text == "auto" else text
        self._text_dim: int | None = None

    def describe(self) -> dict:
        return {
            "judge": self.adapter.config.key,
            "kind": self.adapter.kind,
            "judge_version": self.adapter.config.version,
            "cache_version": self.adapter.cache_version(),
            "text": self.text,
            "text_note": "prompt embedded by the feature judge's text encoder" if self.text == "judge" else "prompt as a hashed bag of words and bigrams (no text model)",
            "lyrics": f"hashed bag of words and bigrams ({LYRICS_DIM} slots)",
        }

    # --- clips ---------------------------------------------------------------------------
    def clip_vectors(self, clips: list[ClipAudio]) -> np.ndarray:
        if not clips:
            return np.zeros((0, 0))
        if self.adapter.kind == "signal":
            return np.stack([signal_vector(s) for s in self._signal_scores(clips)])
        return np.stack([np.asarray(v, dtype=np.float64) for v in self.adapter.audio_embeddings(clips)])

    def _signal_scores(self, clips: list[ClipAudio]) -> list[dict]:
        """The signal judge's clip scores: its cache first (context "", as its scoring runs store them), then computed."""
        found = store_fill(self.adapter.store, clips, "", lambda todo: self.adapter.score_clips(todo, ConditionInput()))
        return [found[c.sha256] for c in clips]

    # --- conditions ------------------------------------------------------------------------
    def _judge_text(self, texts: list[str]) -> np.ndarray:
        if self.adapter.kind == "clap":
            return np.asarray(self.adapter.embed_text(texts), dtype=np.float64)
        return np.stack([np.asarray(self.adapter.embed_text(t), dtype=np.float64).reshape(-1) for t in texts])

    def _prompt_vectors(self, prompts: list[str]) -> np.ndarray:
        if self.text == "hashed":
            return np.stack([hashed_text(p, PROMPT_DIM) for p in prompts])
        if self._text_dim is None:
            self._text_dim = int(self._judge_text(["music"]).shape[1])
        out = np.zeros((len(prompts), self._text_dim))
        wanted = sorted({p.strip() for p in prompts if p.strip()})
        if wanted:
            vectors = dict(zip(wanted, self._judge_text(wanted)))
            for i, p in enumerate(prompts):
                if p.strip():
                    out[i] = vectors[p.strip()]
        return out

    def condition_vectors(self, conditions: list[ConditionInput]) -> np.ndarray:
        """(n, e): condition_features of each condition (the prompt attributes are the last columns)."""
        if not conditions:
            return np.zeros((0, 0))
        prompts = self._prompt_vectors([c.prompt for c in conditions])
        return condition_features(prompts, [c.lyrics for c in conditions], [c.prompt for c in conditions], [bool(c.prompt.strip()) for c in conditions])

    def prompt_inputs(self) -> dict:
        """How the condition enters the model (TrainConfig fields): with a judge's text tower the prompt
        embedding and its cosine similarity to the clip's audio embedding; with hashed text the prompt
        attributes crossed with the clip features."""
        if self.text == "judge":
            return {"similarity": True, "crossed": 0}
        return {"similarity": False, "crossed": len(PROMPT_ATTRIBUTES)}
