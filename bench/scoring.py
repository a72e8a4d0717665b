"""Scoring throughput: the learned judges against their own model's forward pass, decoding per core, the clip cache.

    .venv/bin/python bench/scoring.py [--device cuda|cpu] [--size tiny|full] [--sections clap,aqa,pairwise,decode,cache]

Sections, each measured against a baseline taken in the same run (a failing section prints its
error and the others go on):

- clap: the CLAP judge end to end (`ClapJudge.embed_audio` on 10 s clips in memory at 48 kHz:
  device log-mel, padding in page-locked memory, encoder, embeddings back) next to the encoder
  alone on ready features on the device; ratio = judge / encoder (target on a GPU: >= 50 %).
  Also the judge with the library's host extractor (the old path).
- aqa: AQAScore end to end (`AQAJudge.score_waves` on 10 s clips at 16 kHz) next to its forward
  pass alone on ready inputs (`yes_from_inputs`); ratio target on a GPU: >= 70 %. Also the
  judge at batch 1, and the plain forward that projects every position onto the vocabulary.
- pairwise: `LLMPairwiseJudge.compare_waves` (both orders per pair, greedy, --new-tokens each),
  pairs/s at one prompt per generate call against --pair-batch prompts per call; target >= 8x.
- decode: 44.1 kHz stereo FLAC files on disk decoded and resampled to 48 kHz and 16 kHz, one
  thread and a pool of all cores: clips/s per core says how many cores feed one GPU.
- cache: encoder passes and seconds of a scoring run through the services with and without the
  per-clip cache (needs Django and a database; BENCH_DATABASE_URL=sqlite for SQLite).

--size full builds the published architectures with random weights directly on the device (CLAP:
ClapConfig() = laion/clap-htsat-unfused; Qwen2-Audio-7B's config, bench/_judge_models.py), bf16
on CUDA and fp32 on the CPU. --size tiny uses the test models. --llm-layers N keeps the 7B's
widths and vocabulary with N layers (a CPU smoke test).
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _judge_models as models  # noqa: E402  (puts the repository and platform/ on sys.path)
from _setup import ROOT  # noqa: E402

SECTIONS = ("clap", "aqa", "pairwise", "decode", "cache")


def _sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def _timed(fn, device: str) -> float:
    _sync(device)
    start = time.perf_counter()
    fn()
    _sync(device)
    return time.perf_counter() - start


def _music(n: int, seconds: float, sr: int, seed: int = 0):
    """n different float32 mono clips: a few partials and noise (in memory)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * sr), dtype=np.float32) / sr
    base = sum((0.2 / k) * np.sin(2 * np.pi * 110 * k * t) for k in range(1, 6)).astype(np.float32)
    return [np.roll(base, int(rng.integers(len(t)))) * float(rng.uniform(0.5, 1.0)) + 0.01 * rng.standard_normal(len(t)).astype(np.float32) for _ in range(n)]


def _dtype_option(device: str) -> str:
    return "bf16" if device.startswith("cuda") else "fp32"


# --- CLAP --------------------------------------------------------------------------------------


def bench_clap(args) -> None:
    import torch

    from auditorium.runtime import cached_model
    from scoring.judges import JudgeConfig, adapter_for

    device, dtype = args.device, _dtype_option(args.device)
    model, processor, weights = models.clap(device, getattr(torch, {"bf16": "bfloat16", "fp32": "float32"}[dtype]), size=args.size)
    n, batch = args.clap_clips, args.clap_batch
    print(f"CLAP ({args.size}: {models.params(model):.1f} M parameters, {dtype}, {device}), {n} ten-second 48 kHz clips in memory, batch {batch}")
    judge = adapter_for(JudgeConfig(key="clap-bench", kind="clap", weights=weights, options={"device": device, "dtype": dtype, "batch_size": batch}))
    cached_model(judge.model_key(), lambda: (model, processor))
    mel = judge._model()[3]
    waves = _music(n, 10.0, 48000)

    feats = mel.features(waves[:batch]).to(model.dtype)
    is_longer = torch.zeros((batch, 1), dtype=torch.bool, device=device)
    rounds = max(1, n // batch)

    def encoder():
        with torch.inference_mode():
            for _ in range(rounds):
                model.get_audio_features(input_features=feats, is_longer=is_longer)

    encoder()  # warm-up: kernels, allocator, autotuning
    encoder_rate = rounds * batch / _timed(encoder, device)
    judge.embed_audio(waves[:batch])
    judge_rate = n / _timed(lambda: judge.embed_audio(waves), device)
    host = adapter_for(JudgeConfig(key="clap-host", kind="clap", weights=weights, options={"device": device, "dtype": dtype, "batch_size": batch, "device_features": False}))
    host_n = min(n, args.host_clips)
    host.embed_audio(waves[:2])
    host_rate = host_n / _timed(lambda: host.embed_audio(waves[:host_n]), device)
    print(f"  encoder only (ready features on the device)  {encoder_rate:9.1f} clips/s")
    print(f"  judge end to end (device log-mel)             {judge_rate:9.1f} clips/s   judge / encoder = {100 * judge_rate / encoder_rate:5.1f} %  (target >= 50 % on a GPU)")
    print(f"  judge with the host extractor (old path)      {host_rate:9.1f} clips/s   device-mel judge / host-extractor judge = {judge_rate / host_rate:.1f}x")


# --- audio LLM -----------------------------------------------------------------------------------


_LLM = {}


def _llm(args):
    """The bench's random Qwen2-Audio, built once and registered as backend family "bench"."""
    if "backend" not in _LLM:
        import torch

        from scoring.judges import audiollm
        from scoring.judges.llm_backend import TransformersAudioLLM

        dtype = torch.bfloat16 if args.device.startswith("cuda") else torch.float32
        start = time.perf_counter()
        model, processor, weights = models.qwen2_audio(args.device, dtype, size=args.size, layers=args.llm_layers)
        backend = TransformersAudioLLM.from_parts(model, processor, family="qwen2_audio", device=args.device, max_new_tokens=args.new_tokens)
        audiollm.BACKENDS["bench"] = lambda path, options: backend
        layers = f", {args.llm_layers} layers" if args.llm_layers else ""
        print(f"Qwen2-Audio ({args.size}{layers}: {models.params(model):.0f} M parameters, {str(dtype).split('.')[-1]}, {args.device}) built in {time.perf_counter() - start:.1f} s")
        _LLM.update(backend=backend, weights=weights)
    return _LLM["backend"], _LLM["weights"]


def bench_aqa(args) -> None:
    import torch

    from scoring.judges import ConditionInput, JudgeConfig, adapter_for, prompts

    backend, weights = _llm(args)
    device, n, batch = args.device, args.aqa_clips, args.aqa_batch
    waves = _music(n, 10.0, 16000, seed=1)
    condition = ConditionInput(prompt="calm solo piano piece, slow tempo")
    judge = adapter_for(JudgeConfig(key="aqa-bench", kind="aqa", weights=weights, options={"family": "bench", "batch_size": batch}))
    print(f"AQAScore: {n} ten-second 16 kHz clips in memory, 2 questions each = {2 * n} forward items, batch {batch}")
    question = prompts.AQA_QUESTIONS["default"]["musicality"]
    requests = [(prompts.AQA_SYSTEM, [{"type": "audio", "slot": "clip"}, {"type": "text", "text": question}], [w]) for w in (waves * batch)[:batch]]
    inputs = backend._inputs(requests)
    rounds = max(1, math.ceil(2 * n / batch))

    def forward():
        for _ in range(rounds):
            backend.yes_from_inputs(inputs)

    backend.yes_from_inputs(inputs)
    forward_rate = rounds * batch / _timed(forward, device)
    judge.score_waves(waves[: max(1, batch // 2)], condition)
    judge_rate = 2 * n / _timed(lambda: judge.score_waves(waves, condition), device)
    one = adapter_for(JudgeConfig(key="aqa-bench-1", kind="aqa", weights=weights, options={"family": "bench", "batch_size": 1}))
    one_n = min(n, 4)
    one_rate = 2 * one_n / _timed(lambda: one.score_waves(waves[:one_n], condition), device)
    print(f"  forward only (ready inputs on the device)     {forward_rate:9.2f} items/s")
    print(f"  judge end to end                              {judge_rate:9.2f} items/s   judge / forward = {100 * judge_rate / forward_rate:5.1f} %  (target >= 70 % on a GPU)")
    print(f"  judge at batch 1                              {one_rate:9.2f} items/s")
    try:
        with torch.inference_mode():
            full = rounds * batch / _timed(lambda: [backend.model(**inputs).logits[:, -1, :] for _ in range(rounds)], device)
        print(f"  plain forward, logits at every position       {full:9.2f} items/s   (the judge projects only the last position)")
    except torch.cuda.OutOfMemoryError:
        print("  plain forward, logits at every position: out of GPU memory at this batch")


def bench_pairwise(args) -> None:
    from scoring.judges import ConditionInput, JudgeConfig, adapter_for

    _, weights = _llm(args)
    device = args.device
    waves = _music(2 * args.pairs, 10.0, 16000, seed=2)
    condition = ConditionInput(prompt="upbeat pop song with female vocals", lyrics="[Verse]\nwe run all night under city lights")
    items = [(waves[2 * i], waves[2 * i + 1], None, condition) for i in range(args.pairs)]
    print(f"Pairwise judge: 10 s clips at 16 kHz, both orders per pair, {args.new_tokens} new tokens per answer")
    single = adapter_for(JudgeConfig(key="pair-bench-1", kind="llm_pairwise", weights=weights, options={"family": "bench", "batch_size": 1}))
    batched = adapter_for(JudgeConfig(key="pair-bench-n", kind="llm_pairwise", weights=weights, options={"family": "bench", "batch_size": args.pair_batch}))
    single.compare_waves(items[:1])
    one_n = min(args.pairs, args.single_pairs)
    one_rate = one_n / _timed(lambda: single.compare_waves(items[:one_n]), device)
    batched.compare_waves(items[: max(1, args.pair_batch // 2)])
    many_rate = args.pairs / _timed(lambda: batched.compare_waves(items), device)
    print(f"  one prompt per generate call ({one_n} pairs)        {one_rate:8.3f} pairs/s")
    print(f"  {args.pair_batch} prompts per generate call ({args.pairs} pairs)   {many_rate:8.3f} pairs/s   batched / one = {many_rate / one_rate:5.1f}x  (target >= 8x on a GPU)")
    if device.startswith("cuda"):
        import torch

        print(f"  peak GPU memory {torch.cuda.max_memory_allocated() / 2**30:.1f} GiB")


# --- decoding -------------------------------------------------------------------------------------


def bench_decode(args) -> None:
    import numpy as np
    import soundfile as sf

    from scoring.judges.base import load_audio
    from scoring.judges.device import prefetch_audio

    folder = Path(tempfile.mkdtemp(prefix="bench-decode-"))
    n = args.decode_clips
    paths = []
    for i, wave in enumerate(_music(n, 10.0, 44100, seed=3)):
        path = folder / f"{i}.flac"
        sf.write(str(path), np.stack([wave, np.roll(wave, 441)], axis=1), 44100, format="FLAC")
        paths.append(str(path))
    cores = os.cpu_count() or 1
    print(f"Decode + resample: {n} ten-second 44.1 kHz stereo FLAC files on disk, {cores} cores")
    for rate in (48000, 16000):
        load_audio(paths[0], sample_rate=rate)  # warm-up: filter design, page cache
        one = n / _timed(lambda: [load_audio(p, sample_rate=rate) for p in paths], "cpu")
        pool = n / _timed(lambda: list(prefetch_audio(paths, sample_rate=rate, workers=cores)), "cpu")
        print(f"  -> {rate // 1000} kHz: one thread {one:7.1f} clips/s | {cores} threads {pool:7.1f} clips/s = {pool / cores:6.1f} clips/s per core (scaling {pool / one:4.1f}x)")


# --- clip cache (through the services, needs Django) ---------------------------------------------


def bench_cache(args) -> None:
    try:
        import django  # noqa: F401
    except ImportError:
        print("cache: skipped (Django is not installed here)")
        return
    from _setup import django_setup

    media = tempfile.mkdtemp(prefix="bench-scoring-media-")
    os.environ["MEDIA_ROOT"] = media
    os.environ["CELERY_TASK_ALWAYS_EAGER"] = "true"
    os.environ.pop("REDIS_URL", None)
    os.environ["HF_HUB_OFFLINE"] = "1"
    django_setup("bench_scoring")
    sys.path.insert(0, str(ROOT))

    import numpy as np

    from annotation.models import Study
    from annotation.services import clip_ingest_array, condition_get_or_create, pair_get_or_create
    from scoring import services
    from scoring.judges.clap import ClapJudge
    from scoring.judges.signal import SignalJudge
    from scoring.models import Judge
    from scoring.tasks import run_start

    rng = np.random.default_rng(0)
    sr = 22050
    t = np.arange(int(args.seconds * sr)) / sr
    clips = []
    for i in range(args.clips):
        wave = 0.25 * np.sin(2 * np.pi * (110 + 17 * i) * t) + 0.01 * rng.standard_normal(len(t))
        clips.append(clip_ingest_array(audio=wave.astype(np.float32), sample_rate=sr, fmt="WAV")[0])
    study = Study.objects.create(name="bench-scoring")
    pair_ids = []
    for c in range(args.conditions):
        condition, _ = condition_get_or_create(prompt=f"calm piano piece number {c}")
        for a, b in itertools.combinations(clips, 2):
            pair_ids.append(pair_get_or_create(study=study, condition=condition, clip_a=a, clip_b=b, overlap=1)[0].pk)
    n, m = len(pair_ids), len(clips)
    print(f"Clip cache: pairs N={n} over clips M={m} ({args.conditions} conditions, {args.seconds:g} s each)")
    judges = [("signal", SignalJudge, {"kind": Judge.Kind.SIGNAL})]
    if not args.skip_clap:
        from tests.scoring.tiny_models import build_tiny_clap

        clap_dir = build_tiny_clap(Path(tempfile.mkdtemp(prefix="bench-clap-")))
        judges.append(("clap-tiny", ClapJudge, {"kind": Judge.Kind.CLAP, "weights": str(clap_dir)}))

    def run_once(key: str, adapter_cls, spec: dict, cache: bool) -> tuple[int, float]:
        judge = Judge.objects.create(key=f"{key}-{'cache' if cache else 'nocache'}", options={"cache": cache, "device": "cpu"}, **spec)
        before = adapter_cls.encode_calls
        start = time.perf_counter()
        run = services.run_create(judge=judge, pair_ids=pair_ids)
        run_start.apply(args=(run.pk,))
        elapsed = time.perf_counter() - start
        run.refresh_from_db()
        assert run.done == n, (run.done, run.failed)
        return adapter_cls.encode_calls - before, elapsed

    for key, cls, spec in judges:
        base_passes, base_s = run_once(key, cls, spec, cache=False)
        cached_passes, cached_s = run_once(key, cls, spec, cache=True)
        print(
            f"  {key:<10} no cache: {base_passes:5d} encoder passes {base_s:7.2f} s | cache: {cached_passes:5d} passes {cached_s:7.2f} s | "
            f"passes ratio {base_passes / max(cached_passes, 1):.2f}x (2N/M = {2 * n / m:.2f}), time ratio {base_s / cached_s:.2f}x"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", choices=("cuda", "cpu"), default=None, help="default: cuda when present")
    parser.add_argument("--size", choices=("tiny", "full"), default=None, help="default: full on cuda, tiny on cpu")
    parser.add_argument("--sections", default=",".join(SECTIONS))
    parser.add_argument("--clap-clips", type=int, default=None)
    parser.add_argument("--clap-batch", type=int, default=64)
    parser.add_argument("--host-clips", type=int, default=None, help="clips through the host-extractor CLAP judge")
    parser.add_argument("--aqa-clips", type=int, default=None)
    parser.add_argument("--aqa-batch", type=int, default=None)
    parser.add_argument("--pairs", type=int, default=None, help="pairs through the batched pairwise judge")
    parser.add_argument("--single-pairs", type=int, default=2, help="pairs through the one-prompt-per-call judge")
    parser.add_argument("--pair-batch", type=int, default=32, help="prompts per generate call (two per pair)")
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--llm-layers", type=int, default=None)
    parser.add_argument("--decode-clips", type=int, default=None)
    parser.add_argument("--clips", type=int, default=12, help="cache section: clips")
    parser.add_argument("--seconds", type=float, default=4.0, help="cache section: clip length")
    parser.add_argument("--conditions", type=int, default=2, help="cache section: conditions")
    parser.add_argument("--skip-clap", action="store_true", help="cache section: signal judge only")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    import torch

    args.device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: no CUDA device is visible here")
    gpu = args.device == "cuda"
    args.size = args.size or ("full" if gpu else "tiny")
    args.clap_clips = args.clap_clips or (1024 if gpu else 64)
    args.host_clips = args.host_clips or (64 if gpu else 16)
    args.aqa_clips = args.aqa_clips or (64 if gpu else 8)
    args.aqa_batch = args.aqa_batch or (32 if gpu else 8)
    args.pairs = args.pairs or (32 if gpu else 8)
    args.decode_clips = args.decode_clips or (64 if gpu else 16)
    where = torch.cuda.get_device_name(0) if gpu else f"CPU ({os.cpu_count()} cores)"
    print(f"device: {where} | torch {torch.__version__} | size {args.size}")
    for name in [s.strip() for s in args.sections.split(",") if s.strip()]:
        if name not in SECTIONS:
            print(f"{name}: unknown section (use {', '.join(SECTIONS)})")
            continue
        try:
            globals()[f"bench_{name}"](args)
        except Exception:  # one broken section must not hide the others' figures
            print(f"{name}: FAILED")
            traceback.print_exc(file=sys.stdout)
        sys.stdout.flush()


if __name__ == "__main__":
    main()
