"""SongEval (ASLP-lab/SongEval): an attention head over MuQ features that rates a whole song on
five aesthetic axes, each tanh(·)·2 + 3, so within (1, 5).

The head mirrors the authors' `Generator` (parameter names `attn.N.*`, `ffd.*`, `fc.*`, so their
ckpt/model.safetensors loads with every key checked): a feed-forward layer over the MuQ frames,
a stack of 8-head self-attention layers, then the mean of the attention output joined to the
frame-wise max of the feed-forward output, and a linear layer. Features are MuQ-large-msd-iter's
hidden_states[6] over the whole song at 24 kHz in one pass, as the authors' eval.py computes them.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from ..layout import MUQ_ID, find_model_dir
from .common import WeightsMismatch, load_exact, read_state_dict
from .muq import MuQ, load_muq

AXES = ("Coherence", "Musicality", "Memorability", "Clarity", "Naturalness")
FEATURE_LAYER = 6


class SongEvalHead(nn.Module):
    def __init__(self, *, in_features: int = 1024, ffd_hidden_size: int = 4096, num_classes: int = 5, attn_layer_num: int = 4):
        super().__init__()
        self.attn = nn.ModuleList(
            nn.MultiheadAttention(embed_dim=in_features, num_heads=8, dropout=0.2, batch_first=True) for _ in range(attn_layer_num)
        )
        self.ffd = nn.Sequential(nn.Linear(in_features, ffd_hidden_size), nn.ReLU(), nn.Linear(ffd_hidden_size, in_features))
        self.dropout = nn.Dropout(0.2)
        self.fc = nn.Linear(in_features * 2, num_classes)
        self.proj = nn.Tanh()

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        """(B, T, D) features of unpadded songs -> (B, num_classes) scores in (1, 5)."""
        local = self.ffd(features)
        attended = local
        for attn in self.attn:
            attended, _ = attn(attended, attended, attended, need_weights=False)
        pooled = self.dropout(torch.cat([attended.mean(dim=1), local.max(dim=1).values], dim=1))
        return self.proj(self.fc(pooled)) * 2.0 + 3.0


def read_head_config(path: Path) -> dict:
    import yaml

    with open(path, encoding="utf-8") as fh:
        config = yaml.safe_load(fh) or {}
    generator = config.get("generator") if isinstance(config, dict) else None
    if not isinstance(generator, dict):
        raise WeightsMismatch(f"{path} has no `generator` section")
    known = ("in_features", "ffd_hidden_size", "num_classes", "attn_layer_num")
    return {k: int(generator[k]) for k in known if k in generator}


class SongEval(nn.Module):
    # Parts place() keeps in fp32 when MuQ runs in bf16 (nets/muq.place): the head pools over the
    # whole song, and at 25 M parameters costs little next to MuQ's 300 M.
    fp32_parts = ("head",)

    def __init__(self, muq: MuQ, head: SongEvalHead, *, layer: int = FEATURE_LAYER):
        super().__init__()
        self.muq, self.head, self.layer = muq, head, layer

    def features(self, wave: torch.Tensor) -> torch.Tensor:
        states = self.muq(wave)
        if self.layer >= len(states):
            raise ValueError(f"MuQ has {len(states)} hidden states; SongEval reads index {self.layer}")
        return states[self.layer]

    def forward(self, wave: torch.Tensor) -> torch.Tensor:
        features = self.features(wave)
        return self.head(features.to(self.head.fc.weight.dtype)).float()


def load_songeval(directory: Path, *, muq_name: str = MUQ_ID, layer: int = FEATURE_LAYER, root=None) -> SongEval:
    """SongEval from its repository layout (config.yaml + ckpt/model.safetensors) and MuQ."""
    directory = Path(directory)
    head = SongEvalHead(**read_head_config(directory / "config.yaml"))
    path = directory / "ckpt" / "model.safetensors"
    load_exact(head, read_state_dict(path), source=str(path))
    muq_dir = find_model_dir(muq_name, near=directory, root=root)
    if muq_dir is None:
        raise FileNotFoundError(f"MuQ model {muq_name!r} not found near {directory}")
    return SongEval(load_muq(muq_dir), head.eval(), layer=layer).eval()
