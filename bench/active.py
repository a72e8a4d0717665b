"""Votes needed to reach a held-out accuracy, and accuracy at fixed budgets: random vs uncertainty vs disagreement.

    .venv/bin/python bench/active.py [--seeds 30] [--conditions 60] [--clips 5] [--agreement 0.8]
        [--noise flat,margin] [--targets 0.72,0.76,0.80] [--budgets 200,400,800] [--share 0.5]
        [--max-votes 1000] [--rounds 2000] [--jobs 2]

A synthetic study in memory (no audio files, no database). Each clip has two hidden qualities
(alignment, musicality) that decide the true preference; nobody sees them. What can be seen is a
16-number feature vector (the size of the signal judge's): feature 0 is musicality plus noise,
feature 1 alignment plus noise, the rest unrelated. Pairs are every two clips of a condition; a
fifth of the conditions never get a vote and are the held-out test, scored against the truth.

Simulated annotators agree with the truth `--agreement` of the time on average, under two noise
models: flat (every vote flips with the same probability) and margin (a vote is likelier to flip
the closer the pair's hidden qualities are: P(agree) = sigmoid(|difference| / T), T set so the
mean agreement over the pairs is the same). Simulated automatic judges (for disagreement) score
clips from the visible features only, each with its own weights on the unrelated features and its
own noise, so they agree with the truth less often than a vote does.

Each strategy annotates from nothing. At checkpoints it trains the platform's reward model on the
votes so far (scoring.reward.model.train: the network, loss and early stopping of `manage.py
train_reward`, with a fixed validation share of conditions), measures held-out accuracy against
the truth (the mean over both dimensions), and picks the next votes:

- random: a uniformly random open pair (the engine's random order);
- uncertainty: the open pairs the current model is least sure about (scoring.reward.selection.uncertainty);
- disagreement: the open pairs the simulated judges disagree on most (scoring.reward.selection.disagreement).

Every draw goes through the engine's rule (annotation.active.draw_mode): a `--share` of draws is
active, the rest random, as a study's cap makes it (the platform's default is 0.5). Pairs take at
most three votes. Per target, a run's figure is the first checkpoint whose accuracy reaches it; a
run that never does is censored (counted as such, never as the budget). The ratio to random is
the ratio of mean votes over the seeds where both runs reached the target, with a 95% bootstrap
interval over those seeds; accuracy at a budget is the accuracy at that checkpoint, with the
difference to random and its interval over seeds.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "platform")]

from annotation.active import DISAGREEMENT, RANDOM, UNCERTAINTY, active_order, draw_mode  # noqa: E402
from scoring.reward.data import votes_from_rows  # noqa: E402
from scoring.reward.model import FeatureTable, TrainConfig, train  # noqa: E402
from scoring.reward.selection import disagreement, uncertainty  # noqa: E402

FEATURES = 16
OVERLAP = 3
VISIBLE_NOISE = 0.35  # the visible proxies' noise, in units of the hidden qualities' spread
JUDGES = ((0.6, 0.4), (0.9, 0.6), (1.2, 0.3), (1.6, 0.8))  # (own noise, weight on unrelated features)
STRATEGIES = (RANDOM, UNCERTAINTY, DISAGREEMENT)
NOISE_MODELS = ("flat", "margin")
CONFIG = TrainConfig(hidden=8, epochs=120, patience=12)


class Study:
    """Clips, conditions, candidate pairs, the hidden truth and the simulated judges of one seeded study."""

    def __init__(self, *, seed: int, conditions: int, clips: int):
        rng = np.random.default_rng(seed)
        n = conditions * clips
        self.hidden = rng.standard_normal((n, 2))  # (alignment, musicality) quality
        visible = rng.standard_normal((n, FEATURES))
        visible[:, 0] = self.hidden[:, 1] + VISIBLE_NOISE * rng.standard_normal(n)
        visible[:, 1] = self.hidden[:, 0] + VISIBLE_NOISE * rng.standard_normal(n)
        self.table = FeatureTable(clips=visible, conditions=rng.standard_normal((conditions, 8)), reference=-np.ones(conditions, dtype=int))
        self.pairs = [(c * clips + i, c * clips + j, c) for c in range(conditions) for i in range(clips) for j in range(i + 1, clips)]
        order = rng.permutation(conditions)
        n_test = max(1, conditions // 5)
        self.test_conditions = set(order[:n_test].tolist())
        self.val_conditions = set(order[n_test : n_test + max(2, conditions // 10)].tolist())
        self.pool = [k for k, (_, _, c) in enumerate(self.pairs) if c not in self.test_conditions]
        self.test = [k for k, (_, _, c) in enumerate(self.pairs) if c in self.test_conditions]
        a = np.array([p[0] for p in self.pairs])
        b = np.array([p[1] for p in self.pairs])
        self.margin = self.hidden[a] - self.hidden[b]  # (pairs, dims): alignment, musicality
        self.truth = self.margin > 0
        # Judges read the visible features only: the proxy, plus their own taste in unrelated features, plus noise.
        labels = []
        for k, (sd, taste) in enumerate(JUDGES):
            jr = np.random.default_rng(seed * 100 + k)
            weights = np.zeros((FEATURES, 2))
            weights[1, 0] = weights[0, 1] = 1.0
            weights[2:, :] = taste * jr.standard_normal((FEATURES - 2, 2)) / math.sqrt(FEATURES - 2)
            score = visible @ weights + sd * jr.standard_normal((n, 2))
            labels.append((score[a] > score[b]).astype(float))
        self.judge_labels = np.stack(labels, axis=1)  # (pairs, judges, dims)
        self.judge_agreement = float((self.judge_labels == self.truth[:, None, :]).mean())

    def agreement(self, model: str, share: float) -> np.ndarray:
        """(pairs, dims) probability that a vote sides with the truth: flat, or rising with the hidden margin (same mean over the pool)."""
        if model == "flat":
            return np.full(self.margin.shape, share)
        size = np.abs(self.margin[self.pool])
        low, high = 1e-3, 100.0
        for _ in range(60):  # bisection on the temperature: mean agreement over the pool = share
            mid = math.sqrt(low * high)
            if float(np.mean(1.0 / (1.0 + np.exp(-size / mid)))) > share:
                low = mid
            else:
                high = mid
        return 1.0 / (1.0 + np.exp(-np.abs(self.margin) / math.sqrt(low * high)))

    def row(self, k: int, labels) -> dict:
        a, b, c = self.pairs[k]
        side = {True: "model_a", False: "model_b"}
        return {"pair_id": k, "condition": c, "clip_a": a, "clip_b": b, "label_alignment": side[bool(labels[0])], "label_musicality": side[bool(labels[1])]}


def checkpoints(limit: int, budgets: list[int]) -> list[int]:
    points, n = set(budgets), 100
    while n < limit:
        points.add(n)
        n = int(round(n * 1.35 / 50.0)) * 50
    return sorted(p for p in points | {limit} if p <= limit)


def run_strategy(study: Study, strategy: str, *, seed: int, noise: str, agreement: float, share: float, limit: int, budgets: list[int], targets: list[float]) -> list:
    """[(votes, accuracy)] at each checkpoint, stopping once every target is reached and every budget measured."""
    rng = random.Random(f"bench-active:{strategy}:{noise}:{seed}")
    agree = study.agreement(noise, agreement)
    votes_per_pair: dict[int, int] = {}
    rows: list[dict] = []
    clip_index = {i: i for i in range(len(study.table.clips))}
    condition_index = {c: c for c in range(len(study.table.conditions))}
    test_votes = votes_from_rows([study.row(k, study.truth[k]) for k in study.test], clip_index=clip_index, condition_index=condition_index)
    pool_votes = votes_from_rows([study.row(k, study.truth[k]) for k in study.pool], clip_index=clip_index, condition_index=condition_index)
    order_keys = {k: rng.random() for k in study.pool}
    ranking = active_order({k: float(v) for k, v in zip(study.pool, disagreement(study.judge_labels[study.pool]))}, order_keys) if strategy == DISAGREEMENT else []
    curve = []
    for point in checkpoints(limit, budgets):
        while len(rows) < point:
            mode = draw_mode(selection=strategy, seed=seed, draw=len(rows), share=share)
            ranked = next((k for k in ranking if votes_per_pair.get(k, 0) < OVERLAP), None) if mode != RANDOM else None
            k = ranked if ranked is not None else rng.choice([p for p in study.pool if votes_per_pair.get(p, 0) < OVERLAP])
            votes_per_pair[k] = votes_per_pair.get(k, 0) + 1
            sides = np.array([rng.random() for _ in range(2)]) < agree[k]
            rows.append(study.row(k, np.where(sides, study.truth[k], ~study.truth[k])))
        all_votes = votes_from_rows(rows, clip_index=clip_index, condition_index=condition_index)
        val = [i for i, r in enumerate(rows) if r["condition"] in study.val_conditions]
        fit = [i for i, r in enumerate(rows) if r["condition"] not in study.val_conditions]
        if not val or not fit:
            curve.append((point, None))
            continue
        model = train(study.table, all_votes.subset(fit), all_votes.subset(val), config=CONFIG, seed=seed)
        if strategy == UNCERTAINTY:
            ranking = active_order(dict(zip(study.pool, uncertainty(model.prob_a(study.table, pool_votes)))), order_keys)
        accuracy = float(((model.prob_a(study.table, test_votes) > 0.5) == (test_votes.target == 1)).mean())
        curve.append((point, accuracy))
        if point >= max(budgets) and accuracy >= max(targets):
            break
    return curve


def _job(args: tuple) -> tuple:
    seed, noise, options = args
    warnings.filterwarnings("ignore", category=UserWarning)
    study = Study(seed=seed, conditions=options["conditions"], clips=options["clips"])
    out = {}
    for strategy in STRATEGIES:
        out[strategy] = run_strategy(study, strategy, seed=seed, noise=noise, **{k: options[k] for k in ("agreement", "share", "limit", "budgets", "targets")})
    return seed, noise, out, study.judge_agreement


def first_reaching(curve: list, target: float) -> int | None:
    return next((n for n, acc in curve if acc is not None and acc >= target), None)


def at_budget(curve: list, budget: int) -> float | None:
    return next((acc for n, acc in curve if n == budget), None)


def ratio_interval(strategy: list[float], baseline: list[float], *, rounds: int, seed: int) -> tuple[float, list]:
    """Ratio of means over paired seeds, with a 95% percentile bootstrap interval resampling seeds."""
    s, b = np.asarray(strategy, dtype=float), np.asarray(baseline, dtype=float)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(s), size=(rounds, len(s)))
    boot = s[picks].mean(axis=1) / b[picks].mean(axis=1)
    return float(s.mean() / b.mean()), [float(x) for x in np.percentile(boot, [2.5, 97.5])]


def difference_interval(strategy: list[float], baseline: list[float], *, rounds: int, seed: int) -> tuple[float, list]:
    d = np.asarray(strategy, dtype=float) - np.asarray(baseline, dtype=float)
    rng = np.random.default_rng(seed)
    boot = d[rng.integers(0, len(d), size=(rounds, len(d)))].mean(axis=1)
    return float(d.mean()), [float(x) for x in np.percentile(boot, [2.5, 97.5])]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=30)
    parser.add_argument("--conditions", type=int, default=60)
    parser.add_argument("--clips", type=int, default=5, help="clips per condition (pairs: every two)")
    parser.add_argument("--agreement", type=float, default=0.8, help="mean share of votes that side with the truth")
    parser.add_argument("--noise", default="flat,margin", help="noise models: flat, margin")
    parser.add_argument("--targets", default="0.72,0.76,0.80", help="held-out accuracies against the truth")
    parser.add_argument("--budgets", default="200,400,800", help="vote counts at which accuracy is compared")
    parser.add_argument("--share", type=float, default=0.5, help="share of actively chosen draws (the platform's default is 0.5)")
    parser.add_argument("--max-votes", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=2000, help="bootstrap rounds over seeds")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="worker processes (default %(default)s)")
    args = parser.parse_args()
    targets = sorted(float(t) for t in args.targets.split(","))
    budgets = sorted(int(b) for b in args.budgets.split(","))
    noises = [n.strip() for n in args.noise.split(",") if n.strip()]
    bad = [n for n in noises if n not in NOISE_MODELS]
    if bad or not noises:
        parser.error(f"--noise takes {', '.join(NOISE_MODELS)}; got {args.noise!r}")
    pool_votes = (args.conditions - max(1, args.conditions // 5)) * (args.clips * (args.clips - 1) // 2) * OVERLAP
    limit = min(args.max_votes, pool_votes)
    if limit < args.max_votes:
        print(f"note: {args.conditions} conditions x {args.clips} clips hold about {pool_votes} votes outside the test: the budget is {limit}", flush=True)
    budgets = [b for b in budgets if b <= limit] or [limit]
    if not 0.5 < args.agreement < 1:
        parser.error("--agreement must be above 0.5 and below 1")
    options = {"conditions": args.conditions, "clips": args.clips, "agreement": args.agreement, "share": args.share, "limit": limit, "budgets": budgets, "targets": targets}
    jobs = [(seed, noise, options) for noise in noises for seed in range(args.seeds)]
    started = time.perf_counter()
    results: dict[str, dict[int, dict]] = {n: {} for n in noises}
    judges: list[float] = []
    if args.jobs > 1:
        with ProcessPoolExecutor(args.jobs) as pool:
            done = list(pool.map(_job, jobs))
    else:
        done = map(_job, jobs)
    for seed, noise, curves, judge_agreement in done:
        results[noise][seed] = curves
        judges.append(judge_agreement)
        trace = "  ".join(f"{s}:" + ",".join(f"{n}={a:.3f}" for n, a in c if a is not None and n in budgets) for s, c in curves.items())
        print(f"seed {seed:>2} {noise:<6} {trace}", flush=True)
    elapsed = time.perf_counter() - started
    print()
    print(
        f"{args.seeds} seeds, {args.conditions} conditions x {args.clips} clips, votes agree with the truth {args.agreement:.0%} on average, "
        f"active share {args.share}, budget {limit} votes, simulated judges agree with the truth {np.mean(judges):.0%}, {elapsed:.0f} s"
    )
    verdict: dict[str, bool] = {s: True for s in STRATEGIES if s != RANDOM}
    for noise in noises:
        runs = results[noise]
        print(f"\nnoise: {noise}")
        print(f"{'target':<8}{'strategy':<14}{'reached':>9}{'censored':>10}{'mean votes':>12}{'paired':>8}{'ratio to random':>17}{'95% interval':>18}")
        for target in targets:
            reach = {s: [first_reaching(runs[seed][s], target) for seed in sorted(runs)] for s in STRATEGIES}
            for strategy in STRATEGIES:
                got = [v for v in reach[strategy] if v is not None]
                mean = f"{np.mean(got):.0f}" if got else "—"
                line = f"{target:<8.2f}{strategy:<14}{len(got):>6}/{len(reach[strategy]):<2}{len(reach[strategy]) - len(got):>10}{mean:>12}"
                if strategy == RANDOM:
                    print(line)
                    continue
                paired = [(v, r) for v, r in zip(reach[strategy], reach[RANDOM]) if v is not None and r is not None]
                if len(paired) < 2:
                    print(f"{line}{len(paired):>8}{'—':>17}{'—':>18}")
                    verdict[strategy] = False
                    continue
                ratio, ci = ratio_interval([p[0] for p in paired], [p[1] for p in paired], rounds=args.rounds, seed=int(target * 1000))
                print(f"{line}{len(paired):>8}{ratio:>17.2f}{f'[{ci[0]:.2f}, {ci[1]:.2f}]':>18}")
                censored_more = sum(v is None for v in reach[strategy]) > sum(v is None for v in reach[RANDOM])
                verdict[strategy] = verdict[strategy] and ci[1] < 1 and not censored_more
        print(f"{'budget':<8}{'strategy':<14}{'mean accuracy':>15}{'minus random':>14}{'95% interval':>20}")
        for budget in budgets:
            base = [at_budget(runs[seed][RANDOM], budget) for seed in sorted(runs)]
            for strategy in STRATEGIES:
                values = [at_budget(runs[seed][strategy], budget) for seed in sorted(runs)]
                ok = [(v, b) for v, b in zip(values, base) if v is not None and b is not None]
                mean = np.mean([v for v, _ in ok]) if ok else float("nan")
                if strategy == RANDOM or len(ok) < 2:
                    print(f"{budget:<8}{strategy:<14}{mean:>15.3f}")
                    continue
                diff, ci = difference_interval([v for v, _ in ok], [b for _, b in ok], rounds=args.rounds, seed=budget)
                print(f"{budget:<8}{strategy:<14}{mean:>15.3f}{diff:>+14.3f}{f'[{ci[0]:+.3f}, {ci[1]:+.3f}]':>20}")
    print()
    for strategy, keeps in verdict.items():
        state = "saves votes" if keeps else "does not show a saving"
        print(f"{strategy}: {state} (ratio interval below 1 at every target under every noise model, and no more censored runs than random: {'yes' if keeps else 'no'})")
    survivors = [s for s, keeps in verdict.items() if keeps]
    print(f"default selection: {survivors[0] if survivors else RANDOM}")


if __name__ == "__main__":
    main()
