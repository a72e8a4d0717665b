"""CMI-RM (Haiwen-Xia/CMI-RewardBench, weights HaiwenXia/CMI-RM): a reward model over frozen
MuQ-MuLan towers, scoring one clip against its condition on two outputs, alignment and quality.

Architecture, as the authors' RewardAttentionModel builds it from config.yaml:
- the text and the lyrics go separately through MuQ-MuLan's text tower (padding masked), the
  reference audio and the clip through its audio tower frame by frame (no pooling);
- a prompt transformer runs over [text | lyrics | reference frames] (a missing reference is one
  masked zero frame, as the authors' inference passes it);
- a joint transformer runs over [prompt | clip frames] (self-attention, "SA"), or the clip frames
  attend to the prompt layer by layer ("CA");
- the clip's outputs are mean-pooled under their mask and a two-output MLP (`score_projector`)
  gives column 0 = alignment, column 1 = quality.
The checkpoint also carries a one-output head, two task heads and the null embeddings of training
(modality dropout); they are loaded and checked but inference does not use them, as in the
authors' `forward_raw_text`.

Loading: the towers' architecture comes from the MuQ-MuLan directory the config names
(`model_name`); their weights come from CMI-RM's model.safetensors where it has them and from
MuQ-MuLan's otherwise. Every parameter must come from one of the two and every CMI-RM tensor must
fit a parameter (the authors load with strict=False; here a mismatch is an error that names keys).
Text encoders other than MuQ-MuLan's (Flan-T5, LoRA variants) and downsamplers other than
none / mean / mean+MLP are refused with a message.
"""

from __future__ import annotations

from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from ..layout import MULAN_ID, find_model_dir, weight_file
from .common import WeightsMismatch, load_exact, read_state_dict
from .mulan import MAX_TEXT_TOKENS, Attention, AudioTower, GainNorm, TextTower, Transformer, build_towers, feed_forward
from .muq import TRAINING_ONLY, muq_state

CHUNK_SECONDS = 30.0


def read_config(path: Path) -> dict:
    import yaml

    with open(path, encoding="utf-8") as fh:
        config = yaml.safe_load(fh) or {}
    if not isinstance(config, dict):
        raise WeightsMismatch(f"{path} is not a mapping")
    return config.get("model", config) if isinstance(config.get("model"), dict) else config


# --- downsamplers (identity unless the config asks) ------------------------------------------


class Identity(nn.Module):
    def forward(self, x, mask):
        return x, mask


class MeanPool(nn.Module):
    """Masked mean over non-overlapping windows of `factor` frames (a ragged tail is dropped)."""

    def __init__(self, dim: int, factor: int = 1, mlp_ratio: float | None = None, pre_mlp: bool = False, **_):
        super().__init__()
        self.factor, self.pre_mlp = int(factor), pre_mlp
        if mlp_ratio is not None:
            hidden = int(dim * mlp_ratio)
            self.mlp = nn.Sequential(nn.Linear(dim, hidden), nn.SiLU(), nn.Dropout(0.0), nn.Linear(hidden, dim), nn.Dropout(0.0))

    def forward(self, x, mask):
        mlp = getattr(self, "mlp", None)
        if self.factor <= 1:
            x = x * mask.unsqueeze(-1).to(x.dtype)
            return (mlp(x) if mlp is not None else x), mask
        if mlp is not None and self.pre_mlp:
            x = mlp(x)
        b, t, d = x.shape
        t_out = t // self.factor
        if t_out == 0:
            return x.new_zeros(b, 0, d), mask.new_zeros(b, 0)
        x = x[:, : t_out * self.factor].reshape(b, t_out, self.factor, d)
        m = mask[:, : t_out * self.factor].reshape(b, t_out, self.factor, 1).to(x.dtype)
        y = (x * m).sum(dim=2) / m.sum(dim=2).clamp_min(1.0)
        keep = m.sum(dim=2).squeeze(-1) > 0
        y = y * keep.unsqueeze(-1).to(y.dtype)
        if mlp is not None and not self.pre_mlp:
            y = mlp(y)
        return y, keep


def build_downsampler(spec: dict, dim: int) -> nn.Module:
    spec = dict(spec)
    kind = str(spec.pop("kind", "none")).lower()
    spec.pop("dim", None)
    if kind == "none":
        return Identity()
    if kind in ("mean", "meanpool"):
        spec.pop("mlp_ratio", None)
        return MeanPool(dim, **spec)
    if kind in ("meanpool+mlp", "mean+mlp", "baseline1", "b1"):
        return MeanPool(dim, mlp_ratio=spec.pop("mlp_ratio", 2.0), **spec)
    raise WeightsMismatch(f"CMI-RM downsampler kind {kind!r} is not supported (none, mean, meanpool+mlp)")


def downsamplers(config: dict, dim: int) -> dict[str, nn.Module]:
    names = ("text", "lyrics", "eval", "ref")
    section = config.get("downsample") or {}
    configs = section.get("configs") or {}
    if not configs:
        return {n: Identity() for n in names}
    eval_name = section.get("eval", "none")
    chosen = {"eval": eval_name, "ref": section.get("ref") or eval_name, "text": section.get("text", "none")}
    chosen["lyrics"] = chosen["text"]
    for role, name in chosen.items():
        if name not in configs:
            raise WeightsMismatch(f"CMI-RM config: downsample.{role} names {name!r}, which downsample.configs lacks")
    return {role: build_downsampler(configs[name], dim) for role, name in chosen.items()}


# --- cross-attention variant of the joint transformer ----------------------------------------


class CrossAttention(nn.Module):
    def __init__(self, dim: int, *, dim_head: int, heads: int):
        super().__init__()
        self.heads = heads
        self.norm_q, self.norm_kv = GainNorm(dim), GainNorm(dim)
        self.to_q = nn.Linear(dim, dim_head * heads, bias=False)
        self.to_kv = nn.Linear(dim, dim_head * heads * 2, bias=False)
        self.to_out = nn.Sequential(nn.Linear(dim_head * heads, dim, bias=False), nn.Dropout(0.0))

    def forward(self, x, context, context_mask):
        def split(t):
            return t.view(t.shape[0], t.shape[1], self.heads, -1).transpose(1, 2)

        k, v = self.to_kv(self.norm_kv(context)).chunk(2, dim=-1)
        q, k, v = split(self.to_q(self.norm_q(x))), split(k), split(v)
        bias = torch.zeros(context_mask.shape, dtype=q.dtype, device=q.device).masked_fill(~context_mask, float("-inf"))
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=bias[:, None, None, :])
        b, h, n, d = out.shape
        return self.to_out(out.transpose(1, 2).reshape(b, n, h * d))


class DecoderLayer(nn.Module):
    def __init__(self, dim: int, *, dim_head: int, heads: int, ff_mult: float):
        super().__init__()
        self.self_attn = Attention(dim, dim_head=dim_head, heads=heads)
        self.cross_attn = CrossAttention(dim, dim_head=dim_head, heads=heads)
        self.ffn = feed_forward(dim, ff_mult)

    def forward(self, x, mask, context, context_mask):
        x = self.self_attn(x, mask) + x
        x = self.cross_attn(x, context, context_mask) + x
        return self.ffn(x) + x


def _head(dim: int, hidden: int, out: int) -> nn.Sequential:
    return nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, out))


class CMIRewardModel(nn.Module):
    def __init__(self, config: dict, audio: AudioTower, text: TextTower):
        super().__init__()
        self.config = config
        dim = self.dim = int(config.get("dim", 768))
        if audio.dim != dim or text.dim != dim:
            raise WeightsMismatch(f"CMI-RM dim {dim} differs from the MuQ-MuLan towers' ({audio.dim}, {text.dim})")
        self.mode = config.get("mode", "concat_text_late")
        self.attention_mode = config.get("attention_mode", "SA")
        if self.attention_mode not in ("SA", "CA"):
            raise WeightsMismatch(f"attention_mode must be SA or CA, not {self.attention_mode!r}")
        shape = {"dim_head": int(config.get("dim_head", 64)), "heads": int(config.get("heads", 8))}
        ff_mult = config.get("ff_mult", 4)
        self.prompt_transformer = Transformer(dim, int(config.get("prompt_tf_depth", 1)), ff_mult=ff_mult, **shape)
        depth = int(config.get("joint_tf_depth", 4))
        if self.attention_mode == "SA":
            self.joint_transformer = Transformer(dim, depth, ff_mult=ff_mult, **shape)
        else:
            self.joint_transformer = nn.ModuleList(DecoderLayer(dim, ff_mult=ff_mult, **shape) for _ in range(depth))
        mlp_dim = int(config.get("mlp_dim", 512))
        self.score_projector = _head(dim, mlp_dim, int(config.get("output_dim", 2)))
        self.single_score_projector = _head(dim, mlp_dim, 1)
        self.alignment_head = _head(dim, mlp_dim, 1)
        self.quality_head = _head(dim, mlp_dim, 1)
        nulls = config.get("null_embedding") or {}
        for name, default in (("text", 10), ("lyrics", 10), ("audio", 10)):
            length = int((nulls.get(name) or {}).get("length", default))
            setattr(self, f"null_{name}_embedding", nn.Parameter(torch.zeros(1, length, dim)))
        self.category_embeddings = nn.ParameterDict()
        self.text_module, self.audio_module = text, audio
        for role, module in downsamplers(config, dim).items():
            setattr(self, f"{role}_downsampler", module)
        self.text_max_tokens = min(text.max_seq_len, MAX_TEXT_TOKENS)

    # Parts place() keeps in fp32 when the rest runs in bf16 (nets/muq.place).
    fp32_parts = ("score_projector",)

    @property
    def dtype(self):
        return self.joint_transformer.parameters().__next__().dtype

    # --- encoders -----------------------------------------------------------------------
    def text_frames(self, text: str) -> tuple[torch.Tensor, torch.Tensor]:
        return self.text_module.frames([text], masked=True, max_length=self.text_max_tokens)

    def audio_frames(self, chunks: list[torch.Tensor], *, batch_size: int = 8) -> list[torch.Tensor]:
        """Audio-tower frames of each chunk, (frames, dim) each. Chunks of one length go through
        together, unpadded, so no chunk's features depend on what it was batched with."""
        out: list[torch.Tensor | None] = [None] * len(chunks)
        by_length: dict[int, list[int]] = {}
        for i, chunk in enumerate(chunks):
            by_length.setdefault(chunk.shape[-1], []).append(i)
        for indices in by_length.values():
            for start in range(0, len(indices), batch_size):
                part = indices[start : start + batch_size]
                frames = self.audio_module.frames(torch.stack([chunks[i] for i in part]), layer=-1)
                for i, row in zip(part, frames):
                    out[i] = row
        return out

    # --- scoring ------------------------------------------------------------------------
    def prompt(self, text: str, lyrics: str, reference: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """Prompt transformer output (1, P, dim) and mask for one condition; `reference` is the
        reference clip's frames (frames, dim) or None."""
        device = next(self.prompt_transformer.parameters()).device
        text_x, text_m = self.text_downsampler(*self.text_frames(text))
        lyr_x, lyr_m = self.lyrics_downsampler(*self.text_frames(lyrics))
        if reference is None:
            ref_x = torch.zeros(1, 1, self.dim, dtype=self.dtype, device=device)
            ref_m = torch.zeros(1, 1, dtype=torch.bool, device=device)
        else:
            ref_x = reference.unsqueeze(0).to(self.dtype)
            ref_m = torch.ones(1, reference.shape[0], dtype=torch.bool, device=device)
        ref_x, ref_m = self.ref_downsampler(ref_x, ref_m)
        parts_x = [text_x] if self.mode == "text_only" else [text_x, lyr_x]
        parts_m = [text_m] if self.mode == "text_only" else [text_m, lyr_m]
        x = torch.cat([*[p.to(self.dtype) for p in parts_x], ref_x], dim=1)
        mask = torch.cat([*parts_m, ref_m], dim=1)
        return self.prompt_transformer(x, mask), mask

    def score(self, prompt: torch.Tensor, prompt_mask: torch.Tensor, clips: list[torch.Tensor]) -> torch.Tensor:
        """(N, output_dim) scores for clips given as frame sequences, under one prompt."""
        lengths = [c.shape[0] for c in clips]
        frames = torch.zeros(len(clips), max(lengths), self.dim, dtype=self.dtype, device=prompt.device)
        mask = torch.zeros(len(clips), max(lengths), dtype=torch.bool, device=prompt.device)
        for i, clip in enumerate(clips):
            frames[i, : lengths[i]] = clip
            mask[i, : lengths[i]] = True
        frames, mask = self.eval_downsampler(frames, mask)
        n = len(clips)
        context, context_mask = prompt.expand(n, -1, -1), prompt_mask.expand(n, -1)
        if self.attention_mode == "SA":
            joint = self.joint_transformer(torch.cat([context, frames], dim=1), torch.cat([context_mask, mask], dim=1))
            out = joint[:, context.shape[1] :]
        else:
            out = frames
            for layer in self.joint_transformer:
                out = layer(out, mask, context, context_mask)
        # Pooling and the head in fp32 whatever the model's dtype: a bf16 mean over hundreds of frames
        # is rounded to 3 digits before the head's LayerNorm, and the head is a rounding error of the cost.
        weights = mask.unsqueeze(-1).float()
        pooled = (out.float() * weights).sum(dim=1) / mask.sum(dim=1, keepdim=True).clamp(min=1).float()
        return self.score_projector(pooled)


def _tower_state(mulan_state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    mapping = {"mulan.audio.": "audio_module.", "mulan.text.": "text_module."}
    out = {}
    for key, value in mulan_state.items():
        for old, new in mapping.items():
            if key.startswith(old):
                out[new + key[len(old) :]] = value
    return out


def load_cmirm(directory: Path, *, root=None) -> CMIRewardModel:
    """CMI-RM from a directory in the HaiwenXia/CMI-RM layout (model.safetensors + config.yaml)."""
    directory = Path(directory)
    config = read_config(directory / "config.yaml")
    if config.get("name", "reward") != "reward":
        raise WeightsMismatch(f"CMI-RM model name {config.get('name')!r} is not supported (reward)")
    encoder = config.get("text_encoder")
    if isinstance(encoder, dict) and str(encoder.get("name", "muq_mulan")).lower() not in ("muq_mulan", "muqmulan"):
        raise WeightsMismatch(f"CMI-RM text encoder {encoder.get('name')!r} is not supported (MuQ-MuLan's only)")
    if (config.get("text_lora_config") or {}).get("use_lora"):
        raise WeightsMismatch("CMI-RM checkpoints with a LoRA text encoder are not supported")
    mulan_dir = find_model_dir(config.get("model_name") or MULAN_ID, near=directory, root=root)
    if mulan_dir is None:
        raise FileNotFoundError(f"MuQ-MuLan model {config.get('model_name') or MULAN_ID!r} not found near {directory}")
    _, audio, text = build_towers(mulan_dir, root=root)
    model = CMIRewardModel(config, audio, text)
    mulan_path, own_path = weight_file(mulan_dir), directory / "model.safetensors"
    ignore = tuple(f"audio_module.model.{p}" for p in TRAINING_ONLY)
    own = _normalise(read_state_dict(own_path))
    expected = set(model.state_dict())
    stray = {k for k in own if k not in expected and not k.startswith(ignore)}
    if stray:
        raise WeightsMismatch(f"{own_path} has tensors the configured CMI-RM lacks: {', '.join(sorted(stray)[:6])}")
    merged = _normalise(_tower_state(read_state_dict(mulan_path))) if mulan_path else {}
    merged.update(own)
    load_exact(model, merged, source=f"{own_path} with {mulan_dir.name}", ignore=ignore)
    return model.eval()


def _normalise(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    state = muq_state(state, prefix="audio_module.model.")
    return {k: v for k, v in state.items() if not k.endswith(("embeddings.position_ids", "embeddings.token_type_ids"))}
