"""Learned judges as GPU workers run them: dtype on purpose, batched pairs, the CUDA refusal, prefetching, warm-up.

bf16 against fp32 on the tiny models (tolerances, and why): bf16 keeps 8 bits of mantissa, a
relative error of 2^-8 = 0.4 % per rounding; through a few layers a unit embedding moves by well
under 1 %. So CLAP embeddings must keep a cosine >= 0.999 with their fp32 selves and cosine
scores (in [-1, 1]) may move by at most 0.02 (measured: 0.005); AQAScore probabilities may move
by at most 0.01 (measured: 5e-4).
"""

from __future__ import annotations

import json
import threading
import time

import numpy as np
import pytest
import soundfile as sf

from annotation.services import clip_ingest_array, condition_get_or_create, pair_get_or_create
from scoring import services
from scoring.judges import ClipAudio, ConditionInput, JudgeConfig, JudgeUnavailable, adapter_for, audiollm
from scoring.judges.device import dtype_name, length_batches, prefetch, split_on_oom
from scoring.models import Judge, ScoringRun, Verdict
from tests.factories import StudyFactory

from .devices import DEVICES

pytestmark = pytest.mark.slow


def _wav(path, seconds: float, *, freq: float = 440.0, sr: int = 22050, seed: int = 0, amp: float = 0.3) -> ClipAudio:
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * sr)) / sr
    wave = (amp * np.sin(2 * np.pi * freq * t) + 0.02 * rng.standard_normal(len(t))).astype(np.float32)
    sf.write(str(path), wave, sr)
    return ClipAudio(path=str(path), sha256=f"{path.name}-{seed}")


def answer(mq="model_a", inf="model_a", scores=(7.0, 5.0, 6.5, 4.0)) -> str:
    return json.dumps({"music_quality": mq, "instruction_following": inf, "MQ_score_a": scores[0], "MQ_score_b": scores[1], "IF_score_a": scores[2], "IF_score_b": scores[3], "reason": "r"})


# --- dtype ------------------------------------------------------------------------------------


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

    clips = [_wav(tmp_path / f"{i}.wav", 2.0 + i, freq=200 + 150 * i, seed=i) for i in range(3)]
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
    clips = [_wav(tmp_path / f"{i}.wav", 1.0, freq=300 + 100 * i, sr=16000, seed=i) for i in range(3)]
    condition = ConditionInput(prompt="happy piano song")
    scores = {}
    for dtype in ("fp32", "bf16"):
        judge = adapter_for(JudgeConfig(key=f"aqa-{dtype}", kind="aqa", weights=str(tiny_qwen_dir), options={"device": device, "dtype": dtype, "batch_size": 4}))
        scores[dtype] = np.array([[row["alignment"], row["musicality"]] for row in judge.score_clips(clips, condition)])
    assert np.abs(scores["fp32"] - scores["bf16"]).max() <= 0.01


# --- CUDA asked for where there is none ---------------------------------------------------------


@pytest.fixture
def no_cuda(monkeypatch):
    """This machine as a CPU-only one, also where the suite runs on a GPU machine."""
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


def test_a_cuda_judge_on_a_machine_without_cuda_is_refused_with_the_reason(tiny_clap_dir, no_cuda, tmp_path):
    clip = _wav(tmp_path / "a.wav", 1.0)
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


@pytest.mark.django_db
def test_a_run_of_a_cuda_judge_without_cuda_stores_failed_verdicts_saying_why(tiny_clap_dir, no_cuda):
    study = StudyFactory(name="no-gpu")
    condition, _ = condition_get_or_create(prompt="piano")
    clips = [clip_ingest_array(audio=(0.2 * np.sin(np.arange(16000) / (3 + i))).astype(np.float32), sample_rate=16000, fmt="WAV")[0] for i in range(2)]
    pair, _ = pair_get_or_create(study=study, condition=condition, clip_a=clips[0], clip_b=clips[1])
    judge = Judge.objects.create(key="clap-cuda", kind=Judge.Kind.CLAP, weights=str(tiny_clap_dir), options={"device": "cuda"}, queue=Judge.Queue.GPU)
    run = services.run_create(judge=judge, pair_ids=[pair.pk])
    from scoring.tasks import run_start

    run_start.apply(args=(run.pk,))
    verdict = Verdict.objects.get(run=run)
    assert verdict.status == Verdict.Status.FAILED
    assert verdict.details["error"].startswith("JudgeUnavailable: judge clap-cuda cannot run here: device 'cuda' was asked for")


# --- batched generation ---------------------------------------------------------------------------


class BatchedScript:
    """A backend that answers many prompts per call; the louder clip wins. Prompts whose first clip peaks above `bad_above` get prose."""

    def __init__(self, bad_above: float | None = None):
        self.calls: list[int] = []
        self.bad = bad_above

    def generate_many(self, batch, *, max_new_tokens=None):
        self.calls.append(len(batch))
        out = []
        for _, _, waves in batch:
            first, second = float(np.abs(waves[-2]).max()), float(np.abs(waves[-1]).max())
            if self.bad is not None and first > self.bad:
                out.append("I cannot decide.")
            else:
                out.append(answer("model_a", "model_a") if first > second else answer("model_b", "model_b"))
        return out


@pytest.fixture
def batched(monkeypatch, tmp_path):
    holder = {"backend": BatchedScript()}
    monkeypatch.setitem(audiollm.BACKENDS, "batched", lambda path, options: holder["backend"])
    (tmp_path / "weights").mkdir()
    return holder, str(tmp_path / "weights")


def test_compare_many_asks_both_orders_of_many_pairs_per_call_and_a_bad_row_fails_only_its_pair(batched, tmp_path):
    holder, weights = batched
    holder["backend"] = BatchedScript(bad_above=0.45)
    amps = [0.1, 0.2, 0.3, 0.5]
    clips = [_wav(tmp_path / f"{i}.wav", 0.5, sr=16000, seed=i, amp=a) for i, a in enumerate(amps)]
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
    good = [_wav(tmp_path / f"{i}.wav", 0.5, sr=16000, seed=i, amp=0.1 * (i + 1)) for i in range(2)]
    broken = tmp_path / "broken.wav"
    broken.write_bytes(b"not audio")
    judge = adapter_for(JudgeConfig(key="llm", kind="llm_pairwise", weights=weights, options={"family": "batched"}))
    outcomes = judge.compare_many([(good[0], good[1], ConditionInput(prompt="x")), (good[0], ClipAudio(path=str(broken), sha256="b"), ConditionInput(prompt="x"))])
    assert [o.status for o in outcomes] == ["ok", "failed"]
    assert "cannot decode broken.wav" in outcomes[1].details["error"]
    assert holder["backend"].calls == [2]


@pytest.mark.parametrize("device", DEVICES)
def test_batched_generation_of_the_real_model_equals_one_prompt_at_a_time(tiny_qwen_dir, no_network, tmp_path, device):
    clips = [_wav(tmp_path / f"{i}.wav", s, freq=f, sr=16000, seed=i) for i, (s, f) in enumerate(((1.0, 200), (0.4, 330), (0.7, 550)))]
    condition = ConditionInput(prompt="rock song", lyrics="hello")
    pairs = [(clips[0], clips[1], condition), (clips[2], clips[0], condition)]
    one = adapter_for(JudgeConfig(key="llm1", kind="llm_pairwise", weights=str(tiny_qwen_dir), options={"device": device, "max_new_tokens": 6, "batch_size": 1, "dtype": "fp32"}))
    many = adapter_for(JudgeConfig(key="llm4", kind="llm_pairwise", weights=str(tiny_qwen_dir), options={"device": device, "max_new_tokens": 6, "batch_size": 4, "dtype": "fp32"}))
    singles, batch = one.compare_many(pairs), many.compare_many(pairs)
    # A random tiny model cannot write the JSON; its raw texts show left padding changed nothing.
    assert [o.details["raw"] for o in batch] == [o.details["raw"] for o in singles]
    assert all(o.status == "failed" for o in batch)


@pytest.mark.django_db
def test_a_pairwise_run_sends_groups_of_pairs_to_one_job_each(batched):
    holder, weights = batched
    study = StudyFactory(name="batched")
    condition, _ = condition_get_or_create(prompt="epic")
    t = np.arange(16000) / 16000
    clips = [clip_ingest_array(audio=(a * np.sin(2 * np.pi * 300 * t)).astype(np.float32), sample_rate=16000, fmt="WAV")[0] for a in (0.1, 0.2, 0.3, 0.4)]
    pairs = [pair_get_or_create(study=study, condition=condition, clip_a=clips[i], clip_b=clips[j])[0] for i, j in ((1, 0), (2, 0), (3, 0), (2, 1), (3, 1))]
    judge = Judge.objects.create(key="llm-b", kind=Judge.Kind.LLM_PAIRWISE, weights=weights, options={"family": "batched", "pairs_per_task": 2, "batch_size": 8}, queue=Judge.Queue.GPU)
    run = services.run_create(judge=judge, pair_ids=[p.pk for p in pairs])
    from scoring.tasks import run_start

    assert run_start.apply(args=(run.pk,)).get() == {"queued": 5, "prewarm_batches": 0}
    run.refresh_from_db()
    assert (run.state, run.done, run.failed) == (ScoringRun.State.DONE, 5, 0)
    assert holder["backend"].calls == [4, 4, 2]  # jobs of 2, 2 and 1 pairs, both orders each
    for verdict in run.verdicts.select_related("pair"):
        assert verdict.musicality_choice_id == verdict.pair.clip_a_id  # A is the louder clip in every pair
    # A redelivered job finds its verdicts and asks the model nothing.
    services.pairs_score(run_id=run.pk, pair_ids=[pairs[0].pk, pairs[1].pk])
    assert holder["backend"].calls == [4, 4, 2] and run.verdicts.count() == 5


@pytest.mark.django_db
def test_gpu_batch_and_clips_per_prewarm_job_are_separate_options(tiny_clap_dir):
    study = StudyFactory(name="prewarm")
    condition, _ = condition_get_or_create(prompt="piano")
    clips = [clip_ingest_array(audio=(0.2 * np.sin(np.arange(8000) / (3 + i))).astype(np.float32), sample_rate=16000, fmt="WAV")[0] for i in range(5)]
    pair_ids = [pair_get_or_create(study=study, condition=condition, clip_a=clips[i], clip_b=clips[i + 1])[0].pk for i in range(4)]
    judge = Judge.objects.create(key="clap-p", kind=Judge.Kind.CLAP, weights=str(tiny_clap_dir), options={"prewarm_clips": 2, "batch_size": 1}, queue=Judge.Queue.GPU)
    run = services.run_create(judge=judge, pair_ids=pair_ids)
    assert services.run_dispatch(run_id=run.pk) == {"queued": 4, "prewarm_batches": 3}  # 5 clips, 2 per job
    run.refresh_from_db()
    assert run.done == 4


# --- helpers: prefetch, batching by length, out-of-memory splitting --------------------------------


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


# --- warm-up at worker start ------------------------------------------------------------------


@pytest.mark.django_db
def test_judges_warm_loads_the_model_once_and_refuses_cuda_judges_without_cuda(tiny_clap_dir, no_network, no_cuda):
    from auditorium.runtime import cached_keys

    Judge.objects.create(key="clap-warm", kind=Judge.Kind.CLAP, weights=str(tiny_clap_dir), queue=Judge.Queue.GPU)
    Judge.objects.create(key="clap-cuda", kind=Judge.Kind.CLAP, weights=str(tiny_clap_dir), options={"device": "cuda"}, queue=Judge.Queue.GPU)
    results = services.judges_warm(keys=["clap-warm", "clap-cuda", "nope"])
    assert results["clap-warm"] == "ok"
    assert results["clap-cuda"].startswith("JudgeUnavailable: judge clap-cuda cannot run here: device 'cuda' was asked for")
    assert results["nope"] == "no such judge"
    assert [k for k in cached_keys() if k[0] == "clap" and len(k) == 4] == [("clap", str(tiny_clap_dir), "cpu", "float32")]


def test_worker_start_warms_the_configured_judges_in_a_thread(monkeypatch):
    from auditorium import celery as worker

    calls = []
    monkeypatch.setattr(services, "judges_warm", lambda *, keys: calls.append(keys) or {k: "ok" for k in keys})
    monkeypatch.setenv("AUDITORIUM_WARM_JUDGES", " clap-main, aqa ,")
    thread = worker._warm_configured_judges()
    thread.join(timeout=30)
    assert calls == [["clap-main", "aqa"]]
    monkeypatch.setenv("AUDITORIUM_WARM_JUDGES", "")
    assert worker._warm_configured_judges() is None
