"""Votes needed to reach a target held-out accuracy: random vs uncertainty vs disagreement selection.

    .venv/bin/python bench/active.py [--seeds 5] [--conditions 100] [--clips 6] [--noise 0.2]
        [--target 0.9] [--share 1.0] [--max-votes 2400]

A synthetic study in memory (no audio files, no database): each clip has a 16-number feature
vector (the size of the signal judge's), and two hidden features of it decide the true
preferences (feature 0 musicality, feature 1 alignment). Simulated annotators side with the truth
with probability 1 - noise. Pairs are every two clips of a condition; a fifth of the conditions
never get a vote and are the held-out test, scored against the truth itself.

Each strategy annotates from nothing. At checkpoints (100, 150, 200, 300, ... votes) it trains
the platform's reward model on the votes so far (scoring.reward.model.train: the same network,
loss, split by condition and early stopping as `manage.py train_reward`), measures held-out
accuracy, and if the target is not reached picks the next votes:

- random: a uniformly random open pair (the engine's random order);
- uncertainty: the open pairs the current model is least sure about (scoring.reward.selection.uncertainty);
- disagreement: the open pairs four simulated automatic judges disagree on most
  (scoring.reward.selection.disagreement); each judge sees the hidden features through its own noise.

Every draw goes through the engine's rule (annotation.active.draw_mode): with --share below 1, that
share of draws is active and the rest random, as a study's cap makes it. Pairs take at most three
votes. The figure is the first checkpoint at which held-out accuracy reaches the target (a run that
never does counts as --max-votes and is marked); mean and spread over seeds, and each strategy's
ratio to random measured in the same run.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
import warnings
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
JUDGE_NOISE = (0.3, 0.6, 1.0, 1.5)
STRATEGIES = (RANDOM, UNCERTAINTY, DISAGREEMENT)


class Study:
    """Clips, conditions, candidate pairs and the hidden truth of one seeded synthetic study."""

    def __init__(self, *, seed: int, conditions: int, clips: int):
        rng = np.random.default_rng(seed)
        self.features = rng.standard_normal((conditions * clips, FEATURES))
        # Condition vectors (what a prompt embedding would be): irrelevant to the truth here.
        self.table = FeatureTable(clips=self.features, conditions=rng.standard_normal((conditions, 8)), reference=-np.ones(conditions, dtype=int))
        self.pairs = []  # (clip_a, clip_b, condition)
        for c in range(conditions):
            for i in range(clips):
                for j in range(i + 1, clips):
                    self.pairs.append((c * clips + i, c * clips + j, c))
        order = rng.permutation(conditions)
        self.test_conditions = set(order[: conditions // 5].tolist())
        self.val_conditions = set(order[conditions // 5 : conditions // 5 + max(2, conditions // 10)].tolist())
        self.pool = [k for k, (_, _, c) in enumerate(self.pairs) if c not in self.test_conditions]
        self.test = [k for k in range(len(self.pairs)) if k not in set(self.pool)]
        # Truth per pair and dimension (alignment, musicality): does clip A win?
        a = np.array([p[0] for p in self.pairs])
        b = np.array([p[1] for p in self.pairs])
        self.truth = np.stack([self.features[a, 1] > self.features[b, 1], self.features[a, 0] > self.features[b, 0]], axis=1)
        # Automatic judges: each scores a clip by the hidden features plus its own noise.
        judges = []
        for k, sd in enumerate(JUDGE_NOISE):
            noise = np.random.default_rng(seed * 100 + k).standard_normal(self.features[:, :2].shape) * sd
            view = self.features[:, :2] + noise
            judges.append(np.stack([view[a, 1] > view[b, 1], view[a, 0] > view[b, 0]], axis=1).astype(float))
        self.judge_labels = np.stack(judges, axis=1)  # (pairs, judges, dims)

    def row(self, k: int, labels: np.ndarray) -> dict:
        a, b, c = self.pairs[k]
        side = {True: "model_a", False: "model_b"}
        return {"pair_id": k, "condition": c, "clip_a": a, "clip_b": b, "label_alignment": side[bool(labels[0])], "label_musicality": side[bool(labels[1])]}


def checkpoints(limit: int) -> list[int]:
    points, n = [], 100
    while n < limit:
        points.append(n)
        n = int(round(n * 1.35 / 50.0)) * 50
    return points + [limit]


def run_strategy(study: Study, strategy: str, *, seed: int, noise: float, target: float, share: float, limit: int, config: TrainConfig) -> tuple[int, bool, list]:
    rng = random.Random(f"bench-active:{strategy}:{seed}")
    votes_per_pair: dict[int, int] = {}
    rows: list[dict] = []
    clip_index = {i: i for i in range(len(study.features))}
    condition_index = {c: c for c in range(len(study.table.conditions))}
    test_votes = votes_from_rows([study.row(k, study.truth[k]) for k in study.test], clip_index=clip_index, condition_index=condition_index)
    order_keys = {k: rng.random() for k in study.pool}
    pool_votes = votes_from_rows([study.row(k, study.truth[k]) for k in study.pool], clip_index=clip_index, condition_index=condition_index)
    disagree = disagreement(study.judge_labels)
    # The ranking is refreshed when a model is trained, as the platform refreshes it after each training.
    ranking = active_order({k: float(disagree[k]) for k in study.pool}, order_keys) if strategy == DISAGREEMENT else []
    model = None
    curve = []
    for point in checkpoints(limit):
        while len(rows) < point:
            mode = draw_mode(selection=strategy, seed=seed, draw=len(rows), share=share)
            ranked = next((k for k in ranking if votes_per_pair.get(k, 0) < OVERLAP), None) if mode != RANDOM else None
            k = ranked if ranked is not None else rng.choice([p for p in study.pool if votes_per_pair.get(p, 0) < OVERLAP])
            votes_per_pair[k] = votes_per_pair.get(k, 0) + 1
            labels = np.where(np.array([rng.random() for _ in range(2)]) < 1 - noise, study.truth[k], ~study.truth[k])
            rows.append(study.row(k, labels))
        all_votes = votes_from_rows(rows, clip_index=clip_index, condition_index=condition_index)
        val = [i for i, r in enumerate(rows) if r["condition"] in study.val_conditions]
        fit = [i for i, r in enumerate(rows) if r["condition"] not in study.val_conditions]
        if not val or not fit:
            curve.append((point, None))
            continue
        model = train(study.table, all_votes.subset(fit), all_votes.subset(val), config=config, seed=seed)
        if strategy == UNCERTAINTY:
            ranking = active_order(dict(zip(study.pool, uncertainty(model.prob_a(study.table, pool_votes)))), order_keys)
        accuracy = float(((model.prob_a(study.table, test_votes) > 0.5) == (test_votes.target == 1)).mean())
        curve.append((point, accuracy))
        if accuracy >= target:
            return point, True, curve
    return limit, False, curve


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--conditions", type=int, default=100)
    parser.add_argument("--clips", type=int, default=6, help="clips per condition (pairs: every two)")
    parser.add_argument("--noise", type=float, default=0.2, help="share of votes against the truth")
    parser.add_argument("--target", type=float, default=0.9, help="held-out accuracy against the truth")
    parser.add_argument("--share", type=float, default=1.0, help="share of actively chosen draws (the study's cap)")
    parser.add_argument("--max-votes", type=int, default=2400)
    args = parser.parse_args()
    warnings.filterwarnings("ignore", category=UserWarning)
    config = TrainConfig(epochs=200, patience=20)
    results: dict[str, list[tuple[int, bool]]] = {s: [] for s in STRATEGIES}
    started = time.perf_counter()
    for seed in range(args.seeds):
        study = Study(seed=seed, conditions=args.conditions, clips=args.clips)
        for strategy in STRATEGIES:
            votes, reached, curve = run_strategy(study, strategy, seed=seed, noise=args.noise, target=args.target, share=args.share, limit=args.max_votes, config=config)
            results[strategy].append((votes, reached))
            trace = " ".join(f"{n}:{a:.3f}" for n, a in curve if a is not None)
            print(f"seed {seed} {strategy:<12} {votes:>5} votes{'' if reached else ' (target not reached)'}   {trace}", flush=True)
    print()
    print(f"{len(next(iter(results.values())))} seeds, {args.conditions} conditions x {args.clips} clips, annotator noise {args.noise}, "
          f"target {args.target} held-out accuracy, active share {args.share}, {time.perf_counter() - started:.0f} s")  # fmt: skip
    baseline = statistics.mean(v for v, _ in results[RANDOM])
    print(f"{'strategy':<13}{'mean votes':>11}{'sd':>8}{'min':>7}{'max':>7}{'reached':>9}{'ratio to random':>17}")
    for strategy in STRATEGIES:
        votes = [v for v, _ in results[strategy]]
        sd = statistics.stdev(votes) if len(votes) > 1 else 0.0
        reached = sum(r for _, r in results[strategy])
        print(f"{strategy:<13}{statistics.mean(votes):>11.0f}{sd:>8.0f}{min(votes):>7}{max(votes):>7}{reached:>6}/{len(votes):<2}{statistics.mean(votes) / baseline:>17.2f}")


if __name__ == "__main__":
    main()
