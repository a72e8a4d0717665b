"""Checkpoint reading, strict key checks and dtype choice shared by the ported networks."""

from __future__ import annotations

from pathlib import Path

import torch

from ..base import JudgeUnavailable

DTYPES = {
    "bf16": torch.bfloat16,
    "bfloat16": torch.bfloat16,
    "fp16": torch.float16,
    "float16": torch.float16,
    "fp32": torch.float32,
    "float32": torch.float32,
}


def judge_dtype(options: dict, device: str, *, cuda_default: str = "bfloat16") -> torch.dtype:
    """`cuda_default` on CUDA, fp32 elsewhere; the judge option `dtype` overrides (bf16, fp16, fp32)."""
    wanted = (options or {}).get("dtype")
    if wanted and str(wanted).lower() != "auto":
        try:
            return DTYPES[str(wanted).lower()]
        except KeyError:
            raise ValueError(f"dtype must be one of {', '.join(sorted(DTYPES))}, not {wanted!r}") from None
    return getattr(torch, cuda_default) if str(device).startswith("cuda") else torch.float32


def read_state_dict(path: Path) -> dict[str, torch.Tensor]:
    """A checkpoint's tensors on the CPU: safetensors, or a plain (weights-only) torch pickle."""
    path = Path(path)
    if path.suffix == ".safetensors":
        from safetensors.torch import load_file

        return load_file(str(path), device="cpu")
    state = torch.load(str(path), map_location="cpu", weights_only=True)
    return state.get("state_dict", state) if isinstance(state, dict) else state


class WeightsMismatch(JudgeUnavailable):
    """The checkpoint's keys or shapes do not fit the architecture its config describes."""


def _listing(keys, limit: int = 6) -> str:
    keys = sorted(keys)
    more = f" (+{len(keys) - limit} more)" if len(keys) > limit else ""
    return ", ".join(keys[:limit]) + more


def load_exact(module: torch.nn.Module, state: dict[str, torch.Tensor], *, source: str, ignore: tuple[str, ...] = ()) -> None:
    """load_state_dict(strict=True), after dropping keys under `ignore` (training-only parts the
    forward pass never touches) from both sides; a mismatch names the keys it found."""
    state = {k: v for k, v in state.items() if not k.startswith(ignore)} if ignore else state
    expected = {k for k in module.state_dict() if not k.startswith(ignore)} if ignore else set(module.state_dict())
    missing, unexpected = expected - set(state), set(state) - expected
    if missing or unexpected:
        parts = []
        if missing:
            parts.append(f"missing {_listing(missing)}")
        if unexpected:
            parts.append(f"unexpected {_listing(unexpected)}")
        raise WeightsMismatch(f"{source} does not fit the configured architecture: " + "; ".join(parts))
    try:
        module.load_state_dict(state, strict=not ignore)
    except RuntimeError as exc:  # shape mismatches
        raise WeightsMismatch(f"{source} does not fit the configured architecture: {str(exc)[:500]}") from None


def rename_weight_norm(state: dict[str, torch.Tensor], prefix: str, *, parametrized: bool) -> dict[str, torch.Tensor]:
    """Weight-norm parameters come as weight_g/weight_v (old torch API) or as
    parametrizations.weight.original0/1 (new); bring `prefix`'s to the form our module uses."""
    old = (f"{prefix}.weight_g", f"{prefix}.weight_v")
    new = (f"{prefix}.parametrizations.weight.original0", f"{prefix}.parametrizations.weight.original1")
    source, target = (old, new) if parametrized else (new, old)
    out = dict(state)
    for a, b in zip(source, target):
        if a in out:
            out[b] = out.pop(a)
    return out


def parameter_count(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())
