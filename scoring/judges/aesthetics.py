"""audiobox-aesthetics: four per-clip axes (CE, CU, PC, PQ) from Meta's AesMultiOutput, on our port.

The `audiobox_aesthetics` package requires torchaudio, which has no build for this project's
torch, so the network is our own (scoring/judges/nets/audiobox.py) and loads the published
facebook/audiobox-aesthetics directory (config.json + model.safetensors) with every key checked.
Decoding, 16 kHz resampling and the 10 s windowing with fill weights are done the way its
predictor does them: windows zero-padded to 10 s, padding masked, window scores weighted by fill.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .base import MUSICALITY, ClipAudio, ConditionInput, load_audio
from .layout import AUDIOBOX_LAYOUT, weight_file
from .ported import PortedJudge

SAMPLE_RATE = 16000
WINDOW_SECONDS = 10
AXES = ("CE", "CU", "PC", "PQ")


def _load(path: Path, root=None):
    from .nets.audiobox import load_aesthetics

    return load_aesthetics(path)


class AestheticsJudge(PortedJudge):
    kind = "aesthetics"
    title = "audiobox-aesthetics"
    measures = (
        "Per-clip CE (content enjoyment), CU (content usefulness), PC (production complexity), PQ (production quality). "
        "Musicality = CE by default (option musicality_axis). No alignment: it never sees the prompt. Weights CC BY 4.0."
    )
    dimensions = (MUSICALITY,)
    packages = ("torch", "safetensors")
    layout = AUDIOBOX_LAYOUT
    code_version = "2"

    encode_calls = 0

    def layout_problem(self, directory: Path) -> str:
        if not (directory / "config.json").is_file() or weight_file(directory) is None:
            return f"{directory} is not an audiobox-aesthetics directory ({AUDIOBOX_LAYOUT})"
        return ""

    def predict(self, waves: list[np.ndarray]) -> list[dict]:
        """Window-weighted axis scores per clip, in the model's target scale."""
        import torch

        model, device = self.loaded(_load)
        size = SAMPLE_RATE * WINDOW_SECONDS
        windows, masks, weights, owner = [], [], [], []
        for i, wave in enumerate(waves):
            for start in range(0, max(len(wave), 1), size):
                part = wave[start : start + size]
                mask = np.zeros(size, dtype=bool)
                mask[: len(part)] = True
                windows.append(np.pad(part, (0, size - len(part))))
                masks.append(mask)
                weights.append(len(part) / size)
                owner.append(i)
        batch = int(self.options.get("batch_size", 8))
        dtype = next(model.parameters()).dtype
        preds = {axis: [] for axis in AXES}
        with torch.inference_mode():
            for start in range(0, len(windows), batch):
                wav = torch.from_numpy(np.stack(windows[start : start + batch])).to(device, dtype)
                valid = torch.from_numpy(np.stack(masks[start : start + batch])).to(device)
                out = model(wav, valid)
                for axis in AXES:
                    preds[axis].append(out[axis].cpu().numpy())
        weights_arr, owner_arr = np.asarray(weights), np.asarray(owner)
        result = []
        for i in range(len(waves)):
            sel = owner_arr == i
            row = {}
            for axis in AXES:
                values = model.denormalise(axis, np.concatenate(preds[axis])[sel])
                row[axis] = float((values * weights_arr[sel]).sum() / weights_arr[sel].sum())
            result.append(row)
        type(self).encode_calls += len(waves)
        return result

    def score_clips(self, clips: list[ClipAudio], condition: ConditionInput) -> list[dict]:
        axis = self.options.get("musicality_axis", "CE")
        if axis not in AXES:
            raise ValueError(f"musicality_axis must be one of {', '.join(AXES)}")
        rows = self.predict([load_audio(c.path, sample_rate=SAMPLE_RATE) for c in clips])
        return [{MUSICALITY: row[axis], "axes": row} for row in rows]
