"""Learned judges as GPU workers run them: dtype on purpose, batched pairs, the CUDA refusal, prefetching.

No database here, so this module also runs on a GPU machine without the web stack:
`pytest tests/scoring/test_device_features.py tests/scoring/test_judges_on_device.py -m gpu`.

bf16 against fp32 on the tiny models (tolerances, and why): bf16 keeps 8 bits of mantissa, a
relative error of 2^-8 = 0.4 % per rounding; through a few layers a unit embedding moves by well
under 1 %. So CLAP embeddings must keep a cosine >= 0.999 with their fp32 selves and cosine
scores (in [-1, 1]) may move by at most 0.02 (measured: 0.005); AQAScore probabilities may move
by at most 0.01 (measured: 5e-4).
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
import soundfile as sf

from scoring.judges import ClipAudio, ConditionInput, JudgeConfig, JudgeUnavailable, adapter_for
from scoring.judges.device import dtype_name, length_batches, prefetch, split_on_oom

from .devices import DEVICES
from .scripted import BatchedScript

pytestmark = pytest.mark.slow


def wav(path, seconds: float, *, freq: float = 440.0, sr: int = 22050, seed: int = 0, amp: float = 0.3) -> ClipAudio:
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * sr)) / sr
    wave = (amp * np.sin(2 * np.pi * freq * t) + 0.02 * rng.standard_normal(len(t))).astype(np.float32)
    sf.write(str(path), wave, sr)
    return ClipAudio(path=str(path), sha256=f"{path.name}-{seed}")


def test_dtype_is_bf16_on_cuda_fp32_on_cpu_unless_the_judge_says_otherwise():
    assert dtype_name(None, "cuda") == "bfloat16"
    assert dtype_name("auto", "cuda:1") == "bfloat16"
    assert dtype_name(None, "cpu") == "float32"
    assert dtype_name("fp16", "cuda") == "float16"
    assert dtype_name("float32", "cuda") == "float32"
    assert dtype_name("bf16", "cpu") == "bfloat16"
    with pytest.raises(ValueError, match="dtype 'int8' is not one of"):
        dtype_name("int8", "cpu")


@pytest.mark.parametrize("device", DEVICES)
def test_clap_bf16_and_fp32_agree_and_load_in_the_asked_precision(tiny_clap_dir, no_network, tmp_path, device):
    import torch

    clips = [wav(tmp_path / f"{i}.wav", 2.0 + i, freq=200 + 150 * i, seed=i) for i in range(3)]
    condition = ConditionInput(prompt="calm piano")
    runs = {}
    for dtype in ("fp32", "bf16"):
        judge = adapter_for(JudgeConfig(key=f"clap-{dtype}", kind="clap", weights=str(tiny_clap_dir), options={"device": device, "dtype": dtype}))
        model = judge._model()[0]
        assert next(model.parameters()).dtype == {"fp32": torch.float32, "bf16": torch.bfloat16}[dtype]
        runs[dtype] = (np.asarray(judge.audio_embeddings(clips)), [r["alignment"] for r in judge.score_clips(clips, condition)])
        assert judge.cache_version().endswith({"fp32": ".float32", "bf16": ".bfloat16"}[dtype])
    cosines = (runs["fp32"][0] * runs["bf16"][0]).sum(axis=1)
    assert cosines.min() >= 0.999
    assert np.abs(np.subtract(runs["fp32"][1], runs["bf16"][1])).max() <= 0.02


@pytest.mark.parametrize("device", DEVICES)
def test_aqa_bf16_and_fp32_agree(tiny_qwen_dir, no_network, tmp_path, device):
    clips = [wav(tmp_path / f"{i}.wav", 1.0, freq=300 + 100 * i, sr=16000, seed=i) for i in range(3)]
    condition = ConditionInput(prompt="happy piano song")
    scores = {}
    for dtype in ("fp32", "bf16"):
        judge = adapter_for(JudgeConfig(key=f"aqa-{dtype}", kind="aqa", weights=str(tiny_qwen_dir), options={"device": device, "dtype": dtype, "batch_size": 4}))
        scores[dtype] = np.array([[row["alignment"], row["musicality"]] for row in judge.score_clips(clips, condition)])
    assert np.abs(scores["fp32"] - scores["bf16"]).max() <= 0.01


def test_a_cuda_judge_on_a_machine_without_cuda_is_refused_with_the_reason(tiny_clap_dir, no_cuda, tmp_path):
    clip = wav(tmp_path / "a.wav", 1.0)
    judge = adapter_for(JudgeConfig(key="clap-gpu", kind="clap", weights=str(tiny_clap_dir), options={"device": "cuda"}))
    with pytest.raises(JudgeUnavailable, match=r"judge clap-gpu cannot run here: device 'cuda' was asked for, but .*(no CUDA support|no usable GPU|hides every GPU)"):
        judge.score_clips([clip], ConditionInput(prompt="x"))
    # requires_cuda refuses the silent fallback to the CPU that a missing `device` would give.
    strict = adapter_for(JudgeConfig(key="aqa-gpu", kind="aqa", weights=str(tiny_clap_dir), options={"requires_cuda": True}))
    with pytest.raises(JudgeUnavailable, match="judge aqa-gpu cannot run here"):
        strict.backend()


def test_hidden_gpus_are_named_as_the_reason(monkeypatch, no_cuda):
    import torch

    from auditorium.runtime import cuda_problem

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    monkeypatch.setattr(torch.version, "cuda", "12.8")
    assert cuda_problem() == "CUDA_VISIBLE_DEVICES='' hides every GPU from this process"
    monkeypatch.setattr(torch.version, "cuda", None)
    assert "has no CUDA support" in cuda_problem()


def test_compare_many_asks_both_orders_of_many_pairs_per_call_and_a_bad_row_fails_only_its_pair(batched, tmp_path):
    holder, weights = batched
    holder["backend"] = BatchedScript(bad_above=0.45)
    amps = [0.1, 0.2, 0.3, 0.5]
    clips = [wav(tmp_path / f"{i}.wav", 0.5, sr=16000, seed=i, amp=a) for i, a in enumerate(amps)]
    judge = adapter_for(JudgeConfig(key="llm", kind="llm_pairwise", weights=weights, options={"family": "batched", "batch_size": 16}))
    condition = ConditionInput(prompt="rock")
    pairs = [(clips[1], clips[0], condition), (clips[3], clips[2], condition), (clips[0], clips[2], condition)]
    outcomes = judge.compare_many(pairs)
    assert holder["backend"].calls == [6]  # three pairs, both orders, one generate call
    assert [o.status for o in outcomes] == ["ok", "failed", "ok"]
    assert outcomes[0].labels == {"alignment": "model_a", "musicality": "model_a"}  # the louder clip A, in both orders
    assert outcomes[2].labels == {"alignment": "model_b", "musicality": "model_b"}
    assert outcomes[1].details["raw"]["ab"] == "I cannot decide." and "no JSON object" in outcomes[1].details["error"]
    # batch_size splits the rows across calls without changing any answer (same weights: the loaded backend is reused).
    holder["backend"].calls.clear()
    small = adapter_for(JudgeConfig(key="llm2", kind="llm_pairwise", weights=weights, options={"family": "batched", "batch_size": 4}))
    again = small.compare_many(pairs)
    assert holder["backend"].calls == [4, 2]
    assert [(o.status, o.labels) for o in again] == [(o.status, o.labels) for o in outcomes]


def test_compare_many_fails_only_the_pairs_whose_audio_cannot_be_decoded(batched, tmp_path):
    holder, weights = batched
    good = [wav(tmp_path / f"{i}.wav", 0.5, sr=16000, seed=i, amp=0.1 * (i + 1)) for i in range(2)]
    broken = tmp_path / "broken.wav"
    broken.write_bytes(b"not audio")
    judge = adapter_for(JudgeConfig(key="llm", kind="llm_pairwise", weights=weights, options={"family": "batched"}))
    outcomes = judge.compare_many([(good[0], good[1], ConditionInput(prompt="x")), (good[0], ClipAudio(path=str(broken), sha256="b"), ConditionInput(prompt="x"))])
    assert [o.status for o in outcomes] == ["ok", "failed"]
    assert "cannot decode broken.wav" in outcomes[1].details["error"]
    assert holder["backend"].calls == [2]


@pytest.mark.parametrize("device", DEVICES)
def test_batched_generation_of_the_real_model_equals_one_prompt_at_a_time(tiny_qwen_dir, no_network, tmp_path, device):
    clips = [wav(tmp_path / f"{i}.wav", s, freq=f, sr=16000, seed=i) for i, (s, f) in enumerate(((1.0, 200), (0.4, 330), (0.7, 550)))]
    condition = ConditionInput(prompt="rock song", lyrics="hello")
    pairs = [(clips[0], clips[1], condition), (clips[2], clips[0], condition)]
    one = adapter_for(JudgeConfig(key="llm1", kind="llm_pairwise", weights=str(tiny_qwen_dir), options={"device": device, "max_new_tokens": 6, "batch_size": 1, "dtype": "fp32"}))
    many = adapter_for(JudgeConfig(key="llm4", kind="llm_pairwise", weights=str(tiny_qwen_dir), options={"device": device, "max_new_tokens": 6, "batch_size": 4, "dtype": "fp32"}))
    singles, batch = one.compare_many(pairs), many.compare_many(pairs)
    # A random tiny model cannot write the JSON; its raw texts show left padding changed nothing.
    assert [o.details["raw"] for o in batch] == [o.details["raw"] for o in singles]
    assert all(o.status == "failed" for o in batch)


@pytest.mark.engine
def test_prefetch_keeps_order_stays_bounded_and_raises_at_the_failing_item():
    running, peak, lock = [0], [0], threading.Lock()

    def work(i):
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.01 * (i % 3))
        with lock:
            running[0] -= 1
        if i == 7:
            raise ValueError("item 7 is broken")
        return i * i

    got = []
    with pytest.raises(ValueError, match="item 7 is broken"):
        for value in prefetch(range(20), work, workers=3, depth=4):
            got.append(value)
    assert got == [i * i for i in range(7)]
    assert peak[0] <= 3
    assert list(prefetch(range(5), lambda i: -i, workers=1)) == [0, -1, -2, -3, -4]


def test_length_batches_group_similar_lengths():
    assert length_batches([50, 10, 40, 20, 30], 2) == [[1, 3], [4, 2], [0]]


def test_split_on_oom_halves_the_batch_until_it_fits():
    seen = []

    def run(batch):
        seen.append(len(batch))
        if len(batch) > 2:
            raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return [x * 10 for x in batch]

    assert split_on_oom(run, [1, 2, 3, 4, 5]) == [10, 20, 30, 40, 50]
    assert seen == [5, 2, 3, 1, 2]
    with pytest.raises(RuntimeError, match="shape mismatch"):
        split_on_oom(lambda b: (_ for _ in ()).throw(RuntimeError("shape mismatch")), [1, 2])
