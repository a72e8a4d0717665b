"""MuQ-MuLan text-audio similarity (alignment), on our port of OpenMuQ/MuQ-MuLan-large.

A clip's audio embedding is the mean of its 10 s clip embeddings, as the authors compute it; it
is cached per clip (context "") so a clip is encoded once per judge version. The score is the dot
product with the prompt's text embedding; with a reference clip, the mean of that and the dot
product with the reference's audio embedding (as the CLAP judge does). Lyrics are appended to the
prompt only with the option `use_lyrics` (MuQ-MuLan was trained on descriptions, not lyrics).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .base import ALIGNMENT, ClipAudio, ConditionInput, load_audio, store_fill
from .layout import MULAN_LAYOUT, mulan_problem
from .ported import PortedJudge

SAMPLE_RATE = 24000


def _load(path: Path, root=None):
    from .nets.mulan import load_muq_mulan

    return load_muq_mulan(path, root=root)


class MuQMuLanJudge(PortedJudge):
    kind = "muq_mulan"
    title = "MuQ-MuLan similarity"
    measures = (
        "Alignment only: dot product of the clip's MuQ-MuLan audio embedding (mean over 10 s clips) with the prompt's "
        "text embedding; with a reference clip, the mean of that and the audio-audio dot product. Weights CC BY-NC 4.0."
    )
    dimensions = (ALIGNMENT,)
    layout = MULAN_LAYOUT
    code_version = "1"

    encode_calls = 0

    def layout_problem(self, directory: Path) -> str:
        return mulan_problem(directory, root=self.model_dir)

    def context_key(self, condition: ConditionInput) -> str:
        return condition.content_key("muq-mulan", str(bool(self.options.get("use_lyrics", False))))

    def condition_text(self, condition: ConditionInput) -> str:
        text = condition.prompt.strip()
        if self.options.get("use_lyrics", False) and condition.lyrics.strip():
            text = f"{text}. Lyrics: {condition.lyrics.strip()}" if text else condition.lyrics.strip()
        return text

    def embed_audio(self, waves: list[np.ndarray]) -> np.ndarray:
        """(N, 512) audio embeddings: the mean of each clip's unit 10 s embeddings (not renormalised)."""
        import torch

        model, device = self.loaded(_load)
        batch = int(self.options.get("batch_size", 8))
        clips, owner = [], []
        for i, wave in enumerate(waves):
            for clip in model.clips(torch.from_numpy(wave)):
                clips.append(clip)
                owner.append(i)
        vectors: list = [None] * len(clips)
        by_length: dict[int, list[int]] = {}
        for i, clip in enumerate(clips):
            by_length.setdefault(clip.shape[-1], []).append(i)
        with torch.inference_mode():
            for indices in by_length.values():
                for start in range(0, len(indices), batch):
                    part = indices[start : start + batch]
                    out = model.embed_clips(torch.stack([clips[i] for i in part]).to(device)).cpu().numpy()
                    for i, row in zip(part, out):
                        vectors[i] = row
        owner_arr, stacked = np.asarray(owner), np.stack(vectors)
        type(self).encode_calls += len(waves)
        return np.stack([stacked[owner_arr == i].mean(axis=0) for i in range(len(waves))]).astype(np.float32)

    def embed_text(self, text: str) -> np.ndarray:
        import torch

        model, _ = self.loaded(_load)
        with torch.inference_mode():
            return model.embed_text(text).cpu().numpy()

    def audio_embeddings(self, clips: list[ClipAudio]) -> list[np.ndarray]:
        found = store_fill(
            self.store,
            clips,
            "",
            lambda todo: self.embed_audio([load_audio(c.path, sample_rate=SAMPLE_RATE) for c in todo]),
            encode=lambda vector: {"embedding": [float(x) for x in vector]},
            decode=lambda stored: np.asarray(stored["embedding"], dtype=np.float32) if "embedding" in stored else None,
        )
        return [found[c.sha256] for c in clips]

    def score_clips(self, clips: list[ClipAudio], condition: ConditionInput) -> list[dict]:
        wanted = list(clips) + ([condition.reference] if condition.reference else [])
        embeddings = self.audio_embeddings(wanted)
        audio = np.stack(embeddings[: len(clips)])
        parts = {}
        text = self.condition_text(condition)
        if text:
            parts["text"] = audio @ self.embed_text(text)
        if condition.reference is not None:
            parts["reference"] = audio @ embeddings[-1]
        out = []
        for i in range(len(clips)):
            detail = {name: float(values[i]) for name, values in parts.items()}
            out.append({ALIGNMENT: float(np.mean(list(detail.values()))) if detail else None, "similarity": detail})
        return out
