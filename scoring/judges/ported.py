"""The shared part of judges whose networks are ported into scoring/judges/nets/.

Nothing here imports torch: availability is decided from files on disk, and the model is built
(once per worker process, per weights path, device and dtype) only when a worker scores.
"""

from __future__ import annotations

from pathlib import Path

from .runtime import cached_model, pick_device

from .base import Availability, JudgeAdapter, JudgeUnavailable

ALL_MODALITIES = ("text", "text+lyrics", "text+ref", "text+lyrics+ref")


class PortedJudge(JudgeAdapter):
    packages = ("torch", "transformers", "safetensors", "yaml")
    modalities = ALL_MODALITIES
    # What the weights directory must look like, quoted whenever it is missing or incomplete.
    layout: str = ""

    def layout_problem(self, directory: Path) -> str:
        """Why `directory` cannot be loaded ("" when it can). Must not import torch."""
        return ""

    def availability(self) -> Availability:
        state = super().availability()
        if not state.available:
            if "weights" in state.reason or "cache" in state.reason:
                return Availability(False, f"{state.reason}; expected the {self.layout}")
            return state
        problem = self.layout_problem(Path(state.weights_path))
        if problem:
            return Availability(False, problem)
        return state

    def device_and_dtype(self):
        from .nets.common import judge_dtype

        device = pick_device(self.options.get("device"))
        return device, judge_dtype(self.options, device, cuda_default=self.cuda_dtype)

    def loaded(self, loader):
        """The network for this judge's weights, built by `loader(path, models folder)` once per process and
        placed on the judge's device in its dtype."""
        path = self.require()
        device, dtype = self.device_and_dtype()

        def build():
            from .nets.muq import place

            try:
                model = loader(Path(path), self.model_dir)
            except (FileNotFoundError, ValueError) as exc:
                raise JudgeUnavailable(f"judge {self.config.key}: {exc}") from None
            return place(model, device, dtype)

        return cached_model((self.kind, path, device, str(dtype)), build), device
