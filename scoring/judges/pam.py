"""PAM (Deshmukh et al., "PAM: Prompting Audio-Language Models for Audio Quality Assessment", Interspeech 2024)
on the CLAP judge's model: a no-reference quality score from two opposing prompts.

Each window of a clip (the CLAP judge's 48 kHz windows of at most 10 s) is embedded once; its similarities to the
two prompts, cosine times the model's audio-to-text logit scale, go through a softmax, and the window's score is
the probability of the positive prompt. The clip's score is the mean over its windows, as the authors' code
averages its segments. The score ignores the condition: it is a musicality (quality) judge.

The prompts are the authors' released ones ("the sound is clear and clean." / "the sound is noisy and with
artifacts."), which their code uses for every task, text-to-music included. Option `prompts: music` uses the same
opposition worded for music; that wording is ours, not a published PAM variant.
"""

from __future__ import annotations

import numpy as np

from .base import MUSICALITY, ClipAudio, ConditionInput, JudgeUnavailable
from .clap import SAMPLE_RATE, ClapJudge
from .device import decode_processes, decode_workers, prefetch_audio

PROMPTS = {
    "sound": ("the sound is clear and clean.", "the sound is noisy and with artifacts."),
    "music": ("the music is clear and clean.", "the music is noisy and with artifacts."),
}


def pam_scores(window_vectors: np.ndarray, owner: np.ndarray, count: int, prompt_vectors: np.ndarray, logit_scale: float) -> list[dict]:
    """Per clip: the mean over its windows of softmax(scale * cosine)[positive], and the per-window scores."""
    windows = window_vectors / np.linalg.norm(window_vectors, axis=1, keepdims=True).clip(min=1e-12)
    prompts = prompt_vectors / np.linalg.norm(prompt_vectors, axis=1, keepdims=True).clip(min=1e-12)
    logits = logit_scale * (windows.astype(np.float64) @ prompts.astype(np.float64).T)
    logits -= logits.max(axis=1, keepdims=True)
    probs = np.exp(logits)
    positive = probs[:, 0] / probs.sum(axis=1)
    out = []
    for i in range(count):
        mine = positive[owner == i]
        out.append({MUSICALITY: float(mine.mean()), "windows": [float(p) for p in mine]})
    return out


class PAMJudge(ClapJudge):
    kind = "pam"
    title = "PAM (CLAP quality prompts)"
    measures = (
        "Musicality only, no reference: on a CLAP model, softmax over the clip's similarities to 'the sound is clear "
        "and clean' and 'the sound is noisy and with artifacts'; score = P(clear), averaged over 10 s windows."
    )
    dimensions = (MUSICALITY,)
    modalities = ("text", "text+lyrics", "text+ref", "text+lyrics+ref")
    code_version = "1"

    def prompt_pair(self) -> tuple[str, str]:
        name = str(self.options.get("prompts") or "sound")
        if name not in PROMPTS:
            raise JudgeUnavailable(f"PAM prompts {name!r} are not defined; use one of {', '.join(PROMPTS)}")
        return PROMPTS[name]

    def availability(self):
        from .base import Availability

        try:
            self.prompt_pair()
        except JudgeUnavailable as exc:
            return Availability(False, str(exc))
        return super().availability()

    def context_key(self, condition: ConditionInput) -> str:
        # The score depends on the audio and the prompt pair only: one cache entry per clip.
        return "pam:" + "|".join(self.prompt_pair())

    def logit_scale(self) -> float:
        model = self._model()[0]
        return float(model.logit_scale_a.detach().float().exp().cpu())

    def score_waves(self, waves) -> list[dict]:
        """PAM scores of decoded 48 kHz mono waves."""
        vectors, owner, count = self.embed_windows(waves)
        if count == 0:
            return []
        return pam_scores(vectors, owner, count, self.embed_text(list(self.prompt_pair())), self.logit_scale())

    def score_clips(self, clips: list[ClipAudio], condition: ConditionInput) -> list[dict]:
        waves = prefetch_audio([c.path for c in clips], sample_rate=SAMPLE_RATE, workers=decode_workers(self.options), processes=decode_processes(self.options))
        return self.score_waves(waves)
