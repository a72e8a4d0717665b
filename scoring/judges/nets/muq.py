"""MuQ (tencent-ailab/MuQ, OpenMuQ/MuQ-large-msd-iter): a mel front end, a 2-D convolutional
subsampler and a Conformer, written here so it runs on this project's torch and transformers.

The `muq` package cannot be used: it needs torchaudio (no build for our torch pin), x_clip,
nnAudio and easydict, and builds transformers' Conformer encoder from an EasyDict, which
transformers 5 rejects; its forward also relies on the encoder returning every hidden state,
which transformers 5's encoder module no longer does. So the mel spectrogram is computed with
torch alone (torchaudio's MelSpectrogram semantics: periodic Hann window, centred reflect-padded
STFT, power 2, HTK mel scale without filter normalisation, then 10·log10 with a 1e-10 floor),
and the Conformer layers are transformers' own modules driven by our loop, which returns the
hidden states the way transformers 4 did: the encoder input, the output of every layer but the
last, then the last layer's output after the final layer norm.

Parameter names follow the published checkpoint (`model.conv…`, `model.conformer…`,
`model.linear`, `model.cls_token`), so its model.safetensors loads with every key checked.
The random-projection quantizer (or Mel-RVQ) that made the pretraining targets is training-only:
its tensors are accepted when present and never used.
"""

from __future__ import annotations

import math
from pathlib import Path

import torch
from torch import nn

from ..layout import read_json, weight_file
from .common import load_exact, read_state_dict, rename_weight_norm

SAMPLE_RATE = 24000
FEATURE = "melspec_2048"
# Tensors of the pretraining objective: present in some checkpoints, never used for features.
TRAINING_ONLY = ("model.quantizer_", "model.rvq.", "model.recon_proj.")
_W2V2_META = ("architectures", "model_type", "transformers_version", "torch_dtype", "_name_or_path")


def _hz_to_mel(freq: float) -> float:
    return 2595.0 * math.log10(1.0 + freq / 700.0)


def _mel_to_hz(mels: torch.Tensor) -> torch.Tensor:
    return 700.0 * (10.0 ** (mels / 2595.0) - 1.0)


def mel_filterbank(*, sample_rate: int, n_fft: int, n_mels: int) -> torch.Tensor:
    """(n_fft//2+1, n_mels) triangular HTK-mel filters between 0 Hz and Nyquist, unnormalised."""
    freqs = torch.linspace(0, sample_rate // 2, n_fft // 2 + 1)
    mel_points = torch.linspace(_hz_to_mel(0.0), _hz_to_mel(float(sample_rate // 2)), n_mels + 2)
    hz_points = _mel_to_hz(mel_points)
    widths = hz_points[1:] - hz_points[:-1]
    slopes = hz_points.unsqueeze(0) - freqs.unsqueeze(1)
    rising = -slopes[:, :-2] / widths[:-1]
    falling = slopes[:, 2:] / widths[1:]
    return torch.clamp(torch.minimum(rising, falling), min=0.0)


class MelFrontEnd:
    """Log-mel power spectrogram in dB, computed on whatever device the wave is on, in fp32.

    A plain object, not a module: the published checkpoints hold no tensors for it.
    """

    def __init__(self, *, sample_rate: int = SAMPLE_RATE, n_fft: int = 2048, hop_length: int = 240, n_mels: int = 128):
        self.n_fft, self.hop_length = n_fft, hop_length
        self._window = torch.hann_window(n_fft)
        self._filters = mel_filterbank(sample_rate=sample_rate, n_fft=n_fft, n_mels=n_mels)

    def __call__(self, wave: torch.Tensor) -> torch.Tensor:
        wave = wave.float()
        if self._window.device != wave.device:
            self._window, self._filters = self._window.to(wave.device), self._filters.to(wave.device)
        spec = torch.stft(
            wave, self.n_fft, hop_length=self.hop_length, window=self._window, center=True, pad_mode="reflect", return_complex=True
        )
        power = spec.abs().pow(2.0)
        mel = torch.matmul(power.transpose(-1, -2), self._filters).transpose(-1, -2)
        return 10.0 * torch.log10(torch.clamp(mel, min=1e-10))


class ResBlock2d(nn.Module):
    def __init__(self, in_ch: int, out_ch: int, stride: tuple[int, int]):
        super().__init__()
        self.conv1 = nn.Conv2d(in_ch, out_ch, 3, padding=1, stride=stride)
        self.bn1 = nn.BatchNorm2d(out_ch)
        self.conv2 = nn.Conv2d(out_ch, out_ch, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(out_ch)
        self.relu = nn.ReLU()
        self.shortcut = in_ch != out_ch or stride[0] > 1
        if self.shortcut:
            self.conv3 = nn.Conv2d(in_ch, out_ch, 3, padding=1, stride=stride)
            self.bn3 = nn.BatchNorm2d(out_ch)

    def forward(self, x):
        out = self.bn2(self.conv2(self.relu(self.bn1(self.conv1(x)))))
        skip = self.bn3(self.conv3(x)) if self.shortcut else x
        return self.relu(skip + out)


class ConvSubsampler(nn.Module):
    """Two residual conv blocks (frequency /4, time /4 or /2), then a linear map to the encoder width."""

    def __init__(self, hidden: int, out_dim: int, *, time_strides: tuple[int, int], n_bands: int):
        super().__init__()
        self.conv = nn.Sequential(ResBlock2d(1, hidden, (2, time_strides[0])), ResBlock2d(hidden, hidden, (2, time_strides[1])))
        self.linear = nn.Linear(hidden * n_bands // 4, out_dim)

    def forward(self, mel):  # (B, F, T)
        x = self.conv(mel.unsqueeze(1))
        b, c, f, t = x.shape
        return self.linear(x.permute(0, 3, 1, 2).reshape(b, t, c * f))


class MuQModel(nn.Module):
    def __init__(self, config: dict):
        super().__init__()
        from transformers import Wav2Vec2ConformerConfig
        from transformers.models.wav2vec2_conformer.modeling_wav2vec2_conformer import Wav2Vec2ConformerEncoder

        label_rate = int(config.get("label_rate", 25))
        n_fold = 100 // label_rate
        strides = {4: (2, 2), 2: (2, 1)}.get(n_fold)
        if strides is None:
            raise ValueError(f"MuQ label_rate {label_rate} is not supported (25 or 50)")
        features = list(config.get("features", [FEATURE]))
        if features != [FEATURE]:
            raise ValueError(f"MuQ features {features} are not supported (only {FEATURE})")
        n_mels = int(config.get("n_mels", 128))
        encoder_dim = int(config.get("encoder_dim", 1024))
        stat = config.get("stat") or {}
        try:
            self.mel_mean, self.mel_std = float(stat[f"{FEATURE}_mean"]), float(stat[f"{FEATURE}_std"])
        except KeyError:
            raise ValueError(f"MuQ config has no stat.{FEATURE}_mean / _std") from None
        self.front_end = MelFrontEnd(n_fft=2048, hop_length=int(config.get("hop_length", 240)), n_mels=n_mels)
        self.conv = ConvSubsampler(int(config.get("conv_dim", 512)), encoder_dim, time_strides=strides, n_bands=n_mels)
        w2v2 = {k: v for k, v in (config.get("w2v2_config") or {}).items() if k not in _W2V2_META}
        w2v2.update(num_hidden_layers=int(config.get("encoder_depth", 12)), hidden_size=encoder_dim)
        conformer_config = Wav2Vec2ConformerConfig(**w2v2)
        conformer_config._attn_implementation = "sdpa"
        self.conformer = Wav2Vec2ConformerEncoder(conformer_config)
        self.linear = nn.Linear(encoder_dim, int(config.get("codebook_size", 4096)))
        self.cls_token = nn.Parameter(torch.zeros(encoder_dim))

    def hidden_states(self, wave: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """(B, samples) at 24 kHz -> encoder input, then every layer's output (25 frames/s)."""
        dtype = self.linear.weight.dtype
        mel = self.front_end(wave)[..., :-1]
        mel = ((mel - self.mel_mean) / self.mel_std).to(dtype)
        x = self.conv(mel)
        encoder = self.conformer
        positions = encoder.embed_positions(x) if encoder.embed_positions is not None else None
        states = []
        for layer in encoder.layers:
            states.append(x)
            x = layer(x, attention_mask=None, relative_position_embeddings=positions)
            x = x[0] if isinstance(x, tuple) else x
        states.append(encoder.layer_norm(x))
        return tuple(states)


class MuQ(nn.Module):
    """The hub wrapper: parameters under `model.`, as in the published model.safetensors."""

    def __init__(self, config: dict):
        super().__init__()
        self.config = dict(config)
        self.model = MuQModel(config)

    def forward(self, wave: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return self.model.hidden_states(wave)



def muq_state(state: dict[str, torch.Tensor], prefix: str = "") -> dict[str, torch.Tensor]:
    """Checkpoint keys normalised to our module (the unused positional conv's weight norm form)."""
    return rename_weight_norm(state, f"{prefix}model.conformer.pos_conv_embed.conv", parametrized=True)


def build_muq(directory: Path) -> MuQ:
    return MuQ(read_json(Path(directory) / "config.json"))


def load_muq(directory: Path) -> MuQ:
    """MuQ from a directory in the OpenMuQ layout (config.json + model.safetensors)."""
    directory = Path(directory)
    model = build_muq(directory)
    path = weight_file(directory)
    if path is None:
        raise FileNotFoundError(f"{directory} has no model.safetensors")
    load_exact(model, muq_state(read_state_dict(path)), source=str(path), ignore=TRAINING_ONLY)
    return model.eval()


def place(model: nn.Module, device: str, dtype: torch.dtype) -> nn.Module:
    """Move a model holding MuQ to a device and dtype, keeping rotary frequencies in fp32 (the
    angles are position x frequency, and in bf16 the positions themselves would round off) and
    the parts a model lists in `fp32_parts`."""
    model.to(device=device, dtype=dtype)
    for name in getattr(model, "fp32_parts", ()):
        getattr(model, name).float()
    for module in model.modules():
        if isinstance(getattr(module, "inv_freq", None), torch.Tensor) and hasattr(module, "cached_sequence_length"):
            module.inv_freq = module.inv_freq.float()
            module.cached_sequence_length = None
    return model
