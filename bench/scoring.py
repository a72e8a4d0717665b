"""Scoring cost with and without the per-clip cache: clips encoded and seconds per run.

    .venv/bin/python bench/scoring.py [--clips 12] [--seconds 4] [--conditions 2] [--skip-clap]

N pairs over M clips (every pair of clips, under each condition). Baseline (same run): the same
judge with the cache off (options {"cache": false}), which decodes/encodes both clips of every
pair, 2N passes. With the cache each clip is encoded once per judge version: M passes. Printed:
encoder passes, wall seconds, and the ratios baseline / cached. Signal judge always; CLAP on a
tiny random model (built offline in a temp dir) unless --skip-clap. Where a GPU is present it
also prints clips per second per judge; without one that part is skipped with a message.
Set BENCH_DATABASE_URL=sqlite to run on SQLite (default: a scratch PostgreSQL database).
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _setup import ROOT, django_setup  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clips", type=int, default=12)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--conditions", type=int, default=2)
    parser.add_argument("--skip-clap", action="store_true")
    args = parser.parse_args()

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
    print(f"pairs N={n} over clips M={m} ({args.conditions} conditions, {args.seconds:g} s each)")

    judges = [("signal", SignalJudge, {"kind": Judge.Kind.SIGNAL})]
    if not args.skip_clap:
        from tests.scoring.tiny_models import build_tiny_clap

        clap_dir = build_tiny_clap(Path(tempfile.mkdtemp(prefix="bench-clap-")))
        judges.append(("clap-tiny", ClapJudge, {"kind": Judge.Kind.CLAP, "weights": str(clap_dir)}))

    def run_once(key: str, adapter_cls, spec: dict, cache: bool) -> tuple[int, float]:
        judge = Judge.objects.create(key=f"{key}-{'cache' if cache else 'nocache'}", options={"cache": cache}, **spec)
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
            f"{key:<10} no cache: {base_passes:5d} encoder passes {base_s:7.2f} s | cache: {cached_passes:5d} passes {cached_s:7.2f} s | "
            f"passes ratio {base_passes / max(cached_passes, 1):.2f}x (2N/M = {2 * n / m:.2f}), time ratio {base_s / cached_s:.2f}x"
        )

    import torch

    if not torch.cuda.is_available():
        print("GPU throughput: skipped (no CUDA device on this machine)")
        return
    for key, cls, spec in judges:
        judge = Judge.objects.create(key=f"{key}-gpu", options={"cache": False, "device": "cuda"}, **spec)
        adapter = services.judge_adapter(judge)
        audio = [services.clip_audio(c) for c in clips]
        from scoring.judges import ConditionInput

        adapter.score_clips(audio[:2], ConditionInput(prompt="warm up"))
        torch.cuda.synchronize()
        start = time.perf_counter()
        adapter.score_clips(audio, ConditionInput(prompt="calm piano"))
        torch.cuda.synchronize()
        print(f"GPU {key:<10} {len(audio) / (time.perf_counter() - start):8.1f} clips/s")


if __name__ == "__main__":
    main()
