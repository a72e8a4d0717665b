"""Random-weight judge models for benchmarks, built directly on the device from published configs.

Random weights cost the same compute as trained ones, and nothing is downloaded: a 16 GB
from_pretrained is replaced by building the architecture in place (in bf16 on a GPU). The built
model is handed to the judge through its model cache (CLAP) or the backend registry (audio LLMs),
so the judge's own code runs; the loaders themselves are tested on tiny models in tests/scoring/.
Tokenizers are small byte-level BPEs trained locally (tests/scoring/tiny_models.py); their ids
stay far below the configs' vocabulary sizes.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for path in (str(ROOT), str(ROOT / "platform")):
    if path not in sys.path:
        sys.path.insert(0, path)

from tests.scoring import tiny_models  # noqa: E402

# Qwen2-Audio-7B as published (config.json of Qwen/Qwen2-Audio-7B-Instruct): a Whisper-large-v3-like
# audio encoder and a Qwen-7B language model.
QWEN2_AUDIO_7B_AUDIO = {
    "num_mel_bins": 128,
    "encoder_layers": 32,
    "encoder_attention_heads": 20,
    "encoder_ffn_dim": 5120,
    "d_model": 1280,
    "max_source_positions": 1500,
}
QWEN2_AUDIO_7B_TEXT = {
    "model_type": "qwen2",
    "vocab_size": 156032,
    "hidden_size": 4096,
    "intermediate_size": 11008,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 32,
    "max_position_embeddings": 8192,
    "rms_norm_eps": 1e-5,
    "rope_theta": 10000.0,
}


def _build(cls, config, device: str, dtype):
    import torch

    torch.manual_seed(0)
    with torch.device(device):
        model = cls._from_config(config, dtype=dtype)
    return model.eval()


def params(model) -> float:
    return sum(p.numel() for p in model.parameters()) / 1e6


def clap(device: str, dtype, *, size: str):
    """(model, processor, weights dir): ClapConfig() defaults are laion/clap-htsat-unfused (~153 M parameters)."""
    from transformers import ClapConfig, ClapModel

    processor = tiny_models.clap_processor()
    config = ClapConfig() if size == "full" else tiny_models.tiny_clap_config(len(processor.tokenizer))
    model = _build(ClapModel, config, device, dtype)
    directory = Path(tempfile.mkdtemp(prefix="bench-clap-"))
    config.save_pretrained(directory)
    processor.save_pretrained(directory)
    return model, processor, str(directory)


def qwen2_audio(device: str, dtype, *, size: str, layers: int | None = None):
    """(model, processor, weights dir): Qwen2-Audio-7B's published sizes, or the tiny test model.

    `layers` cuts both stacks to that many layers at full width (a CPU smoke test of the full
    vocabulary and widths without 17 GB of memory).
    """
    from transformers import Qwen2AudioConfig, Qwen2AudioForConditionalGeneration

    if size == "full":
        processor = tiny_models.qwen2_audio_processor(feature_size=128, chunk_length=30)
        audio, text = dict(QWEN2_AUDIO_7B_AUDIO), dict(QWEN2_AUDIO_7B_TEXT)
        if layers:
            audio["encoder_layers"], text["num_hidden_layers"] = layers, layers
        config = Qwen2AudioConfig(audio_config=audio, text_config=text, audio_token_index=processor.tokenizer.convert_tokens_to_ids("<|AUDIO|>"))
    else:
        processor = tiny_models.qwen2_audio_processor()
        config = tiny_models.tiny_qwen2_audio_config(processor)
    model = _build(Qwen2AudioForConditionalGeneration, config, device, dtype)
    # Random weights rarely say the end token, but when they do a row stops early: without one,
    # every row generates exactly max_new_tokens and runs compare like with like.
    model.generation_config.eos_token_id = None
    directory = Path(tempfile.mkdtemp(prefix="bench-qwen2-audio-"))
    config.save_pretrained(directory)
    processor.save_pretrained(directory)
    return model, processor, str(directory)
