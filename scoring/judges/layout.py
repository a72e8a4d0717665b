"""Where the ported judges' weights live on disk, checked without importing torch.

Each judge loads a directory laid out the way its authors publish it, so a copy of their hub
repository (or GitHub checkout, for SongEval) dropped under AUDITORIUM_MODEL_DIR works as is.
Models that name other models (MuQ-MuLan names MuQ and XLM-RoBERTa by hub id; CMI-RM names
MuQ-MuLan) are looked up next to the directory, under AUDITORIUM_MODEL_DIR, then in the local
Hugging Face cache; never downloaded.
"""

from __future__ import annotations

import json
from pathlib import Path

from .runtime import model_dir

WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")

MUQ_ID = "OpenMuQ/MuQ-large-msd-iter"
MULAN_ID = "OpenMuQ/MuQ-MuLan-large"

MUQ_LAYOUT = f"{MUQ_ID} layout: config.json + model.safetensors"
MULAN_LAYOUT = (
    f"{MULAN_ID} layout: config.json + model.safetensors, with the models its config names "
    f"(MuQ-large-msd-iter/: config.json; xlm-roberta-base/: config.json + tokenizer files) beside it, "
    "under AUDITORIUM_MODEL_DIR or in the local Hugging Face cache"
)
SONGEVAL_LAYOUT = (
    "ASLP-lab/SongEval checkout layout: config.yaml + ckpt/model.safetensors, "
    f"and MuQ-large-msd-iter/ ({MUQ_LAYOUT}) beside it or in the local Hugging Face cache"
)
CMIRM_LAYOUT = (
    "HaiwenXia/CMI-RM layout: model.safetensors + config.yaml, "
    f"and MuQ-MuLan-large/ ({MULAN_LAYOUT})"
)
AUDIOBOX_LAYOUT = "facebook/audiobox-aesthetics layout: config.json + model.safetensors"


def weight_file(directory: Path) -> Path | None:
    for name in WEIGHT_FILES:
        if (directory / name).is_file():
            return directory / name
    return None




def _hub_snapshot(repo_id: str) -> Path | None:
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # pragma: no cover - comes with transformers
        return None
    for probe in ("config.json", "config.yaml"):
        found = try_to_load_from_cache(repo_id, probe)
        if isinstance(found, str):
            return Path(found).parent
    return None


def find_model_dir(name: str, *, near: Path | None = None, marker: str = "config.json", root: str | Path | None = None) -> Path | None:
    """A local directory for a model another config names by hub id or path, or None.

    Looked up, in order: the name as a path; its last component (or the whole id) beside `near`
    and under the models folder (`root`, else runtime.model_dir()); the local Hugging Face cache. A directory counts only when
    it holds `marker`.
    """
    name = (name or "").strip()
    if not name:
        return None
    candidates = []
    as_path = Path(name).expanduser()
    if as_path.is_absolute():
        candidates.append(as_path)
    base = name.rstrip("/").split("/")[-1]
    for root in [p for p in (near, near.parent if near else None, model_dir(root)) if p is not None]:
        candidates += [root / base, root / name]
    for candidate in candidates:
        if (candidate / marker).is_file():
            return candidate
    if not as_path.is_absolute() and name.count("/") <= 1:
        snapshot = _hub_snapshot(name)
        if snapshot is not None and (snapshot / marker).is_file():
            return snapshot
    return None


def read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read {path}: {exc}") from None


def muq_problem(directory: Path | None, name: str = MUQ_ID) -> str:
    if directory is None:
        return f"MuQ model {name!r} not found ({MUQ_LAYOUT})"
    if weight_file(directory) is None:
        return f"{directory} has no model.safetensors ({MUQ_LAYOUT})"
    return ""


def mulan_problem(directory: Path, *, need_weights: bool = True, root: str | Path | None = None) -> str:
    """Why the MuQ-MuLan directory cannot be loaded, or ""."""
    if not (directory / "config.json").is_file() or (need_weights and weight_file(directory) is None):
        return f"{directory} is not a MuQ-MuLan directory ({MULAN_LAYOUT})"
    try:
        config = read_json(directory / "config.json")
    except ValueError as exc:
        return str(exc)
    audio = (config.get("audio_model") or {}).get("name") or MUQ_ID
    text = (config.get("text_model") or {}).get("name") or "xlm-roberta-base"
    if find_model_dir(audio, near=directory, root=root) is None:
        return f"the audio model {audio!r} that {directory.name}/config.json names is not found ({MULAN_LAYOUT})"
    if find_model_dir(text, near=directory, root=root) is None:
        return f"the text model {text!r} that {directory.name}/config.json names is not found ({MULAN_LAYOUT})"
    return ""
