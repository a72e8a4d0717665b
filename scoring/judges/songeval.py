"""SongEval: five aesthetic scores per song (Coherence, Musicality, Memorability, Clarity,
Naturalness, each in (1, 5)) from ASLP-lab's head on MuQ features, on our port.

The scores do not depend on the condition, so they are cached per clip (context ""). Musicality
is the mean of the five by default; the option `musicality_axis` picks one of them instead.
The whole clip goes through MuQ in one pass, as the authors' eval.py does; the option
`max_seconds` caps it for very long files.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .base import MUSICALITY, ClipAudio, ConditionInput, load_audio
from .layout import MUQ_ID, SONGEVAL_LAYOUT, find_model_dir, muq_problem
from .ported import PortedJudge

SAMPLE_RATE = 24000
AXES = ("Coherence", "Musicality", "Memorability", "Clarity", "Naturalness")


class SongEvalJudge(PortedJudge):
    kind = "songeval"
    title = "SongEval"
    measures = (
        "Musicality only: the mean of SongEval's five song-level ratings (coherence, musicality, memorability, clarity, "
        "naturalness; 1-5) over MuQ layer-6 features, or one of them (option musicality_axis). Weights CC BY-NC-SA 4.0."
    )
    dimensions = (MUSICALITY,)
    layout = SONGEVAL_LAYOUT
    code_version = "1"

    encode_calls = 0

    def layout_problem(self, directory: Path) -> str:
        if not (directory / "config.yaml").is_file() or not (directory / "ckpt" / "model.safetensors").is_file():
            return f"{directory} is not a SongEval directory ({SONGEVAL_LAYOUT})"
        name = self.options.get("muq", MUQ_ID)
        return muq_problem(find_model_dir(name, near=directory, root=self.model_dir), name)

    def _loader(self):
        muq_name, layer = self.options.get("muq", MUQ_ID), int(self.options.get("muq_layer", 6))

        def load(path: Path, root=None):
            from .nets.songeval import load_songeval

            return load_songeval(path, muq_name=muq_name, layer=layer, root=root)

        return load

    def predict(self, waves: list[np.ndarray]) -> list[dict]:
        """The five ratings per clip. Each clip goes through alone: the head pools over the whole
        song, so padding would change its scores."""
        import torch

        model, device = self.loaded(self._loader())
        rows = []
        with torch.inference_mode():
            for wave in waves:
                scores = model(torch.from_numpy(wave).unsqueeze(0).to(device))[0].cpu().numpy()
                rows.append(dict(zip(AXES, (float(s) for s in scores))))
        type(self).encode_calls += len(waves)
        return rows

    def score_clips(self, clips: list[ClipAudio], condition: ConditionInput) -> list[dict]:
        axis = self.options.get("musicality_axis", "mean")
        if axis != "mean" and axis not in AXES:
            raise ValueError(f"musicality_axis must be 'mean' or one of {', '.join(AXES)}")
        cap = self.options.get("max_seconds")
        waves = [load_audio(c.path, sample_rate=SAMPLE_RATE) for c in clips]
        if cap:
            waves = [w[: int(float(cap) * SAMPLE_RATE)] for w in waves]
        out = []
        for row in self.predict(waves):
            value = float(np.mean(list(row.values()))) if axis == "mean" else row[axis]
            out.append({MUSICALITY: value, "axes": row})
        return out
