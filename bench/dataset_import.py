"""Dataset import/export cost against the floor every import pays: decoding and hashing each audio file once.

    .venv/bin/python bench/dataset_import.py [--rows 1000] [--clips 500] [--seconds 3]

Baseline (same run): audio_probe + sha256 of every distinct file, nothing else.
Reported: first import, re-import of the same file (a no-op), and export, each as
seconds and as a ratio to the baseline. Set BENCH_DATABASE_URL=sqlite to run on SQLite.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _setup import ROOT, django_setup  # noqa: E402


def build(folder: Path, *, rows: int, clips: int, seconds: float) -> Path:
    sys.path.insert(0, str(ROOT))
    from tests.audio import write_tone

    rng = random.Random(0)
    names = []
    for i in range(clips):
        name = f"gen/{i:05d}.flac"
        write_tone(folder / name, seconds, freq=110 + 3.1 * i, sr=16000)
        names.append(name)
    systems = [f"system-{i}" for i in range(8)]
    lines = []
    for i in range(rows):
        a, b = rng.sample(range(clips), 2)
        lines.append(
            json.dumps(
                {
                    "audio-path": names[a], "audio2": names[b], "ref-audio-path": "", "prompt": f"prompt {i % 200}", "lyrics": "",
                    "model_a": systems[a % 8], "model_b": systems[b % 8], "prompt id": str(i % 200), "user id": str(rng.randrange(40)),
                    "preference-musicality": rng.choice(["model_a", "model_b"]), "preference-alignment": rng.choice(["model_a", "model_b"]),
                    "confidence_preference-musicality": "3.0", "confidence_preference-alignment": "4.5", "feedback": "",
                    "source": "cmi-arena-annotation", "split": "train",
                }
            )
        )
    path = folder / "rows.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--clips", type=int, default=500)
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="bench-dataset-"))
    os.environ["MEDIA_ROOT"] = str(work / "media")
    django_setup("bench_dataset")
    from annotation.dataset import dataset_export, pairs_import
    from annotation.services import audio_probe, file_sha256

    rows = build(work / "audio", rows=args.rows, clips=args.clips, seconds=args.seconds)
    files = sorted((work / "audio").rglob("*.flac"))

    t0 = time.perf_counter()
    for path in files:
        audio_probe(path)
        file_sha256(path)
    baseline = time.perf_counter() - t0

    timings = {}
    t0 = time.perf_counter()
    first = pairs_import(files=[rows], audio_root=work / "audio", study_name="bench")
    timings["first import"] = time.perf_counter() - t0
    assert first.imported and not first.errors, first.errors[:3]
    t0 = time.perf_counter()
    again = pairs_import(files=[rows], audio_root=work / "audio", study_name="bench")
    timings["re-import (no-op)"] = time.perf_counter() - t0
    assert sum(again.created.values()) == 0
    t0 = time.perf_counter()
    dataset_export(out_dir=work / "export")
    timings["export"] = time.perf_counter() - t0

    print(f"{args.rows} rows, {len(files)} FLAC files of {args.seconds:g} s; database {os.environ.get('DATABASE_URL', 'sqlite')[:40]}")
    print(f"baseline (probe + hash every file once): {baseline:.2f} s")
    for name, seconds in timings.items():
        print(f"{name:>20}: {seconds:.2f} s  = {seconds / baseline:.2f} x baseline  ({args.rows / seconds:.0f} rows/s)")


if __name__ == "__main__":
    main()
