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


# Whisper large-v3 as published (config.json of openai/whisper-large-v3): 128 mel bins, 32 + 32 layers of
# width 1280, 20 heads, 51866 tokens (~1.55 B parameters). The lyrics judge's full size.
WHISPER_LARGE_V3 = {
    "vocab_size": 51866,
    "num_mel_bins": 128,
    "d_model": 1280,
    "encoder_layers": 32,
    "decoder_layers": 32,
    "encoder_attention_heads": 20,
    "decoder_attention_heads": 20,
    "encoder_ffn_dim": 5120,
    "decoder_ffn_dim": 5120,
    "max_source_positions": 1500,
    "max_target_positions": 448,
}


def whisper(device: str, dtype, *, size: str):
    """(model, processor, weights dir): Whisper large-v3's published sizes, or the tiny test model."""
    from transformers import WhisperForConditionalGeneration

    processor = tiny_models.whisper_processor(feature_size=128 if size == "full" else 80)
    config = tiny_models.tiny_whisper_config(processor, **(WHISPER_LARGE_V3 if size == "full" else {}))
    model = _build(WhisperForConditionalGeneration, config, device, dtype)
    model.generation_config = tiny_models.whisper_generation_config(processor)
    directory = Path(tempfile.mkdtemp(prefix="bench-whisper-"))
    config.save_pretrained(directory)
    processor.save_pretrained(directory)
    return model, processor, str(directory)


# --- The CMI family at published sizes ------------------------------------------------------------
# MuQ-large-msd-iter: a 12-layer, 1024-wide Conformer (~300 M parameters); XLM-RoBERTa base (~278 M);
# MuQ-MuLan-large: both, each followed by an 8-layer 768-wide transformer, 512-d latents (~700 M in
# all); CMI-RM: 768 wide, prompt transformer 1 layer, joint transformer 4 (~30 M trained);
# SongEval's head: 1024 in, 4096 feed-forward, 4 attention layers (25.2 M); audiobox-aesthetics:
# the 12 x 768 WavLM encoder of nets/audiobox.py (94.4 M). docs/reference figures; printed by the bench.


def cmi_family(root: Path, *, size: str) -> Path:
    """Configs (no weights) of MuQ, XLM-R, MuQ-MuLan, CMI-RM (SA), SongEval and audiobox in their
    authors' layouts under `root`, tiny or at published sizes; the networks are built from them with
    random weights by the bench and handed to the judges through their model cache."""
    import json

    from tests.scoring import tiny_cmi

    if size != "full":
        return tiny_cmi.build_all(root)
    muq = dict(tiny_cmi.MUQ_CONFIG, conv_dim=512, encoder_dim=1024, encoder_depth=12, codebook_size=4096)
    muq["w2v2_config"] = dict(muq["w2v2_config"], intermediate_size=4096, num_attention_heads=16, conv_depthwise_kernel_size=31, num_conv_pos_embedding_groups=16, num_conv_pos_embeddings=128)
    (root / "MuQ-large-msd-iter").mkdir(parents=True, exist_ok=True)
    (root / "MuQ-large-msd-iter" / "config.json").write_text(json.dumps(muq))
    xlmr = tiny_cmi.build_xlmr(root)  # its tokenizer (small vocabulary: ids stay far below the config's)
    from transformers import XLMRobertaConfig

    XLMRobertaConfig(vocab_size=250002, hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072, max_position_embeddings=514, pad_token_id=1, bos_token_id=0, eos_token_id=2).save_pretrained(xlmr)
    tower = {"dim": 768, "tf_depth": 8, "heads": 8, "dim_head": 64, "ff_mult": 4}
    mulan = {
        "mulan": {"sr": 24000, "clip_secs": 10, "dim_latent": 512},
        "audio_model": {"name": "OpenMuQ/MuQ-large-msd-iter", "model_dim": 1024, "use_layer_idx": -1},
        "text_model": {"name": "xlm-roberta-base", "model_dim": 768, "use_layer_idx": -1},
        "audio_transformer": tower,
        "text_transformer": {**tower, "max_seq_len": 1024},
    }
    (root / "MuQ-MuLan-large").mkdir(parents=True, exist_ok=True)
    (root / "MuQ-MuLan-large" / "config.json").write_text(json.dumps(mulan))
    import yaml

    cmirm = tiny_cmi.cmirm_config()
    cmirm["model"].update(dim=768, mlp_dim=512, prompt_tf_depth=1, joint_tf_depth=4, dim_head=64, heads=8, null_embedding={k: {"length": 10} for k in ("text", "lyrics", "audio")})
    (root / "CMI-RM").mkdir(parents=True, exist_ok=True)
    (root / "CMI-RM" / "config.yaml").write_text(yaml.safe_dump(cmirm))
    (root / "SongEval" / "ckpt").mkdir(parents=True, exist_ok=True)
    (root / "SongEval" / "config.yaml").write_text("generator:\n  in_features: 1024\n  ffd_hidden_size: 4096\n  num_classes: 5\n  attn_layer_num: 4\n")
    (root / "audiobox-aesthetics").mkdir(parents=True, exist_ok=True)
    box = {"proj_num_layer": 1, "nth_layer": 13, "use_weighted_layer_sum": True, "normalize_embed": True, "output_dim": 1, "target_transform": {a: {"mean": 5.0, "std": 2.0} for a in ("CE", "CU", "PC", "PQ")}}
    (root / "audiobox-aesthetics" / "config.json").write_text(json.dumps(box))
    # Weight files the layout check looks for; never read (the networks come through the model cache).
    for path in ("MuQ-large-msd-iter/model.safetensors", "MuQ-MuLan-large/model.safetensors", "CMI-RM/model.safetensors", "SongEval/ckpt/model.safetensors", "audiobox-aesthetics/model.safetensors"):
        (root / path).touch()
    return root


def cmi_network(kind: str, root: Path, device: str, dtype):
    """The judge's network with random weights, built from the configs under `root` directly on the device."""
    import torch

    from scoring.judges.nets import audiobox, cmirm, mulan, muq, songeval

    torch.manual_seed(0)
    with torch.device(device):
        if kind == "muq_mulan":
            config, audio, text = mulan.build_towers(root / "MuQ-MuLan-large")
            model = mulan.MuQMuLan(mulan.MuLan(audio, text, config["mulan"]), config)
        elif kind == "cmi_rm":
            _, audio, text = mulan.build_towers(root / "MuQ-MuLan-large")
            model = cmirm.CMIRewardModel(cmirm.read_config(root / "CMI-RM" / "config.yaml"), audio, text)
        elif kind == "songeval":
            head = songeval.SongEvalHead(**songeval.read_head_config(root / "SongEval" / "config.yaml"))
            model = songeval.SongEval(muq.build_muq(root / "MuQ-large-msd-iter"), head)
        else:
            model = audiobox.AesMultiOutput(json_config(root / "audiobox-aesthetics" / "config.json"))
    return muq.place(model.eval(), device, dtype)


def json_config(path: Path) -> dict:
    import json

    return json.loads(path.read_text())
