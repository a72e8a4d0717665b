"""MuQ-MuLan (OpenMuQ/MuQ-MuLan-large): a MuQ audio tower and an XLM-RoBERTa text tower, each
followed by a small transformer, projected into one 512-d space.

Written here rather than imported from the `muq` package (see nets/muq.py for why). The
transformer blocks are MuLan's own (pre-norm, bias-free LayerNorm with a learned gain, q/k
l2-normalised with learned per-dimension scales and a fixed logit scale of 8, GEGLU
feed-forward); CMI-RM reuses them. Parameter names follow the published checkpoint (`mulan.audio…`,
`mulan.text…`, `mulan.audio_to_latents`, …), so it loads with every key checked. Two of its
tensors are never used at inference: the contrastive loss temperature and the audio tower's
unused `aggregator` convolution; they are kept so the check stays exact.

Inference follows the authors' MuQMuLan: audio cut into 10 s clips (a shorter tail is filled
from the start of the song), each clip embedded and l2-normalised, the clip embeddings averaged
(not renormalised); a text embedded alone (so no padding enters its mean); similarity is the dot
product. One deviation: text longer than XLM-RoBERTa's 512 positions is truncated (the authors'
code fails on it).
"""

from __future__ import annotations

import math
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from ..layout import MUQ_ID, find_model_dir, read_json, weight_file
from .common import WeightsMismatch, load_exact, read_state_dict
from .muq import TRAINING_ONLY, MuQ, build_muq, muq_state

TEXT_ID = "xlm-roberta-base"
MAX_TEXT_TOKENS = 512


class GainNorm(nn.Module):
    """LayerNorm without bias, with a learned gain (`learned_gamma`)."""

    def __init__(self, dim: int):
        super().__init__()
        self.learned_gamma = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return F.layer_norm(x, x.shape[-1:], self.learned_gamma.to(x.dtype))


class GEGLU(nn.Module):
    def forward(self, x):
        x, gate = x.chunk(2, dim=-1)
        return F.gelu(gate) * x


def feed_forward(dim: int, mult: float = 4) -> nn.Sequential:
    hidden = int(dim * mult * 2 / 3)
    return nn.Sequential(GainNorm(dim), nn.Linear(dim, hidden * 2, bias=False), GEGLU(), nn.Dropout(0.0), nn.Linear(hidden, dim, bias=False))


def key_bias(mask: torch.Tensor | None, dtype) -> torch.Tensor | None:
    """(B, L) True = real token -> an additive (B, 1, 1, L) bias, -1e9 on padding (as CMI-RM does)."""
    if mask is None:
        return None
    return ((~mask).to(dtype) * -1e9)[:, None, None, :]


class Attention(nn.Module):
    def __init__(self, dim: int, *, dim_head: int = 64, heads: int = 8, scale: float = 8.0):
        super().__init__()
        self.heads, self.scale = heads, scale
        inner = dim_head * heads
        self.norm = GainNorm(dim)
        self.to_q = nn.Linear(dim, inner, bias=False)
        self.to_kv = nn.Linear(dim, inner * 2, bias=False)
        self.q_scale = nn.Parameter(torch.ones(dim_head))
        self.k_scale = nn.Parameter(torch.ones(dim_head))
        self.to_out = nn.Sequential(nn.Linear(inner, dim, bias=False), nn.Dropout(0.0))

    def _split(self, t):
        b, n, _ = t.shape
        return t.view(b, n, self.heads, -1).transpose(1, 2)

    def forward(self, x, mask: torch.Tensor | None = None):
        x = self.norm(x)
        k, v = self.to_kv(x).chunk(2, dim=-1)
        q, k, v = self._split(self.to_q(x)), self._split(k), self._split(v)
        q = F.normalize(q, dim=-1) * self.q_scale.to(q.dtype)
        k = F.normalize(k, dim=-1) * self.k_scale.to(k.dtype)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=key_bias(mask, q.dtype), scale=self.scale)
        b, h, n, d = out.shape
        return self.to_out(out.transpose(1, 2).reshape(b, n, h * d))


class Transformer(nn.Module):
    def __init__(self, dim: int, depth: int, *, dim_head: int = 64, heads: int = 8, ff_mult: float = 4):
        super().__init__()
        self.layers = nn.ModuleList(
            nn.ModuleList([Attention(dim, dim_head=dim_head, heads=heads), feed_forward(dim, ff_mult)]) for _ in range(depth)
        )

    def forward(self, x, mask: torch.Tensor | None = None):
        if x.shape[1] == 0:
            return x
        for attn, ff in self.layers:
            x = attn(x, mask) + x
            x = ff(x) + x
        return x


def _transformer(cfg: dict) -> Transformer:
    return Transformer(
        int(cfg.get("dim", 768)),
        int(cfg.get("tf_depth", 8)),
        dim_head=int(cfg.get("dim_head", 64)),
        heads=int(cfg.get("heads", 8)),
        ff_mult=cfg.get("ff_mult", 4),
    )


class AudioTower(nn.Module):
    """MuQ features of one layer -> linear -> transformer; frame outputs (CMI-RM) or their mean (MuLan)."""

    def __init__(self, muq: MuQ, cfg: dict, *, model_dim: int, use_layer_idx: int = -1):
        super().__init__()
        self.model = muq
        self.dim = int(cfg.get("dim", 768))
        self.use_layer_idx = use_layer_idx
        self.aggregator = nn.Conv1d(25, 1, kernel_size=1)  # in the checkpoint, unused by the authors' forward
        self.transformer = _transformer(cfg)
        self.proj = nn.Linear(model_dim, self.dim)

    def frames(self, wave: torch.Tensor, *, layer: int | None = None) -> torch.Tensor:
        hidden = self.model(wave)[self.use_layer_idx if layer is None else layer]
        return self.transformer(self.proj(hidden))


class TextTower(nn.Module):
    """XLM-RoBERTa last hidden state -> (projection) -> transformer."""

    def __init__(self, encoder, tokenizer, cfg: dict, *, model_dim: int | None):
        super().__init__()
        self.model = encoder
        self.tokenizer = tokenizer
        self.dim = dim = int(cfg.get("dim", 768))
        self.max_seq_len = int(cfg.get("max_seq_len", 1024))
        self.transformer = _transformer(cfg)
        self.proj = nn.Linear(model_dim, dim) if model_dim and model_dim != dim else nn.Identity()

    def tokens(self, texts: list[str], *, max_length: int = MAX_TEXT_TOKENS):
        device = next(self.model.parameters()).device
        batch = self.tokenizer(
            texts, return_tensors="pt", padding=True, truncation=True, max_length=max_length, return_token_type_ids=False
        )
        return {k: v.to(device) for k, v in batch.items()}

    def frames(self, texts: list[str], *, masked: bool, max_length: int = MAX_TEXT_TOKENS):
        """(B, L, dim) outputs and the (B, L) token mask. `masked` hides padding from the transformer
        (CMI-RM's tower does; MuQ-MuLan's does not, so it embeds one text at a time)."""
        batch = self.tokens(texts, max_length=max_length)
        hidden = self.model(**batch).last_hidden_state
        mask = batch["attention_mask"].bool()
        out = self.transformer(self.proj(hidden.to(next(self.transformer.parameters()).dtype)), mask if masked else None)
        return out, mask


class MuLan(nn.Module):
    def __init__(self, audio: AudioTower, text: TextTower, cfg: dict):
        super().__init__()
        self.audio, self.text = audio, text
        latent = int(cfg.get("dim_latent", 128))
        self.text_to_latents = nn.Linear(text.dim, latent)
        self.audio_to_latents = nn.Linear(audio.dim, latent)
        self.contrast = nn.Module()
        self.contrast.temperatures = nn.Parameter(torch.full((1, 1, 1), math.log(10.0)))
        if cfg.get("sigmoid_contrastive_loss"):
            self.contrast.bias = nn.Parameter(torch.full((1, 1, 1), -10.0))


class MuQMuLan(nn.Module):
    def __init__(self, mulan: MuLan, config: dict):
        super().__init__()
        self.config = config
        self.mulan = mulan
        mulan_cfg = config.get("mulan") or {}
        self.sample_rate = int(mulan_cfg.get("sr", 24000))
        self.clip_samples = int(float(mulan_cfg.get("clip_secs", 10)) * self.sample_rate)

    def clips(self, wave: torch.Tensor) -> list[torch.Tensor]:
        """The authors' clipping: whole 10 s clips, then the tail filled up from the start of the song."""
        size, total, start, out = self.clip_samples, wave.shape[-1], 0, []
        while start + size <= total:
            out.append(wave[start : start + size])
            start += size
        if start < total:
            out.append(torch.cat([wave[start:], wave[: size - (total - start)]]))
        return out

    def embed_clips(self, clips: torch.Tensor) -> torch.Tensor:
        """(N, samples) equal-length clips -> (N, latent) unit vectors."""
        pooled = self.mulan.audio.frames(clips).mean(dim=1)
        return F.normalize(self.mulan.audio_to_latents(pooled).float(), dim=-1)

    def embed_text(self, text: str) -> torch.Tensor:
        out, _ = self.mulan.text.frames([text], masked=False)
        return F.normalize(self.mulan.text_to_latents(out.mean(dim=1)).float(), dim=-1)[0]


def _text_parts(directory: Path, name: str, root=None):
    from transformers import AutoTokenizer, XLMRobertaConfig, XLMRobertaModel

    found = find_model_dir(name, near=directory, root=root)
    if found is None:
        raise FileNotFoundError(f"text model {name!r} not found near {directory}")
    config = XLMRobertaConfig.from_pretrained(str(found))
    encoder = XLMRobertaModel(config)
    tokenizer = AutoTokenizer.from_pretrained(str(found))
    return encoder, tokenizer


def build_towers(directory: Path, *, root=None) -> tuple[dict, AudioTower, TextTower]:
    """The two towers of a MuQ-MuLan directory, with random weights: its config plus the configs
    (and tokenizer) of the models it names."""
    directory = Path(directory)
    config = read_json(directory / "config.json")
    audio_model = config.get("audio_model") or {}
    text_model = config.get("text_model") or {}
    muq_dir = find_model_dir(audio_model.get("name") or MUQ_ID, near=directory, root=root)
    if muq_dir is None:
        raise FileNotFoundError(f"audio model {audio_model.get('name')!r} not found near {directory}")
    if "muq" not in str(audio_model.get("name") or MUQ_ID).lower():
        raise WeightsMismatch(f"only MuQ audio models are supported, not {audio_model.get('name')!r}")
    muq = build_muq(muq_dir)
    audio = AudioTower(
        muq,
        config.get("audio_transformer") or {},
        model_dim=int(audio_model.get("model_dim") or muq.model.linear.in_features),
        use_layer_idx=int(audio_model.get("use_layer_idx", -1)),
    )
    encoder, tokenizer = _text_parts(directory, text_model.get("name") or TEXT_ID, root)
    text = TextTower(encoder, tokenizer, config.get("text_transformer") or {}, model_dim=text_model.get("model_dim"))
    return config, audio, text


def load_muq_mulan(directory: Path, *, root=None) -> MuQMuLan:
    """MuQ-MuLan from a directory in the OpenMuQ/MuQ-MuLan-large layout, every key checked."""
    directory = Path(directory)
    config, audio, text = build_towers(directory, root=root)
    mulan_cfg = config.get("mulan") or {}
    if mulan_cfg.get("hierarchical_contrastive_loss"):
        raise WeightsMismatch("MuQ-MuLan configs with hierarchical_contrastive_loss are not supported")
    model = MuQMuLan(MuLan(audio, text, mulan_cfg), config)
    path = weight_file(directory)
    if path is None:
        raise FileNotFoundError(f"{directory} has no model.safetensors")
    state = muq_state(read_state_dict(path), prefix="mulan.audio.model.")
    load_exact(model, _drop_text_buffers(state), source=str(path), ignore=tuple(f"mulan.audio.model.{p}" for p in TRAINING_ONLY))
    return model.eval()


def _drop_text_buffers(state: dict) -> dict:
    # transformers 4 once saved XLM-R's position_ids buffer; it is recomputed, not loaded.
    return {k: v for k, v in state.items() if not k.endswith(("embeddings.position_ids", "embeddings.token_type_ids"))}
