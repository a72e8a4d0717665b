"""CLAP text-audio (and reference-audio) similarity through transformers' ClapModel.

Audio is embedded once per clip (48 kHz mono, <= 10 s windows, window embeddings averaged and
renormalised): unfused checkpoints crop longer input at random, so whole-clip input would not
give the same score twice. The embedding is cached per clip without context; the cosine with a
condition's text (or reference clip) is cheap and cached per condition.
"""

from __future__ import annotations

import numpy as np

from auditorium.runtime import cached_model, pick_device

from .base import ALIGNMENT, ClipAudio, ConditionInput, JudgeAdapter, chunks, load_audio

SAMPLE_RATE = 48000
WINDOW_SECONDS = 10


def _load(path: str, device: str):
    from transformers import ClapModel, ClapProcessor

    model = ClapModel.from_pretrained(path).to(device).eval()
    processor = ClapProcessor.from_pretrained(path)
    return model, processor


class ClapJudge(JudgeAdapter):
    kind = "clap"
    title = "CLAP similarity"
    measures = (
        "Alignment only: cosine between the clip's CLAP audio embedding and the prompt (and lyrics) text embedding; "
        "with a reference clip, the mean of text-audio and reference-audio cosine."
    )
    dimensions = (ALIGNMENT,)
    modalities = ("text", "text+lyrics", "text+ref", "text+lyrics+ref")
    packages = ("torch", "transformers")
    code_version = "1"

    encode_calls = 0

    def _model(self):
        path = self.require()
        device = pick_device(self.options.get("device"))
        return cached_model(("clap", path, device), lambda: _load(path, device)) + (device,)

    def context_key(self, condition: ConditionInput) -> str:
        return condition.content_key("clap", str(self.options.get("use_lyrics", True)))

    # --- embeddings -------------------------------------------------------------------
    def embed_audio(self, waves: list[np.ndarray]) -> np.ndarray:
        """One unit vector per clip: windows of all clips go through the encoder in batches."""
        import torch

        model, processor, device = self._model()
        size = SAMPLE_RATE * WINDOW_SECONDS
        windows, owner = [], []
        for i, wave in enumerate(waves):
            for part in chunks(wave, size=size):
                windows.append(part)
                owner.append(i)
        batch = int(self.options.get("batch_size", 8))
        out = []
        with torch.inference_mode():
            for start in range(0, len(windows), batch):
                inputs = processor(audio=windows[start : start + batch], sampling_rate=SAMPLE_RATE, return_tensors="pt")
                inputs = {k: v.to(device) for k, v in inputs.items()}
                features = model.get_audio_features(**inputs)
                features = getattr(features, "pooler_output", features)
                out.append(features.float().cpu().numpy())
        vectors = np.concatenate(out, axis=0)
        owner = np.asarray(owner)
        result = np.stack([vectors[owner == i].mean(axis=0) for i in range(len(waves))])
        type(self).encode_calls += len(waves)
        return result / np.linalg.norm(result, axis=1, keepdims=True).clip(min=1e-12)

    def embed_text(self, texts: list[str]) -> np.ndarray:
        import torch

        model, processor, device = self._model()
        with torch.inference_mode():
            inputs = processor(text=texts, return_tensors="pt", padding=True, truncation=True)
            inputs = {k: v.to(device) for k, v in inputs.items()}
            features = model.get_text_features(**inputs)
            features = getattr(features, "pooler_output", features)
            vectors = features.float().cpu().numpy()
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True).clip(min=1e-12)

    def audio_embeddings(self, clips: list[ClipAudio]) -> list[np.ndarray]:
        """Unit audio embeddings, read from the clip store when one is attached (context ""), else computed."""
        found: dict[str, np.ndarray] = {}
        if self.store is not None:
            for sha, scores in self.store.get_many([c.sha256 for c in clips], "").items():
                found[sha] = np.asarray(scores["embedding"], dtype=np.float32)
        todo = []
        for clip in clips:
            if clip.sha256 not in found and clip.sha256 not in {t.sha256 for t in todo}:
                todo.append(clip)
        if todo:
            vectors = self.embed_audio([load_audio(c.path, sample_rate=SAMPLE_RATE) for c in todo])
            for clip, vector in zip(todo, vectors):
                found[clip.sha256] = vector
            if self.store is not None:
                self.store.put_many({c.sha256: {"embedding": [float(x) for x in v]} for c, v in zip(todo, vectors)}, "")
        return [found[c.sha256] for c in clips]

    def condition_text(self, condition: ConditionInput) -> str:
        text = condition.prompt.strip()
        if self.options.get("use_lyrics", True) and condition.lyrics.strip():
            text = f"{text}. Lyrics: {condition.lyrics.strip()}" if text else condition.lyrics.strip()
        return text

    def score_clips(self, clips: list[ClipAudio], condition: ConditionInput) -> list[dict]:
        wanted = list(clips) + ([condition.reference] if condition.reference else [])
        embeddings = self.audio_embeddings(wanted)
        audio = np.stack(embeddings[: len(clips)])
        text = self.condition_text(condition)
        parts = {}
        if text:
            parts["text"] = audio @ self.embed_text([text])[0]
        if condition.reference is not None:
            parts["reference"] = audio @ embeddings[-1]
        out = []
        for i in range(len(clips)):
            detail = {name: float(values[i]) for name, values in parts.items()}
            score = float(np.mean(list(detail.values()))) if detail else None
            out.append({ALIGNMENT: score, "cosine": detail})
        return out
