"""`python -m scoring.judges score PACKAGE_DIR --judge KIND --weights PATH --out predictions.jsonl`:
a benchmark export scored offline with any judge kind of this platform (offline.py says how)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path


def _option(text: str) -> tuple[str, object]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"--option takes KEY=VALUE, not {text!r}")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


def parser() -> argparse.ArgumentParser:
    from . import ADAPTERS

    kinds = sorted(k for k in ADAPTERS if k != "external")
    main = argparse.ArgumentParser(prog="python -m scoring.judges", description="Judges of the Auditorium platform, run as a library.")
    commands = main.add_subparsers(dest="command", required=True)
    score = commands.add_parser(
        "score",
        help="score every item of a benchmark export and write a prediction file to upload",
        description="Checks the export's MANIFEST.sha256, scores every item with the judge, and writes the MIREX prediction layout.",
    )
    score.add_argument("package", type=Path, help="the unpacked benchmark export (items.jsonl, audio/, MANIFEST.sha256)")
    score.add_argument("--judge", required=True, choices=kinds, metavar="KIND", help=f"judge kind: {', '.join(kinds)}")
    score.add_argument("--weights", default="", help="the judge's weights folder (not needed by the signal judge)")
    score.add_argument("--out", required=True, type=Path, help="prediction file to write (JSONL)")
    score.add_argument("--device", default=None, help="cpu, cuda or cuda:N (default: cuda when present)")
    score.add_argument("--dtype", default=None, help="bf16, fp16 or fp32 (default: the judge's own choice for the device)")
    score.add_argument("--batch-size", type=int, default=16, help="clips (pairs, for a pairwise judge) per call (default 16)")
    score.add_argument("--models", type=Path, default=None, help="folder where relative weights and the models a checkpoint names are looked up")
    score.add_argument("--template", default="", help="prompt template of an LLM judge")
    score.add_argument("--option", action="append", type=_option, default=[], metavar="KEY=VALUE", help="a judge option (VALUE read as JSON when it parses), repeatable")
    score.add_argument("--quiet", action="store_true", help="no progress bar")
    return main


def score(args) -> int:
    from . import JudgeConfig, JudgeUnavailable, adapter_for
    from .offline import MemoryStore, PackageError, prediction_rows, read_items, score_items, write_jsonl

    options = dict(args.option)
    if args.device:
        options["device"] = args.device
    if args.dtype:
        options["dtype"] = args.dtype
    options.setdefault("batch_size", args.batch_size)
    weights = str(Path(args.weights).expanduser().resolve()) if args.weights else ""
    judge = adapter_for(JudgeConfig(key=f"{args.judge}-offline", kind=args.judge, weights=weights, options=options), template=args.template, store=MemoryStore(), model_dir=args.models)
    try:
        items = read_items(args.package)
        state = judge.availability()
        if not state.available:
            raise JudgeUnavailable(state.reason)
    except (PackageError, JudgeUnavailable) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"{len(items)} items in {args.package}, manifest checked; judge {args.judge} ({weights or 'no weights'})", file=sys.stderr)
    from tqdm import tqdm

    with tqdm(total=len(items), unit="item", disable=args.quiet, file=sys.stderr) as bar:
        try:
            scored = score_items(judge, items, batch_size=args.batch_size, progress=bar.update)
        except JudgeUnavailable as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    rows = prediction_rows(items, scored)
    write_jsonl(rows, args.out)
    for item_id, reason in list(scored.failed.items())[:20]:
        print(f"  not scored: {item_id}: {reason}", file=sys.stderr)
    print(f"wrote {len(rows)} predictions to {args.out}; {len(scored.failed)} items not scored (the upload counts them as missing)", file=sys.stderr)
    return 0 if rows else 1


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # weights are local folders: never reach for the hub
    args = parser().parse_args(argv)
    return score(args)


if __name__ == "__main__":
    sys.exit(main())
