"""Tiny random MuQ, XLM-RoBERTa, MuQ-MuLan, SongEval, CMI-RM and audiobox-aesthetics models,
written to disk in their authors' published layouts (file names, config formats, key names), so
the judges are exercised through their production loaders offline.

Checkpoints carry what the published ones carry beyond our modules' own tensors: MuQ's
pretraining quantizer buffers, the positional convolution's weight norm in the old
weight_g/weight_v form, and (for CMI-RM) only the trained parts, the towers coming from MuQ-MuLan.
"""

from __future__ import annotations

import json
from pathlib import Path

MUQ_CONFIG = {
    "label_rate": 25,
    "num_codebooks": 1,
    "codebook_dim": 16,
    "codebook_size": 64,
    "features": ["melspec_2048"],
    "hop_length": 240,
    "n_mels": 128,
    "conv_dim": 8,
    "encoder_dim": 32,
    "encoder_depth": 6,
    "mask_hop": 0.4,
    "mask_prob": 0.6,
    "is_flash": False,
    "stat": {"melspec_2048_cnt": 14282760192, "melspec_2048_mean": 6.768444971712967, "melspec_2048_std": 18.417922652295623},
    "w2v2_config": {
        "activation_dropout": 0.1,
        "attention_dropout": 0.1,
        "architectures": ["Wav2Vec2ConformerForCTC"],
        "conformer_conv_dropout": 0.1,
        "conv_depthwise_kernel_size": 3,
        "feat_extract_activation": "gelu",
        "hidden_act": "swish",
        "hidden_dropout": 0.1,
        "hidden_size": 1024,
        "intermediate_size": 64,
        "layer_norm_eps": 1e-5,
        "model_type": "wav2vec2-conformer",
        "num_attention_heads": 2,
        "num_conv_pos_embedding_groups": 2,
        "num_conv_pos_embeddings": 8,
        "num_hidden_layers": 24,
        "position_embeddings_type": "rotary",
        "rotary_embedding_base": 10000,
        "transformers_version": "4.19.0.dev0",
    },
    "use_rvq_target": False,
    "rvq_n_codebooks": 8,
}

WORDS = "calm piano song rock guitar drums happy sad night love you me the a and of in is la sing dance".split()


def _save(state: dict, path: Path) -> None:
    from safetensors.torch import save_file

    path.parent.mkdir(parents=True, exist_ok=True)
    save_file({k: v.detach().contiguous() for k, v in state.items()}, str(path))


def _published_muq_extras(state: dict, prefix: str) -> dict:
    """Add the quantizer buffers and old-style weight-norm names a published MuQ checkpoint has."""
    import torch

    state = dict(state)
    conv = f"{prefix}model.conformer.pos_conv_embed.conv"
    state[f"{conv}.weight_g"] = state.pop(f"{conv}.parametrizations.weight.original0")
    state[f"{conv}.weight_v"] = state.pop(f"{conv}.parametrizations.weight.original1")
    generator = torch.Generator().manual_seed(142)
    state[f"{prefix}model.quantizer_melspec_2048.random_projection"] = torch.randn(128 * 4, 16, generator=generator)
    state[f"{prefix}model.quantizer_melspec_2048.codebook"] = torch.randn(64, 16, generator=generator)
    return state


def build_muq(root: Path) -> Path:
    import torch

    from scoring.judges.nets.muq import MuQ

    torch.manual_seed(0)
    directory = root / "MuQ-large-msd-iter"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json.dumps(MUQ_CONFIG))
    model = MuQ(MUQ_CONFIG)
    _save(_published_muq_extras(model.state_dict(), ""), directory / "model.safetensors")
    return directory


def build_xlmr(root: Path) -> Path:
    import torch
    from transformers import XLMRobertaConfig, XLMRobertaModel, XLMRobertaTokenizer

    torch.manual_seed(1)
    directory = root / "xlm-roberta-base"
    specials = [("<s>", 0.0), ("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0)]
    pieces = [(f"▁{w}", -float(i + 2)) for i, w in enumerate(WORDS)] + [(c, -30.0) for c in "abcdefghijklmnopqrstuvwxyz"]
    tokenizer = XLMRobertaTokenizer(vocab=specials + pieces + [("<mask>", 0.0)])
    config = XLMRobertaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=37,
        max_position_embeddings=520,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
    )
    XLMRobertaModel(config).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def mulan_config(*, clip_secs: float = 2.0, dim: int = 24) -> dict:
    tower = {"dim": dim, "tf_depth": 1, "heads": 2, "dim_head": 8, "attn_dropout": 0.0, "ff_dropout": 0.0, "ff_mult": 4}
    return {
        "mulan": {"sr": 24000, "clip_secs": clip_secs, "dim_latent": 16, "decoupled_contrastive_learning": True, "rank_contrast": True},
        "audio_model": {"name": "OpenMuQ/MuQ-large-msd-iter", "model_dim": 32, "use_layer_idx": -1},
        "text_model": {"name": "xlm-roberta-base", "model_dim": 32, "use_layer_idx": -1},
        "audio_transformer": tower,
        "text_transformer": {**tower, "max_seq_len": 1024},
    }


def build_mulan(root: Path) -> Path:
    import torch

    from scoring.judges.nets.mulan import MuLan, MuQMuLan, build_towers

    directory = root / "MuQ-MuLan-large"
    directory.mkdir(parents=True, exist_ok=True)
    config = mulan_config()
    (directory / "config.json").write_text(json.dumps(config))
    torch.manual_seed(2)
    _, audio, text = build_towers(directory)
    model = MuQMuLan(MuLan(audio, text, config["mulan"]), config)
    _save(_published_muq_extras(model.state_dict(), "mulan.audio.model."), directory / "model.safetensors")
    return directory


def cmirm_config(*, attention_mode: str = "SA") -> dict:
    return {
        "model": {
            "name": "reward",
            "model_name": "OpenMuQ/MuQ-MuLan-large",
            "dim": 24,
            "mode": "concat_text_late",
            "attention_mode": attention_mode,
            "mlp_dim": 16,
            "output_dim": 2,
            "sr": 24000,
            "prompt_tf_depth": 1,
            "joint_tf_depth": 2,
            "dim_head": 8,
            "heads": 2,
            "ff_mult": 4,
            "freeze_audio": True,
            "freeze_text": True,
            "null_embedding": {"text": {"dropout": 0.2, "length": 3}, "lyrics": {"dropout": 0.3, "length": 3}, "audio": {"dropout": 0.5, "length": 3}},
        }
    }


def build_cmirm(root: Path, *, name: str = "CMI-RM", attention_mode: str = "SA") -> Path:
    """Only the trained parts go into model.safetensors; the towers load from MuQ-MuLan."""
    import torch
    import yaml

    from scoring.judges.nets.cmirm import CMIRewardModel, read_config
    from scoring.judges.nets.mulan import build_towers

    directory = root / name
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.yaml").write_text(yaml.safe_dump(cmirm_config(attention_mode=attention_mode)))
    torch.manual_seed(3)
    _, audio, text = build_towers(root / "MuQ-MuLan-large")
    model = CMIRewardModel(read_config(directory / "config.yaml"), audio, text)
    for name, p in model.named_parameters():  # spread the trained parts so scores move with the input
        if p.dim() > 1 and not name.startswith(("text_module.", "audio_module.")):
            torch.nn.init.normal_(p, std=0.3)
    trained = {k: v for k, v in model.state_dict().items() if not k.startswith(("text_module.", "audio_module."))}
    _save(trained, directory / "model.safetensors")
    return directory


def build_songeval(root: Path) -> Path:
    import torch

    from scoring.judges.nets.songeval import SongEvalHead

    directory = root / "SongEval"
    (directory / "ckpt").mkdir(parents=True, exist_ok=True)
    shape = {"in_features": 32, "ffd_hidden_size": 64, "num_classes": 5, "attn_layer_num": 2}
    (directory / "config.yaml").write_text("generator:\n  _target_: model.Generator\n" + "".join(f"  {k}: {v}\n" for k, v in shape.items()))
    torch.manual_seed(4)
    _save(SongEvalHead(**shape).state_dict(), directory / "ckpt" / "model.safetensors")
    return directory


AUDIOBOX_ENCODER = {
    "encoder_layers": 2,
    "encoder_embed_dim": 16,
    "encoder_ffn_embed_dim": 32,
    "encoder_attention_heads": 2,
    "conv_feature_layers": [[16, 10, 5]] + [[16, 3, 2]] * 4 + [[16, 2, 2]] * 2,
    "conv_pos": 16,
    "conv_pos_groups": 4,
    "num_buckets": 16,
    "max_distance": 32,
}


def build_audiobox(root: Path) -> Path:
    import torch

    from scoring.judges.nets.audiobox import AesMultiOutput

    directory = root / "audiobox-aesthetics"
    directory.mkdir(parents=True, exist_ok=True)
    config = {
        "proj_num_layer": 1,
        "proj_ln": False,
        "proj_act_fn": "gelu",
        "proj_dropout": 0,
        "nth_layer": 3,
        "use_weighted_layer_sum": True,
        "precision": "32",
        "normalize_embed": True,
        "output_dim": 1,
        "target_transform": {axis: {"mean": 5.0, "std": 2.0} for axis in ("CE", "CU", "PC", "PQ")},
        "freeze_encoder": True,
        "encoder": AUDIOBOX_ENCODER,
    }
    (directory / "config.json").write_text(json.dumps(config))
    torch.manual_seed(5)
    model = AesMultiOutput(config)
    for weights in model.layer_weights.values():
        torch.nn.init.normal_(weights)
    _save(model.state_dict(), directory / "model.safetensors")
    return directory


def build_all(root: Path) -> Path:
    build_muq(root)
    build_xlmr(root)
    build_mulan(root)
    build_cmirm(root)
    build_cmirm(root, name="CMI-RM-CA", attention_mode="CA")
    build_songeval(root)
    build_audiobox(root)
    return root
