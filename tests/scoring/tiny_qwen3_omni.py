"""A tiny random Qwen3-Omni thinker configuration (Qwen3OmniMoeThinkerConfig) and the named special tokens its
processor reads. The processor itself (Qwen3OmniMoeProcessor) cannot be built on this stack: it requires Qwen2-VL
image and video processors, which need torchvision and Pillow (docs/judges.md)."""

from __future__ import annotations

NAMED = {
    "audio_token": "<|audio_pad|>",
    "image_token": "<|image_pad|>",
    "video_token": "<|video_pad|>",
    "audio_bos_token": "<|audio_start|>",
    "audio_eos_token": "<|audio_end|>",
    "vision_bos_token": "<|vision_start|>",
    "vision_eos_token": "<|vision_end|>",
}
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", *NAMED.values()]


def tiny_qwen3_omni_config(processor):
    """`processor`: anything with the tokenizer (`.tokenizer`) whose ids the config names."""
    from transformers import Qwen3OmniMoeThinkerConfig

    tokenizer = processor.tokenizer
    ids = {name: tokenizer.convert_tokens_to_ids(token) for name, token in NAMED.items()}
    return Qwen3OmniMoeThinkerConfig(
        audio_config={
            "num_mel_bins": 16, "encoder_layers": 1, "encoder_attention_heads": 2, "encoder_ffn_dim": 32, "d_model": 16,
            "max_source_positions": 100, "n_window": 50, "output_dim": 32, "n_window_infer": 100, "downsample_hidden_size": 8,
        },
        vision_config={"depth": 1, "hidden_size": 16, "intermediate_size": 32, "num_heads": 2, "out_hidden_size": 32, "num_position_embeddings": 16, "deepstack_visual_indexes": [0]},
        text_config={
            "vocab_size": len(tokenizer), "hidden_size": 32, "intermediate_size": 37, "num_hidden_layers": 2, "num_attention_heads": 4,
            "num_key_value_heads": 2, "head_dim": 8, "max_position_embeddings": 1024, "moe_intermediate_size": 16, "num_experts": 4,
            "num_experts_per_tok": 2, "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [1, 1, 2], "interleaved": True},
        },
        audio_token_id=ids["audio_token"], image_token_id=ids["image_token"], video_token_id=ids["video_token"], audio_start_token_id=ids["audio_bos_token"],
    )  # fmt: skip

