"""Scoring throughput: the learned judges against their own model's forward pass, decoding per core, the clip cache.

    .venv/bin/python bench/scoring.py [--device cuda|cpu] [--size tiny|full] [--sections clap,aqa,pairwise,decode,files,cmi,lyrics,cache] [--cores N]

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
- decode: ten-second 44.1 kHz stereo FLAC and MP3 files on disk decoded and resampled to 48 kHz
  and 16 kHz: the old path (numpy mean, scipy resample_poly) against `load_audio` (the same filter
  as one strided conv1d, tests/scoring/test_judges_audio.py), one thread each, then clips/s per
  core over all cores (--cores) in threads (old and new) and in worker processes (new). Target:
  >= 50 clips/s per core for FLAC -> 48 kHz. Says how many cores feed one GPU.
- files: the CLAP judge from FLAC and MP3 files on disk through its own loading path
  (`audio_embeddings` on ClipAudio paths: decoding ahead in threads or processes, device log-mel,
  encoder), next to the encoder alone on ready features: the share of the encoder a run from files
  keeps (target with 16 cores on a GPU: >= 20 %).
- cmi: MuQ-MuLan, SongEval, CMI-RM and audiobox-aesthetics end to end (`score_clips` on 10 s FLAC
  files) against their backbone alone on ready waves on the device (MuQ; audiobox's WavLM).
  --size full: the published configurations with random weights (bench/_judge_models.py
  `cmi_family`), each judge in its GPU precision; --size tiny: the test models.
- lyrics: the lyrics judge end to end (`LyricsJudge.score_clips` on 30 s FLAC files: decoding, resampling to
  16 kHz, the processor's log-mel, Whisper's generate, jiwer) against generate alone on ready features on the
  device, both greedy with --lyrics-tokens new tokens per window (the end token suppressed, so random weights
  decode as long as trained ones on a sung verse). --size full: Whisper large-v3's configuration.
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

# Appended, not put first: decoding worker processes re-run this file, and there bench/ before the
# repository would make `scoring` this script instead of the package.
if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.append(str(Path(__file__).resolve().parent))
import _judge_models as models  # noqa: E402  (puts the repository and platform/ on sys.path)
from _setup import ROOT  # noqa: E402

SECTIONS = ("clap", "aqa", "pairwise", "decode", "files", "cmi", "lyrics", "cache")


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

    from scoring.judges import JudgeConfig, adapter_for
    from scoring.judges.runtime import cached_model

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


# --- decoding ---------------------------------------------------------------------------------------


def _write_files(n: int, fmt: str, seed: int = 3) -> list[str]:
    """n different ten-second 44.1 kHz stereo files on disk (FLAC or MP3)."""
    import numpy as np
    import soundfile as sf

    folder = Path(tempfile.mkdtemp(prefix=f"bench-{fmt.lower()}-"))
    paths = []
    for i, wave in enumerate(_music(n, 10.0, 44100, seed=seed)):
        path = folder / f"{i}.{fmt.lower()}"
        sf.write(str(path), np.stack([wave, np.roll(wave, 441)], axis=1).clip(-1, 1), 44100, format=fmt)
        paths.append(str(path))
    return paths


def _old_load(path: str, sample_rate: int):
    """The loading path before this bench's changes: numpy's mean over channels, scipy's resample_poly."""
    import numpy as np
    import soundfile as sf
    from scipy.signal import resample_poly

    data, sr = sf.read(path, dtype="float32", always_2d=True)
    data = data.mean(axis=1)
    g = np.gcd(int(sr), int(sample_rate))
    return resample_poly(data, sample_rate // g, sr // g).astype(np.float32)


def _decode_rates(paths: list[str], rate: int, cores: int) -> dict:
    """Clips/s of the old and the new path, one thread, and of the new path over all cores in threads and in processes."""
    from functools import partial

    from scoring.judges.base import load_audio
    from scoring.judges.device import prefetch, process_pool

    n = len(paths)
    _old_load(paths[0], rate), load_audio(paths[0], sample_rate=rate)  # warm-up: filter design, page cache
    process_pool(cores)  # started (and its workers' imports done) before timing
    list(prefetch(paths[:cores], partial(load_audio, sample_rate=rate), workers=cores, processes=True))
    def cpu_rate(load) -> float:
        # Clips per CPU-second of this process: what one core gives when it is not shared, which the
        # wall clock cannot show on a loaded machine.
        start = time.process_time()
        for path in paths:
            load(path, sample_rate=rate)
        return n / (time.process_time() - start)

    return {
        "old cpu": cpu_rate(_old_load),
        "new cpu": cpu_rate(load_audio),
        "old": n / _timed(lambda: [_old_load(p, rate) for p in paths], "cpu"),
        "new": n / _timed(lambda: [load_audio(p, sample_rate=rate) for p in paths], "cpu"),
        "old threads": n / _timed(lambda: list(prefetch(paths, partial(_old_load, sample_rate=rate), workers=cores)), "cpu"),
        "threads": n / _timed(lambda: list(prefetch(paths, partial(load_audio, sample_rate=rate), workers=cores)), "cpu"),
        "processes": n / _timed(lambda: list(prefetch(paths, partial(load_audio, sample_rate=rate), workers=cores, processes=True)), "cpu"),
    }


def bench_decode(args) -> None:
    import torch

    cores = args.cores or os.cpu_count() or 1
    n = args.decode_clips
    torch.set_num_threads(1)  # one core per decoder, in this process as in the worker processes
    print(f"Decode + resample: {n} ten-second 44.1 kHz stereo files on disk, {cores} cores (os.cpu_count() = {os.cpu_count()}, load average {os.getloadavg()[0]:.1f})")
    print("  old = float decode + numpy mean + scipy resample_poly (before); new = load_audio (16-bit decode as integers, channel sum, the same filter as one strided conv1d)")
    print("  per CPU-second = clips per second of one unshared core (process time); the wall-clock figures share the cores with whatever else runs")
    for fmt in ("FLAC", "MP3"):
        paths = _write_files(n, fmt)
        for rate in (48000, 16000):
            r = _decode_rates(paths, rate, cores)
            print(
                f"  {fmt:4} -> {rate // 1000} kHz  per CPU-second: old {r['old cpu']:6.1f} new {r['new cpu']:6.1f} ({r['new cpu'] / r['old cpu']:.2f}x)"
                f" | one thread: old {r['old']:6.1f} new {r['new']:6.1f} clips/s ({r['new'] / r['old']:.2f}x)"
                f" | {cores} cores, clips/s per core: old threads {r['old threads'] / cores:6.1f}, new threads {r['threads'] / cores:6.1f},"
                f" new processes {r['processes'] / cores:6.1f}  (target >= 50 for FLAC -> 48 kHz)"
            )


def bench_files(args) -> None:
    """CLAP from files on disk through the judge's own loading path (ClipAudio paths -> audio_embeddings),
    next to the encoder alone on ready features: how much of the encoder decoding leaves."""
    import torch

    from scoring.judges import ClipAudio, JudgeConfig, adapter_for
    from scoring.judges.runtime import cached_model

    device, dtype = args.device, _dtype_option(args.device)
    cores = args.cores or os.cpu_count() or 1
    model, processor, weights = models.clap(device, getattr(torch, {"bf16": "bfloat16", "fp32": "float32"}[dtype]), size=args.size)
    n, batch = args.files_clips, args.clap_batch
    base = {"device": device, "dtype": dtype, "batch_size": batch, "cache": False, "decode_workers": cores}
    threads = adapter_for(JudgeConfig(key="files-threads", kind="clap", weights=weights, options=base))
    procs = adapter_for(JudgeConfig(key="files-processes", kind="clap", weights=weights, options={**base, "decode_processes": True}))
    cached_model(threads.model_key(), lambda: (model, processor))
    mel = threads._model()[3]
    print(f"Files: CLAP ({args.size}: {models.params(model):.1f} M parameters, {dtype}, {device}), {n} ten-second 44.1 kHz stereo files per format, batch {batch}, {cores} decoding workers")
    feats = mel.features(_music(batch, 10.0, 48000)).to(model.dtype)
    is_longer = torch.zeros((batch, 1), dtype=torch.bool, device=device)
    rounds = max(1, n // batch)

    def encoder():
        with torch.inference_mode():
            for _ in range(rounds):
                model.get_audio_features(input_features=feats, is_longer=is_longer)

    encoder()
    encoder_rate = rounds * batch / _timed(encoder, device)
    print(f"  encoder only (ready features on the device)   {encoder_rate:9.1f} clips/s")
    for fmt in ("FLAC", "MP3"):
        clips = [ClipAudio(path=p, sha256=p) for p in _write_files(n, fmt, seed=5)]
        for judge, how in ((threads, "threads"), (procs, "processes")):
            judge.audio_embeddings(clips[: min(n, 2 * cores)])  # warm-up (and the process pool's start)
            rate = n / _timed(lambda: judge.audio_embeddings(clips), device)
            print(f"  {fmt:4} files, decoding in {how:9}         {rate:9.1f} clips/s = {rate / cores:6.1f} per core   judge / encoder = {100 * rate / encoder_rate:5.1f} %")


# --- The CMI family ------------------------------------------------------------------------------------


def bench_cmi(args) -> None:
    """MuQ-MuLan, SongEval, CMI-RM and audiobox-aesthetics end to end (score_clips on 10 s FLAC files:
    decoding, resampling, chunking, the network, the head) against their backbone alone on ready
    waves on the device (MuQ for the first three, the WavLM encoder for audiobox)."""
    import torch

    from scoring.judges import ClipAudio, ConditionInput, JudgeConfig, adapter_for
    from scoring.judges.runtime import cached_model

    device = args.device
    root = models.cmi_family(Path(tempfile.mkdtemp(prefix="bench-cmi-")), size=args.size)
    n, batch = args.cmi_clips, args.cmi_batch
    clips = [ClipAudio(path=p, sha256=p) for p in _write_files(n, "FLAC", seed=7)]
    condition = ConditionInput(prompt="calm solo piano piece, slow tempo", lyrics="la la la")
    print(f"CMI family ({args.size}, {device}): {n} ten-second 44.1 kHz stereo FLAC files, batch {batch}")
    for kind, directory in (("muq_mulan", "MuQ-MuLan-large"), ("songeval", "SongEval"), ("cmi_rm", "CMI-RM"), ("aesthetics", "audiobox-aesthetics")):
        judge = adapter_for(JudgeConfig(key=f"{kind}-bench", kind=kind, weights=str(root / directory), options={"device": device, "batch_size": batch}))
        dev, dtype = judge.device_and_dtype()
        if args.size == "full":
            network = models.cmi_network(kind, root, device, dtype)
            cached_model((kind, judge.require(), dev, str(dtype)), lambda: network)
        judge.score_clips(clips[:2], condition)  # warm-up; loads the tiny models through the real loader
        network, _ = judge.loaded(lambda path, models_root: None)  # the network now in the model cache
        end_to_end = n / _timed(lambda: judge.score_clips(clips, condition), device)
        if kind == "aesthetics":
            waves = torch.zeros((batch, 160000), device=device, dtype=dtype).normal_(0, 0.1)
            valid = torch.ones((batch, 160000), device=device, dtype=torch.bool)

            def backbone():
                network.wavlm_model(waves, valid)
        else:
            muq = {"muq_mulan": lambda m: m.mulan.audio.model, "songeval": lambda m: m.muq, "cmi_rm": lambda m: m.audio_module.model}[kind](network)
            waves = torch.zeros((batch, 240000), device=device).normal_(0, 0.1)

            def backbone():
                muq(waves)

        with torch.inference_mode():
            backbone()
            rounds = max(1, n // batch)
            alone = rounds * batch / _timed(lambda: [backbone() for _ in range(rounds)], device)
        print(f"  {kind:11} {models.params(network):7.1f} M parameters, {str(dtype).split('.')[-1]:8}  end to end {end_to_end:8.2f} clips/s | backbone alone {alone:8.2f} clips/s | ratio {100 * end_to_end / alone:5.1f} %")


# --- Lyrics (Whisper) ------------------------------------------------------------------------------


def bench_lyrics(args) -> None:
    import soundfile as sf
    import torch

    from scoring.judges import ClipAudio, ConditionInput, JudgeConfig, adapter_for
    from scoring.judges.runtime import cached_model

    device, dtype = args.device, _dtype_option(args.device)
    model, processor, weights = models.whisper(device, getattr(torch, {"bf16": "bfloat16", "fp32": "float32"}[dtype]), size=args.size)
    n, batch, tokens = args.lyrics_clips, args.lyrics_batch, args.lyrics_tokens
    # Random weights may say the end token at any step; suppressed, every window decodes `tokens` tokens.
    model.generation_config.suppress_tokens = [model.generation_config.eos_token_id]
    options = {"device": device, "dtype": dtype, "batch_size": batch, "max_new_tokens": tokens, "language": "en", "cache": False}
    judge = adapter_for(JudgeConfig(key="lyrics-bench", kind="lyrics", weights=weights, options=options))
    cached_model(("lyrics", judge.require(), judge.device(), judge.dtype()), lambda: (model, processor))
    folder = Path(tempfile.mkdtemp(prefix="bench-lyrics-"))
    clips = []
    for i, wave in enumerate(_music(n, 30.0, 44100, seed=11)):
        sf.write(str(folder / f"{i}.flac"), wave.clip(-1, 1), 44100, format="FLAC")
        clips.append(ClipAudio(path=str(folder / f"{i}.flac"), sha256=f"lyrics-{i}"))
    condition = ConditionInput(prompt="pop ballad", lyrics="stay with me tonight, under the silver moon, we sing until the morning comes")
    print(f"Lyrics: Whisper ({args.size}: {models.params(model):.2f} M parameters, {dtype}, {device}), {n} thirty-second 44.1 kHz FLAC files, batch {batch}, {tokens} new tokens per window")
    judge.score_clips(clips[:2], condition)  # warm-up
    end_to_end = n / _timed(lambda: judge.score_clips(clips, condition), device)
    features = processor(audio=_music(batch, 30.0, 16000, seed=12), sampling_rate=16000, return_tensors="pt")["input_features"].to(device, model.dtype)
    kwargs = {"language": "en", "task": "transcribe", "max_new_tokens": tokens, "num_beams": 1, "do_sample": False}
    rounds = max(1, n // batch)

    def generate_alone():
        with torch.inference_mode():
            for _ in range(rounds):
                model.generate(features, **kwargs)

    generate_alone()
    alone = rounds * batch / _timed(generate_alone, device)
    heard = judge.score_clips(clips[:1], condition)[0]
    print(f"  end to end {end_to_end:8.2f} clips/s | generate alone {alone:8.2f} clips/s | ratio {100 * end_to_end / alone:5.1f} % | a transcript: {len(heard['transcript'])} characters, WER {heard['wer']:.2f}")


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
    parser.add_argument("--files-clips", type=int, default=None, help="files section: files per format")
    parser.add_argument("--cores", type=int, default=None, help="decode and files sections: decoding workers (default: all cores)")
    parser.add_argument("--cmi-clips", type=int, default=None)
    parser.add_argument("--cmi-batch", type=int, default=8)
    parser.add_argument("--lyrics-clips", type=int, default=None)
    parser.add_argument("--lyrics-batch", type=int, default=None)
    parser.add_argument("--lyrics-tokens", type=int, default=None, help="lyrics section: new tokens per 30 s window")
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
    args.files_clips = args.files_clips or (512 if gpu else 16)
    args.cmi_clips = args.cmi_clips or (64 if gpu else 4)
    args.lyrics_clips = args.lyrics_clips or (64 if gpu else 4)
    args.lyrics_batch = args.lyrics_batch or (16 if gpu else 2)
    args.lyrics_tokens = args.lyrics_tokens or (128 if gpu else 8)
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
