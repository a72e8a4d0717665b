"""Tiny random models saved to disk, so each learned judge is exercised through its real loader offline.

Sizes follow docs/judges.md: a few ten-thousand parameters, built from configs, tokenizers
trained locally on a handful of words. Nothing here touches the network.
"""

from __future__ import annotations

from pathlib import Path

WORDS = (
    "Yes No yes no music song piano guitar drums violin bass synth vocals lyrics fast slow tempo bpm "
    "happy sad calm energetic melancholic upbeat rock pop jazz classical electronic ambient hip hop "
    "does this audio match the description answer is a high quality pleasant piece of clip first second "
    "model critic json music_quality instruction_following both neither score reference style sung"
).split()


def _train_bpe(special: list[str], *, vocab_size: int = 400):
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=special, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
    )
    corpus = [" ".join(WORDS)] * 20 + [w for w in WORDS] + [" " + w for w in WORDS]
    tok.train_from_iterator(corpus, trainer=trainer)
    data = tok.to_str()
    import json

    model = json.loads(data)["model"]
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model["merges"]]
    return model["vocab"], merges


def clap_processor():
    """ClapProcessor as laion/clap-htsat-unfused configures it (rand_trunc, 50 Hz-14 kHz), with a locally trained tokenizer."""
    from transformers import ClapFeatureExtractor, ClapProcessor, RobertaTokenizer

    vocab, merges = _train_bpe(["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    tokenizer = RobertaTokenizer(vocab=vocab, merges=merges)
    extractor = ClapFeatureExtractor(truncation="rand_trunc", frequency_min=50)
    return ClapProcessor(feature_extractor=extractor, tokenizer=tokenizer)


def tiny_clap_config(vocab_size: int):
    from transformers import ClapConfig

    return ClapConfig(
        text_config={
            "vocab_size": vocab_size,
            "hidden_size": 32,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "intermediate_size": 37,
            "max_position_embeddings": 64,
            "pad_token_id": 1,
            "bos_token_id": 0,
            "eos_token_id": 2,
        },
        audio_config={
            "num_mel_bins": 64,
            "spec_size": 256,
            "patch_embeds_hidden_size": 16,
            "hidden_size": 32,
            "depths": [1, 1],
            "num_attention_heads": [2, 2],
            "window_size": 4,
            "patch_stride": [4, 4],
        },
        projection_dim=16,
    )


def build_tiny_clap(directory: Path) -> Path:
    """A 38 k-parameter ClapModel + ClapProcessor saved with save_pretrained."""
    import torch
    from transformers import ClapModel

    torch.manual_seed(0)
    processor = clap_processor()
    model = ClapModel(tiny_clap_config(len(processor.tokenizer))).eval()
    directory.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(directory)
    processor.save_pretrained(directory)
    return directory


QWEN_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|AUDIO|>", "<|audio_bos|>", "<|audio_eos|>"]
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' }}"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'audio' %}{{ 'Audio: <|audio_bos|><|AUDIO|><|audio_eos|>\\n' }}"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}"
    "{{ '<|im_end|>\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


def qwen2_audio_processor(*, feature_size: int = 80, chunk_length: int = 1):
    """Qwen2AudioProcessor with a locally trained Qwen2Tokenizer (Yes and No single tokens) and a chat template."""
    from transformers import Qwen2AudioProcessor, Qwen2Tokenizer, WhisperFeatureExtractor

    vocab, merges = _train_bpe(QWEN_SPECIALS)
    for word in ("Yes", "No"):
        # The AQA score needs Yes and No to be single tokens.
        assert word in vocab, word
    tokenizer = Qwen2Tokenizer(
        vocab=vocab,
        merges=merges,
        unk_token=None,
        bos_token=None,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        extra_special_tokens={},
    )
    tokenizer.add_special_tokens({"additional_special_tokens": QWEN_SPECIALS[1:]})
    extractor = WhisperFeatureExtractor(feature_size=feature_size, chunk_length=chunk_length)
    return Qwen2AudioProcessor(feature_extractor=extractor, tokenizer=tokenizer, chat_template=CHAT_TEMPLATE)


def tiny_qwen2_audio_config(processor):
    from transformers import Qwen2AudioConfig

    tokenizer = processor.tokenizer
    return Qwen2AudioConfig(
        audio_config={
            "num_mel_bins": 80,
            "encoder_layers": 1,
            "encoder_attention_heads": 2,
            "encoder_ffn_dim": 32,
            "d_model": 16,
            "max_source_positions": 50,
        },
        text_config={
            "model_type": "qwen2",
            "vocab_size": len(tokenizer),
            "hidden_size": 32,
            "intermediate_size": 37,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "max_position_embeddings": 1024,
        },
        audio_token_index=tokenizer.convert_tokens_to_ids("<|AUDIO|>"),
    )


def build_tiny_qwen2_audio(directory: Path) -> Path:
    """A tiny Qwen2AudioForConditionalGeneration with a locally trained Qwen2Tokenizer and chat template."""
    import torch
    from transformers import Qwen2AudioForConditionalGeneration

    torch.manual_seed(0)
    processor = qwen2_audio_processor()
    model = Qwen2AudioForConditionalGeneration(tiny_qwen2_audio_config(processor)).eval()
    directory.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(directory)
    processor.save_pretrained(directory)
    return directory


WHISPER_SPECIALS = [
    "<|endoftext|>",
    "<|startoftranscript|>",
    "<|en|>",
    "<|zh|>",
    "<|ja|>",
    "<|ko|>",
    "<|translate|>",
    "<|transcribe|>",
    "<|startoflm|>",
    "<|startofprev|>",
    "<|nocaptions|>",
    "<|notimestamps|>",
]


def whisper_processor(*, feature_size: int = 80):
    """WhisperProcessor with a locally trained byte-level BPE (any script encodes) and Whisper's special tokens."""
    from transformers import WhisperFeatureExtractor, WhisperProcessor, WhisperTokenizer

    vocab, merges = _train_bpe(WHISPER_SPECIALS[:1])
    end = WHISPER_SPECIALS[0]
    tokenizer = WhisperTokenizer(vocab=vocab, merges=merges, unk_token=end, bos_token=end, eos_token=end, pad_token=end)
    tokenizer.add_special_tokens({"additional_special_tokens": WHISPER_SPECIALS[1:]})
    return WhisperProcessor(feature_extractor=WhisperFeatureExtractor(feature_size=feature_size), tokenizer=tokenizer)


def whisper_ids(processor) -> dict[str, int]:
    return {token: processor.tokenizer.convert_tokens_to_ids(token) for token in WHISPER_SPECIALS}


def whisper_generation_config(processor):
    """What Whisper's generate reads to force the language and task: the hub checkpoints' generation_config.json fields."""
    from transformers import GenerationConfig

    ids = whisper_ids(processor)
    end = ids["<|endoftext|>"]
    config = GenerationConfig(bos_token_id=end, eos_token_id=end, pad_token_id=end, decoder_start_token_id=ids["<|startoftranscript|>"])
    config.is_multilingual = True
    config.lang_to_id = {token: ids[token] for token in ("<|en|>", "<|zh|>", "<|ja|>", "<|ko|>")}
    config.task_to_id = {"transcribe": ids["<|transcribe|>"], "translate": ids["<|translate|>"]}
    config.no_timestamps_token_id = ids["<|notimestamps|>"]
    return config


def tiny_whisper_config(processor, **sizes):
    """A tiny WhisperConfig (or, with `sizes`, any other) wired to the processor's special tokens."""
    from transformers import WhisperConfig

    ids = whisper_ids(processor)
    end = ids["<|endoftext|>"]
    dims = {
        "vocab_size": len(processor.tokenizer),
        "num_mel_bins": processor.feature_extractor.feature_size,
        "d_model": 16,
        "encoder_layers": 1,
        "decoder_layers": 1,
        "encoder_attention_heads": 2,
        "decoder_attention_heads": 2,
        "encoder_ffn_dim": 32,
        "decoder_ffn_dim": 32,
        "max_target_positions": 64,
    }
    dims.update(sizes)
    return WhisperConfig(
        **dims, pad_token_id=end, bos_token_id=end, eos_token_id=end, decoder_start_token_id=ids["<|startoftranscript|>"], begin_suppress_tokens=None, suppress_tokens=None
    )


def build_tiny_whisper(directory: Path) -> Path:
    """A 42 k-parameter WhisperForConditionalGeneration + WhisperProcessor + generation config, saved with save_pretrained."""
    import torch
    from transformers import WhisperForConditionalGeneration

    torch.manual_seed(0)
    processor = whisper_processor()
    model = WhisperForConditionalGeneration(tiny_whisper_config(processor)).eval()
    model.generation_config = whisper_generation_config(processor)
    directory.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(directory)
    processor.save_pretrained(directory)
    return directory
