"""audiobox-aesthetics (facebookresearch/audiobox-aesthetics, weights facebook/audiobox-aesthetics):
a WavLM encoder whose layer outputs are mixed per axis with learned softmax weights, mean-pooled
over frames, l2-normalised and mapped to one number each for CE, CU, PC and PQ.

The `audiobox_aesthetics` package cannot be installed beside this project's torch (it requires
torchaudio), so the model is written here. Parameter names follow its `AesMultiOutput`
(`wavlm_model.feature_extractor…`, `wavlm_model.encoder.layers.N.self_attn.…`, `proj_layer.CE.0`,
`layer_weights.CE`), so the published model.safetensors loads with every key checked; the
positional convolution's weight norm is accepted as weight_g/weight_v or in the parametrized form.

The encoder is the fairseq-style WavLM it ships: a 7-layer conv feature extractor (group norm
after the first), layer norm, projection, a weight-normed convolutional position embedding added
before a post-norm transformer whose first layer computes bucketed relative position biases that
every layer reuses, gated per head from the layer input. Its size is not in config.json (the
package fixes it in code); the published size is the default here, and an optional `encoder`
section in config.json overrides it (the tests use that for a tiny model).
"""

from __future__ import annotations

import math
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from ..layout import read_json, weight_file
from .common import WeightsMismatch, load_exact, read_state_dict, rename_weight_norm

AXES = ("CE", "CU", "PC", "PQ")
SAMPLE_RATE = 16000
ENCODER = {
    "encoder_layers": 12,
    "encoder_embed_dim": 768,
    "encoder_ffn_embed_dim": 3072,
    "encoder_attention_heads": 12,
    "conv_feature_layers": [(512, 10, 5)] + [(512, 3, 2)] * 4 + [(512, 2, 2)] * 2,
    "conv_bias": False,
    "conv_pos": 128,
    "conv_pos_groups": 16,
    "num_buckets": 320,
    "max_distance": 800,
}


class FeatureExtractor(nn.Module):
    def __init__(self, layers: list[tuple[int, int, int]], *, bias: bool):
        super().__init__()
        self.conv_layers = nn.ModuleList()
        in_ch = 1
        for i, (ch, kernel, stride) in enumerate(layers):
            block = [nn.Conv1d(in_ch, ch, kernel, stride=stride, bias=bias), nn.Dropout(0.0)]
            if i == 0:
                block.append(nn.GroupNorm(ch, ch, affine=True))
            block.append(nn.GELU())
            self.conv_layers.append(nn.Sequential(*block))
            in_ch = ch

    def forward(self, wave):  # (B, samples) -> (B, C, frames)
        x = wave.unsqueeze(1)
        for block in self.conv_layers:
            if len(block) == 4:  # group norm in fp32, as the reference does
                x = block[1](block[0](x))
                x = F.group_norm(x.float(), block[2].num_groups, block[2].weight.float(), block[2].bias.float(), block[2].eps).type_as(x)
                x = block[3](x)
            else:
                x = block(x)
        return x


class WeightNormConv(nn.Module):
    """Conv1d with weight = g · v / ‖v‖, the norm taken over all axes but the kernel axis."""

    def __init__(self, dim: int, kernel: int, groups: int):
        super().__init__()
        self.padding, self.groups = kernel // 2, groups
        self.weight_g = nn.Parameter(torch.ones(1, 1, kernel))
        self.weight_v = nn.Parameter(torch.randn(dim, dim // groups, kernel) * 0.02)
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        v = self.weight_v
        weight = v * (self.weight_g / v.norm(dim=(0, 1), keepdim=True))
        out = F.conv1d(x, weight, self.bias, padding=self.padding, groups=self.groups)
        return out[:, :, :-1] if self.weight_v.shape[-1] % 2 == 0 else out


class SelfAttention(nn.Module):
    def __init__(self, dim: int, heads: int, *, buckets: int, max_distance: int, relative: bool):
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.buckets, self.max_distance = buckets, max_distance
        if relative:
            self.relative_attention_bias = nn.Embedding(buckets, heads)
        self.k_proj, self.v_proj, self.q_proj, self.out_proj = (nn.Linear(dim, dim) for _ in range(4))
        self.grep_linear = nn.Linear(self.head_dim, 8)
        self.grep_a = nn.Parameter(torch.ones(1, heads, 1, 1))

    def position_bias(self, length: int, device) -> torch.Tensor:
        """(heads, L, L) learned bias over log-bucketed signed distances."""
        pos = torch.arange(length, device=device)
        rel = pos[None, :] - pos[:, None]
        half = self.buckets // 2
        bucket = (rel > 0).long() * half
        dist = rel.abs()
        exact = half // 2
        far = exact + (torch.log(dist.float() / exact) / math.log(self.max_distance / exact) * (half - exact)).long()
        bucket = bucket + torch.where(dist < exact, dist, far.clamp(max=half - 1))
        return self.relative_attention_bias(bucket).permute(2, 0, 1)

    def forward(self, x, bias, padding):  # x (B, T, C); bias (H, T, T); padding (B, T) True = pad
        b, t, c = x.shape
        heads = x.view(b, t, self.heads, self.head_dim).transpose(1, 2)
        gate_a, gate_b = torch.sigmoid(self.grep_linear(heads).view(b, self.heads, t, 2, 4).sum(-1)).chunk(2, dim=-1)
        gate = gate_a * (gate_b * self.grep_a - 1.0) + 2.0  # (B, H, T, 1)
        mask = gate * bias.unsqueeze(0).to(x.dtype)
        if padding is not None:
            mask = mask.masked_fill(padding[:, None, None, :], float("-inf"))

        def split(t_):
            return t_.view(b, t, self.heads, self.head_dim).transpose(1, 2)

        out = F.scaled_dot_product_attention(split(self.q_proj(x)), split(self.k_proj(x)), split(self.v_proj(x)), attn_mask=mask)
        return self.out_proj(out.transpose(1, 2).reshape(b, t, c))


class EncoderLayer(nn.Module):
    def __init__(self, cfg: dict, *, relative: bool):
        super().__init__()
        dim = cfg["encoder_embed_dim"]
        self.self_attn = SelfAttention(
            dim, cfg["encoder_attention_heads"], buckets=cfg["num_buckets"], max_distance=cfg["max_distance"], relative=relative
        )
        self.self_attn_layer_norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, cfg["encoder_ffn_embed_dim"])
        self.fc2 = nn.Linear(cfg["encoder_ffn_embed_dim"], dim)
        self.final_layer_norm = nn.LayerNorm(dim)

    def forward(self, x, bias, padding):
        x = self.self_attn_layer_norm(x + self.self_attn(x, bias, padding))
        hidden = F.gelu(self.fc1(x).float()).type_as(x)
        return self.final_layer_norm(x + self.fc2(hidden))


class Encoder(nn.Module):
    def __init__(self, cfg: dict):
        super().__init__()
        dim = cfg["encoder_embed_dim"]
        self.pos_conv = nn.Sequential(WeightNormConv(dim, cfg["conv_pos"], cfg["conv_pos_groups"]), nn.Identity(), nn.GELU())
        self.layers = nn.ModuleList(EncoderLayer(cfg, relative=i == 0) for i in range(cfg["encoder_layers"]))
        self.layer_norm = nn.LayerNorm(dim)

    def forward(self, x, padding) -> list[torch.Tensor]:
        """The input to the first layer (after position embedding and norm), then every layer's output."""
        if padding is not None:
            x = x.masked_fill(padding.unsqueeze(-1), 0.0)
        x = self.layer_norm(x + self.pos_conv(x.transpose(1, 2)).transpose(1, 2))
        bias = self.layers[0].self_attn.position_bias(x.shape[1], x.device)
        states = [x]
        for layer in self.layers:
            x = layer(x, bias, padding)
            states.append(x)
        return states


class WavLM(nn.Module):
    def __init__(self, cfg: dict):
        super().__init__()
        layers = [tuple(int(v) for v in layer) for layer in cfg["conv_feature_layers"]]
        self.feature_extractor = FeatureExtractor(layers, bias=bool(cfg["conv_bias"]))
        embed = layers[-1][0]
        dim = cfg["encoder_embed_dim"]
        self.layer_norm = nn.LayerNorm(embed)
        self.post_extract_proj = nn.Linear(embed, dim) if embed != dim else None
        self.mask_emb = nn.Parameter(torch.zeros(dim))  # masked pretraining only
        self.encoder = Encoder(cfg)

    def forward(self, wave, valid):  # valid (B, samples) True = real audio
        features = self.layer_norm(self.feature_extractor(wave).transpose(1, 2))
        frames = features.shape[1]
        usable = valid.shape[1] - valid.shape[1] % frames
        padding = ~valid[:, :usable].reshape(valid.shape[0], frames, -1).any(-1)
        if self.post_extract_proj is not None:
            features = self.post_extract_proj(features)
        return self.encoder(features, padding), padding


class AesMultiOutput(nn.Module):
    def __init__(self, config: dict):
        super().__init__()
        encoder = {**ENCODER, **(config.get("encoder") or {})}
        if str(config.get("proj_act_fn", "gelu")) != "gelu":
            raise WeightsMismatch("only the gelu projection of audiobox-aesthetics is supported")
        self.nth_layer = int(config.get("nth_layer", 13))
        if self.nth_layer != encoder["encoder_layers"] + 1:
            raise WeightsMismatch(f"nth_layer {self.nth_layer} must be encoder_layers + 1 ({encoder['encoder_layers'] + 1})")
        self.use_weighted_layer_sum = bool(config.get("use_weighted_layer_sum", True))
        self.normalize_embed = bool(config.get("normalize_embed", True))
        self.target_transform = config.get("target_transform") or {}
        self.wavlm_model = WavLM(encoder)
        dim, out = encoder["encoder_embed_dim"], int(config.get("output_dim", 1))
        self.proj_layer = nn.ModuleDict({axis: nn.Sequential(*_mlp(dim, out, config)) for axis in AXES})
        if self.use_weighted_layer_sum:
            self.layer_weights = nn.ParameterDict({axis: nn.Parameter(torch.ones(self.nth_layer) / self.nth_layer) for axis in AXES})

    def forward(self, wave: torch.Tensor, valid: torch.Tensor) -> dict[str, torch.Tensor]:
        """(B, samples) 16 kHz windows and their sample masks -> per-axis predictions in the
        model's normalised scale (see `denormalise`)."""
        states, padding = self.wavlm_model(wave, valid)
        stacked = torch.stack(states, dim=-1)  # B T C L
        keep = (~padding).unsqueeze(-1).to(stacked.dtype)
        preds = {}
        for axis in AXES:
            if self.use_weighted_layer_sum:
                mixed = torch.einsum("btcl,l->btc", stacked, F.softmax(self.layer_weights[axis].float(), dim=-1).to(stacked.dtype))
            else:
                mixed = states[-1]
            pooled = (mixed * keep).sum(dim=1) / keep.sum(dim=1).clamp(min=1)
            if self.normalize_embed:
                pooled = F.normalize(pooled, dim=-1)
            preds[axis] = self.proj_layer[axis](pooled).squeeze(-1).float()
        return preds

    def denormalise(self, axis: str, values):
        transform = self.target_transform.get(axis) or {"mean": 0.0, "std": 1.0}
        return values * float(transform["std"]) + float(transform["mean"])


def _mlp(dim: int, out: int, config: dict) -> list[nn.Module]:
    layers: list[nn.Module] = []
    for i in range(int(config.get("proj_num_layer", 1))):
        if i == int(config.get("proj_num_layer", 1)) - 1:
            layers.append(nn.Linear(dim, out))
            continue
        layers.append(nn.Linear(dim, dim))
        if config.get("proj_ln"):
            layers.append(nn.LayerNorm(dim))
        layers.append(nn.GELU())
        if float(config.get("proj_dropout", 0) or 0) != 0:
            layers.append(nn.Dropout(float(config["proj_dropout"])))
    return layers


def load_aesthetics(directory: Path) -> AesMultiOutput:
    """AesMultiOutput from the facebook/audiobox-aesthetics layout (config.json + model.safetensors)."""
    directory = Path(directory)
    model = AesMultiOutput(read_json(directory / "config.json"))
    path = weight_file(directory)
    if path is None:
        raise FileNotFoundError(f"{directory} has no model.safetensors")
    state = rename_weight_norm(read_state_dict(path), "wavlm_model.encoder.pos_conv.0", parametrized=False)
    load_exact(model, state, source=str(path))
    return model.eval()
