"""CMI-RM: the CMI-RewardBench reward model, both dimensions, all four modalities, on our port.

Each clip (and the reference, when the condition has one) is cut to its first `max_seconds`
(120 s, the benchmark's setting), split into 30 s chunks that go through MuQ-MuLan's audio tower
separately, and the chunk frames are joined, as the authors' "final" inference mode does. Chunks
are encoded unpadded, grouped by length; the authors pad a batch's shorter chunks, which lets
padding leak into their features, so their scores can differ slightly from these for clips whose
length is not a multiple of 30 s. Scores are raw head outputs (alignment, quality), compared
between the two clips of a pair with the tie-goes-to-B rule.
"""

from __future__ import annotations

from pathlib import Path

from .base import ALIGNMENT, MUSICALITY, ClipAudio, ConditionInput, load_audio
from .layout import CMIRM_LAYOUT, MULAN_ID, find_model_dir, mulan_problem
from .ported import PortedJudge

SAMPLE_RATE = 24000
CHUNK_SECONDS = 30


def _load(path: Path, root=None):
    from .nets.cmirm import load_cmirm

    return load_cmirm(path, root=root)


def _model_name(directory: Path) -> str:
    try:
        import yaml

        config = yaml.safe_load((directory / "config.yaml").read_text(encoding="utf-8")) or {}
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read {directory / 'config.yaml'}: {exc}") from None
    config = config.get("model", config) if isinstance(config.get("model"), dict) else config
    return config.get("model_name") or MULAN_ID


class CMIRMJudge(PortedJudge):
    kind = "cmi_rm"
    title = "CMI-RM reward model"
    measures = (
        "Both dimensions from one forward pass of the CMI-RewardBench reward model: prompt, lyrics and reference audio "
        "(when given) against the clip's MuQ-MuLan frames; column 0 alignment, column 1 musical quality. Runs in fp32 on GPUs too: bf16 moved its scores enough to flip "
        "clear preferences."
    )
    dimensions = (ALIGNMENT, MUSICALITY)
    layout = CMIRM_LAYOUT
    code_version = "2"
    # In bf16 its scores moved past the precision bound (docs/judges.md, "Precision on GPUs"):
    # rounding the towers' weights shifts every frame alike, and the mean over frames keeps the shift.
    cuda_dtype = "float32"

    encode_calls = 0

    def layout_problem(self, directory: Path) -> str:
        if not (directory / "config.yaml").is_file() or not (directory / "model.safetensors").is_file():
            return f"{directory} is not a CMI-RM directory ({CMIRM_LAYOUT})"
        try:
            name = _model_name(directory)
        except ValueError as exc:
            return str(exc)
        mulan = find_model_dir(name, near=directory, root=self.model_dir)
        if mulan is None:
            return f"the MuQ-MuLan model {name!r} that {directory.name}/config.yaml names is not found ({CMIRM_LAYOUT})"
        return mulan_problem(mulan, root=self.model_dir)

    def context_key(self, condition: ConditionInput) -> str:
        return condition.content_key("cmi-rm", str(self._max_samples()))

    def _max_samples(self) -> int:
        return int(float(self.options.get("max_seconds", 120)) * SAMPLE_RATE)

    def _frames(self, model, device, waves) -> list:
        """Each wave's audio-tower frames: its 30 s chunks encoded and joined."""
        import torch

        size = CHUNK_SECONDS * SAMPLE_RATE
        chunks, owner = [], []
        for i, wave in enumerate(waves):
            wave = wave[: self._max_samples()]
            for start in range(0, max(len(wave), 1), size):
                chunks.append(torch.from_numpy(wave[start : start + size]).to(device))
                owner.append(i)
        encoded = model.audio_frames(chunks, batch_size=int(self.options.get("batch_size", 8)))
        return [torch.cat([e for e, o in zip(encoded, owner) if o == i]) for i in range(len(waves))]

    def score_clips(self, clips: list[ClipAudio], condition: ConditionInput) -> list[dict]:
        import torch

        model, device = self.loaded(_load)
        waves = [load_audio(c.path, sample_rate=SAMPLE_RATE) for c in clips]
        if condition.reference is not None:
            waves.append(load_audio(condition.reference.path, sample_rate=SAMPLE_RATE))
        with torch.inference_mode():
            frames = self._frames(model, device, waves)
            reference = frames.pop() if condition.reference is not None else None
            prompt, mask = model.prompt(condition.prompt, condition.lyrics, reference)
            batch = int(self.options.get("batch_size", 8))
            scores = torch.cat([model.score(prompt, mask, frames[i : i + batch]) for i in range(0, len(frames), batch)])
        type(self).encode_calls += len(clips)
        return [{ALIGNMENT: float(row[0]), MUSICALITY: float(row[1]), "frames": int(f.shape[0])} for row, f in zip(scores.cpu(), frames)]



