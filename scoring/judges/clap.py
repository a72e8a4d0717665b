"""CLAP text-audio (and reference-audio) similarity through transformers' ClapModel.

Audio is embedded once per clip (48 kHz mono, <= 10 s windows, window embeddings averaged and
renormalised): unfused checkpoints crop longer input at random, so whole-clip input would not
give the same score twice. The embedding is cached per clip without context; the cosine with a
condition's text (or reference clip) is cheap and cached per condition.

Throughput: files are decoded in a bounded thread pool while the GPU works, the log-mel
spectrogram is computed on the judge's device (features.ClapMel, checked against the library's
extractor), windows go through the encoder `batch_size` at a time from page-locked memory, and
results come back to the host once per call. The model runs in bf16 on CUDA, fp32 on the CPU
(option `dtype`).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from .runtime import cached_model

from .base import ALIGNMENT, ClipAudio, ConditionInput, JudgeAdapter, chunks
from .device import OnDevice, decode_processes, decode_workers, prefetch_audio, torch_dtype
from .features import ClapMel, UnsupportedExtractor

SAMPLE_RATE = 48000
WINDOW_SECONDS = 10


def _load(path: str, device: str, dtype: str):
    from transformers import ClapModel, ClapProcessor

    # dtype= (transformers >= 4.56) fixes the precision whatever the checkpoint was saved in.
    model = ClapModel.from_pretrained(path, dtype=torch_dtype(dtype)).to(device).eval()
    processor = ClapProcessor.from_pretrained(path)
    return model, processor


class ClapJudge(OnDevice, JudgeAdapter):
    kind = "clap"
    title = "CLAP similarity"
    measures = (
        "Alignment only: cosine between the clip's CLAP audio embedding and the prompt (and lyrics) text embedding; "
        "with a reference clip, the mean of text-audio and reference-audio cosine."
    )
    dimensions = (ALIGNMENT,)
    modalities = ("text", "text+lyrics", "text+ref", "text+lyrics+ref")
    packages = ("torch", "transformers")
    code_version = "2"

    encode_calls = 0


    def model_key(self) -> tuple:
        return ("clap", self.require(), self.device(), self.dtype())

    def _model(self):
        """(model, processor, device, device mel or None) for this process, loaded once."""
        key = self.model_key()
        _, path, device, dtype = key
        model, processor = cached_model(key, lambda: _load(path, device, dtype))
        use_device = bool(self.options.get("device_features", True))
        mel = cached_model(key + ("mel", use_device), lambda: self._device_mel(processor, device) if use_device else None)
        return model, processor, device, mel

    @staticmethod
    def _device_mel(processor, device: str):
        """The device log-mel for this checkpoint, or None where only the host extractor reproduces it."""
        try:
            return ClapMel(processor.feature_extractor, device)
        except UnsupportedExtractor:
            return None

    def context_key(self, condition: ConditionInput) -> str:
        return condition.content_key("clap", str(self.options.get("use_lyrics", True)))

    def batch_size(self, device: str) -> int:
        return max(1, int(self.options.get("batch_size", 64 if device.startswith("cuda") else 8)))

    # --- embeddings -------------------------------------------------------------------
    def embed_audio(self, waves: Iterable[np.ndarray]) -> np.ndarray:
        """One unit vector per clip: windows of all clips go through the encoder in batches.

        `waves` may be a generator (decoding ahead in threads): batches are launched as soon as
        they are full, so decoding, host padding and the GPU overlap.
        """
        vectors, owner, count = self.embed_windows(waves)
        if count == 0:
            return np.zeros((0, vectors.shape[-1] if len(vectors) else 0), dtype=np.float32)
        result = np.stack([vectors[owner == i].mean(axis=0) for i in range(count)])
        return result / np.linalg.norm(result, axis=1, keepdims=True).clip(min=1e-12)

    def embed_windows(self, waves: Iterable[np.ndarray]) -> tuple[np.ndarray, np.ndarray, int]:
        """(window embeddings as the model gives them, the clip index of each window, clips): what embed_audio
        averages; PAM scores each window before averaging, as its authors do."""
        import torch

        model, processor, device, mel = self._model()
        size = min(SAMPLE_RATE * WINDOW_SECONDS, mel.max_samples) if mel is not None else SAMPLE_RATE * WINDOW_SECONDS
        batch = self.batch_size(device)
        dtype = next(model.parameters()).dtype
        pending: list[np.ndarray] = []
        owner: list[int] = []
        out = []

        def flush() -> None:
            if mel is not None:
                inputs = {"input_features": mel.features(pending).to(dtype), "is_longer": torch.zeros((len(pending), 1), dtype=torch.bool, device=device)}
            else:
                inputs = processor(audio=pending, sampling_rate=SAMPLE_RATE, return_tensors="pt")
                inputs = {k: (v.to(device, dtype) if v.is_floating_point() else v.to(device)) for k, v in inputs.items()}
            features = model.get_audio_features(**inputs)
            out.append(getattr(features, "pooler_output", features).float())
            pending.clear()

        count = 0
        with torch.inference_mode():
            for i, wave in enumerate(waves):
                count += 1
                for part in chunks(wave, size=size):
                    pending.append(part)
                    owner.append(i)
                    if len(pending) >= batch:
                        flush()
            if pending:
                flush()
            vectors = torch.cat(out).cpu().numpy() if out else np.zeros((0, 0), dtype=np.float32)  # the one wait for the device
        type(self).encode_calls += count
        return vectors, np.asarray(owner, dtype=int), count

    def embed_text(self, texts: list[str]) -> np.ndarray:
        import torch

        model, processor, device, _ = self._model()
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
        todo, queued = [], set()
        for clip in clips:
            if clip.sha256 not in found and clip.sha256 not in queued:
                todo.append(clip)
                queued.add(clip.sha256)
        if todo:
            waves = prefetch_audio([c.path for c in todo], sample_rate=SAMPLE_RATE, workers=decode_workers(self.options), processes=decode_processes(self.options))
            vectors = self.embed_audio(waves)
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

    def warm(self) -> None:
        """Load the model and run one window and one text through it (kernels, allocator, autotuning)."""
        self.embed_audio([np.zeros(SAMPLE_RATE, dtype=np.float32)])
        self.embed_text(["warm up"])
