"""Prompt conditioning of the reward model on studies its features were not designed for, over seeds.

    .venv/bin/python bench/reward_prompt.py [--seeds 10] [--conditions 48] [--clips 4] [--voters 2]
        [--kinds invented_word,two_words,word_order,blind,quadratic,bright_dark] [--split condition] [--rounds 1000]
        [--features 8] [--fillers 4] [--epochs 200] [--patience 20]

Known-truth studies in memory (no audio, no database): tests/scoring/reward_prompted.py (the
deciding words are invented, so the built-in prompt attributes are all zero; "blind" ignores the
prompt) and tests/scoring/reward_truth.py ("quadratic" ignores the prompt; "bright_dark" is the
design the built-in word lists were made for). Seed s draws study s and splits it with split
seed s (whole conditions, or prompt texts, on each side), then scoring.reward.measure.measure_split
trains the network and the linear models on the training votes and picks per dimension on the
validation votes, as `manage.py train_reward` does.

Per study and dimension it prints, over the seeds, the mean test accuracy and a 95 % Student t
interval of: the registered model (the pick among logistic, logistic x condition components, the
low-rank clip x prompt model and the network), the registered model as picked before the low-rank
model existed (among the other three), the network, the prompt-blind logistic regression, and the
low-rank model alone; then the registered model minus the prompt-blind logistic, with its interval
over seeds and how many seeds' own intervals (95 %, resampling test conditions) lie above 0; the
same for registered minus the earlier pick; and how often each candidate was picked.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "platform")]

from scipy import stats  # noqa: E402

from scoring.evaluation import DIMENSIONS, VOTE  # noqa: E402
from scoring.reward.data import split_rows  # noqa: E402
from scoring.reward.features import PROMPT_ATTRIBUTES  # noqa: E402
from scoring.reward.measure import CANDIDATES, measure_split  # noqa: E402
from scoring.reward.model import TrainConfig  # noqa: E402
from tests.scoring import reward_prompted, reward_truth  # noqa: E402

BEFORE = tuple(name for name in CANDIDATES if name != "prompt_lowrank")
ROWS = ("registered", "before", "network", "logistic", "prompt_lowrank")


def _study(kind: str, seed: int, sizes: dict, args):
    if kind in reward_prompted.KINDS:
        return reward_prompted.study(kind, seed=seed, features=args.features, fillers=args.fillers, **sizes)
    return reward_truth.study(kind, seed=seed, **sizes)


def _interval(values: list[float]) -> str:
    mean = statistics.fmean(values)
    if len(values) < 2:
        return f"{mean:.3f}"
    half = stats.t.ppf(0.975, len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))
    return f"{mean:.3f} [{mean - half:.3f}, {mean + half:.3f}]"


def one(kind: str, seed: int, args) -> dict:
    sizes = {"conditions": args.conditions, "clips": args.clips, "voters": args.voters}
    table, votes, rows = _study(kind, seed, sizes, args)
    split = split_rows(rows, mode=args.split, seed=seed)
    config = TrainConfig(epochs=args.epochs, patience=args.patience, crossed=len(PROMPT_ATTRIBUTES))
    figures = measure_split(table, votes, rows, split, config=config, seed=0, judge_scores=None, feature_kind="truth", rounds=args.rounds).figures
    out = {}
    for dim in DIMENSIONS:
        test = figures["test"][VOTE][dim]
        validation = {n: figures["validation"][n][dim] for n in BEFORE}
        before = max((validation[n] if validation[n] is not None else -1.0, -k, n) for k, n in enumerate(BEFORE))[2]
        diffs = figures["registered_differences"][dim]
        out[dim] = {
            "accuracy": {**{n: test[n]["accuracy"] for n in ("registered", "network", "logistic", "prompt_lowrank")}, "before": test[before]["accuracy"]},
            "minus_logistic": (diffs["logistic"]["difference"], diffs["logistic"]["ci"]),
            "minus_before": (diffs[before]["difference"], diffs[before]["ci"]) if before != "registered" else (0.0, (0.0, 0.0)),
            "pick": figures["picks"][dim],
            "rank": figures["linear"]["prompt_lowrank"]["chosen"][dim]["rank"],
            "clusters": test["registered"]["interval"]["clusters"],
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--conditions", type=int, default=48)
    parser.add_argument("--clips", type=int, default=4)
    parser.add_argument("--voters", type=int, default=2)
    parser.add_argument("--kinds", default="invented_word,two_words,word_order,blind,quadratic,bright_dark")
    parser.add_argument("--split", default="condition", choices=("condition", "prompt"))
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--features", type=int, default=reward_prompted.DIM, help="clip features of the invented-word studies (the truth reads 4)")
    parser.add_argument("--fillers", type=int, default=4, help="filler words a prompt of the invented-word studies carries")
    parser.add_argument("--epochs", type=int, default=200, help="the network's epoch limit (early stopping reads validation)")
    parser.add_argument("--patience", type=int, default=20)
    args = parser.parse_args()
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    unknown = [k for k in kinds if k not in reward_prompted.KINDS + reward_truth.KINDS]
    if unknown:
        parser.error(f"unknown kind(s) {', '.join(unknown)}; known: {', '.join(reward_prompted.KINDS + reward_truth.KINDS)}")
    print(f"# {args.seeds} seeds (study seed = split seed), {args.conditions} conditions x {args.clips} clips (every pair), {args.voters} votes a pair;")
    print(f"# invented-word studies: {args.features} clip features, {args.fillers} filler words a prompt")
    print(f"# split by {args.split}; 95 % t intervals over seeds; per-seed intervals resample test conditions ({args.rounds} rounds)")
    for kind in kinds:
        started = time.perf_counter()
        runs = [one(kind, seed, args) for seed in range(args.seeds)]
        print(f"\n## {kind}  ({time.perf_counter() - started:.0f} s, {runs[0][DIMENSIONS[0]]['clusters']} test conditions a seed)")
        for dim in DIMENSIONS:
            print(f"  {dim}")
            for name in ROWS:
                print(f"    {name:<16} {_interval([r[dim]['accuracy'][name] for r in runs])}")
            for label, key in (("minus logistic", "minus_logistic"), ("minus before", "minus_before")):
                values = [r[dim][key][0] for r in runs]
                above = sum(1 for r in runs if r[dim][key][1][0] is not None and r[dim][key][1][0] > 0)
                below = sum(1 for r in runs if r[dim][key][1][1] is not None and r[dim][key][1][1] < 0)
                print(f"    {label:<16} {_interval(values)}  seeds with interval above 0: {above}/{len(runs)}, below 0: {below}/{len(runs)}")
            picks = Counter(r[dim]["pick"] for r in runs)
            ranks = Counter(r[dim]["rank"] for r in runs)
            print(f"    picks            {dict(sorted(picks.items()))}; low-rank model's rank {dict(sorted(ranks.items()))}")


if __name__ == "__main__":
    main()
