"""audiobox-aesthetics: four per-clip axes (CE, CU, PC, PQ) from Meta's AesMultiOutput.

The `audiobox_aesthetics` package declares torchaudio as a dependency, and no torchaudio build
matches this project's torch pin, so it is not in requirements.txt: install it with
`pip install --no-deps audiobox-aesthetics==0.0.4`. Only its model module is used (which needs
no torchaudio); decoding, 16 kHz resampling and the 10 s windowing with fill weights are done
here the same way its predictor does them.
"""

from __future__ import annotations

import numpy as np

from auditorium.runtime import cached_model, pick_device

from .base import MUSICALITY, ClipAudio, ConditionInput, JudgeAdapter, load_audio

SAMPLE_RATE = 16000
WINDOW_SECONDS = 10
AXES = ("CE", "CU", "PC", "PQ")


def _load(path: str, device: str):
    from audiobox_aesthetics.model.aes import AesMultiOutput

    model = AesMultiOutput.from_pretrained(path).to(device).eval()
    return model


class AestheticsJudge(JudgeAdapter):
    kind = "aesthetics"
    title = "audiobox-aesthetics"
    measures = (
        "Per-clip CE (content enjoyment), CU (content usefulness), PC (production complexity), PQ (production quality). "
        "Musicality = CE by default (option musicality_axis). No alignment: it never sees the prompt."
    )
    dimensions = (MUSICALITY,)
    modalities = ("text", "text+lyrics", "text+ref", "text+lyrics+ref")
    packages = ("torch", "audiobox_aesthetics")
    # Its package cannot be installed with the pinned torch (see docs/scoring.md), so no test runs it.
    experimental = True
    code_version = "1"

    encode_calls = 0

    def availability(self):
        state = super().availability()
        if not state.available and "audiobox_aesthetics" in state.reason:
            from .base import Availability

            return Availability(False, state.reason + " (pip install --no-deps audiobox-aesthetics==0.0.4; its torchaudio pin conflicts with torch)")
        return state

    def _model(self):
        path = self.require()
        device = pick_device(self.options.get("device"))
        return cached_model(("aesthetics", path, device), lambda: _load(path, device)), device

    def predict(self, waves: list[np.ndarray]) -> list[dict]:
        """Window-weighted axis scores per clip, in the model's target scale."""
        import torch

        model, device = self._model()
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
        preds = {axis: [] for axis in AXES}
        with torch.inference_mode():
            for start in range(0, len(windows), batch):
                wav = torch.from_numpy(np.stack(windows[start : start + batch])).unsqueeze(1).to(device)
                mask = torch.from_numpy(np.stack(masks[start : start + batch])).unsqueeze(1).to(device)
                out = model({"wav": wav, "mask": mask})
                for axis in AXES:
                    preds[axis].append(out[axis].float().cpu().numpy())
        weights_arr, owner_arr = np.asarray(weights), np.asarray(owner)
        result = []
        for i in range(len(waves)):
            sel = owner_arr == i
            row = {}
            for axis in AXES:
                values = np.concatenate(preds[axis])[sel]
                transform = (model.target_transform or {}).get(axis) or {"mean": 0.0, "std": 1.0}
                values = values * transform["std"] + transform["mean"]
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


