"""Qwen3-Omni (family qwen3_omni of the audio-LLM judges): what runs here and what blocks the rest.

The thinker loads through transformers' own Qwen3OmniMoeThinkerForConditionalGeneration; its processor,
Qwen3OmniMoeProcessor, requires image and video processors that need torchvision and Pillow, which this stack lacks
(no torchvision build for the pinned CPU torch), so the judge reports itself unavailable with that reason.
"""

from __future__ import annotations

import importlib.util

import pytest

from scoring.judges import JudgeConfig, adapter_for

pytestmark = pytest.mark.slow


def test_the_tiny_thinker_loads_offline_through_the_library_class(tmp_path, no_network):
    import torch
    from transformers import Qwen2Tokenizer, Qwen3OmniMoeThinkerForConditionalGeneration

    from .tiny_models import _train_bpe
    from .tiny_qwen3_omni import NAMED, SPECIALS, tiny_qwen3_omni_config

    vocab, merges = _train_bpe(SPECIALS)
    tokenizer = Qwen2Tokenizer(vocab=vocab, merges=merges, unk_token=None, bos_token=None, eos_token="<|im_end|>", pad_token="<|endoftext|>", extra_special_tokens=NAMED)
    assert tokenizer.audio_token == "<|audio_pad|>"

    class Tokens:
        pass

    holder = Tokens()
    holder.tokenizer = tokenizer
    torch.manual_seed(0)
    model = Qwen3OmniMoeThinkerForConditionalGeneration(tiny_qwen3_omni_config(holder)).eval()
    model.save_pretrained(tmp_path)
    loaded = Qwen3OmniMoeThinkerForConditionalGeneration.from_pretrained(tmp_path).eval()
    ids = torch.tensor([tokenizer.encode("does this audio match")])
    with torch.inference_mode():
        logits = loaded(input_ids=ids).logits
    assert logits.shape == (1, ids.shape[1], len(tokenizer))
    assert torch.equal(logits, model(input_ids=ids).logits)


@pytest.mark.skipif(importlib.util.find_spec("torchvision") is not None and importlib.util.find_spec("PIL") is not None, reason="torchvision and Pillow are installed")
def test_without_torchvision_the_judge_says_what_blocks_it(tmp_path):
    for kind in ("llm_pairwise", "aqa", "rubric"):
        state = adapter_for(JudgeConfig(key="q3", kind=kind, weights=str(tmp_path), options={"family": "qwen3_omni"})).availability()
        assert not state.available
        assert "torchvision" in state.reason and "Qwen3OmniMoeProcessor" in state.reason
