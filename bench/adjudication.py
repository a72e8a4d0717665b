"""How well the adjudication queue finds the pairs whose crowd label is wrong, against a random queue of the same size.

    .venv/bin/python bench/adjudication.py [--pairs 600] [--votes 3] [--annotators 30] [--seeds 5] [--sqlite]

Each simulated study has `pairs` pairs with a true winner per dimension; every pair gets `votes` votes from distinct
annotators drawn from the pool, and one position-consistent judge verdict per pair. Two crowds:

  - `honest`: every annotator right with a personal accuracy drawn from U(0.6, 0.95);
  - `spammers`: the same, but 30% of the pool answers at random (accuracy 0.5).

The judge is right with probability 0.75 on each dimension. A pair is *wrong* when, on a dimension, its strict
majority names the other clip or there is no strict majority (a tie, which a reader cannot use either).

The votes go into a scratch database and the queue is built by the platform's own code
(`annotation.adjudication_selectors.adjudication_queue`). An adjudicator settles the first pairs of the queue, as
many as a budget allows (10% and 25% of the study's pairs). Printed per crowd and budget: the queue's share of the
pairs, the share of wrong pairs, and the precision of the pairs settled (share of them that are wrong), as the
mean over seeds with the range over seeds; the baseline is the same number of pairs drawn at random, whose expected
precision is the share of wrong pairs; the gain over it with a 95% interval from resampling pairs within each seed
(averaged over seeds); and the time to build the queue (median over seeds).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _setup import django_setup  # noqa: E402

CROWDS = {"honest": 0.0, "spammers": 0.3}
JUDGE_ACCURACY = 0.75
BUDGETS = (0.10, 0.25)
DIMENSIONS = ("alignment", "musicality")


def simulate_study(*, name: str, pairs: int, votes: int, annotators: int, spam: float, seed: int):
    """Write one simulated study; returns pair id -> whether its crowd label is wrong on a dimension."""
    from decimal import Decimal

    from django.contrib.auth import get_user_model

    from annotation.models import AnnotatorProfile, Clip, Condition, Judgment, Pair, Study
    from scoring.models import Judge, ScoringRun, Verdict

    rng = np.random.default_rng(seed)
    accuracy = rng.uniform(0.6, 0.95, annotators)
    accuracy[rng.random(annotators) < spam] = 0.5
    users = get_user_model().objects.bulk_create([get_user_model()(username=f"{name}-u{i}") for i in range(annotators)])
    AnnotatorProfile.objects.bulk_create([AnnotatorProfile(user=u, pseudonym=f"{name}-p{i}", consented_at="2026-01-01T00:00:00Z") for i, u in enumerate(users)])
    study = Study.objects.create(name=name)
    clips = Clip.objects.bulk_create([Clip(sha256=f"{name}-{i:08d}", file=f"bench/{name}-{i}.wav", duration=1.0, sample_rate=16000, channels=1) for i in range(2 * pairs)])
    conditions = Condition.objects.bulk_create([Condition(prompt=f"{name} prompt {i}", content_key=f"{name}-{i}", modality="text") for i in range(pairs)])
    made = Pair.objects.bulk_create(
        [Pair(study=study, condition=conditions[i], clip_a=clips[2 * i], clip_b=clips[2 * i + 1], clip_key=Pair.key_for(clips[2 * i].pk, clips[2 * i + 1].pk)) for i in range(pairs)]
    )
    run = ScoringRun.objects.create(judge=Judge.objects.get_or_create(key="bench-judge", defaults={"kind": Judge.Kind.SIGNAL})[0], study=study)
    judgments, verdicts, wrong = [], [], {}
    for pair in made:
        truth = {dim: int(rng.integers(0, 2)) for dim in DIMENSIONS}  # 1: clip_a wins
        voters = rng.choice(annotators, size=votes, replace=False)
        said = {dim: [] for dim in DIMENSIONS}
        for v in voters:
            choice = {}
            for dim in DIMENSIONS:
                right = rng.random() < accuracy[v]
                a_wins = truth[dim] if right else 1 - truth[dim]
                said[dim].append(a_wins)
                choice[dim] = pair.clip_a if a_wins else pair.clip_b
            judgments.append(
                Judgment(
                    annotator=users[v], pair=pair, a_clip=pair.clip_a, alignment_choice=choice["alignment"], musicality_choice=choice["musicality"],
                    alignment_confidence=Decimal("3.0"), musicality_confidence=Decimal("3.0"),
                )
            )  # fmt: skip
        wrong[pair.pk] = any(2 * sum(said[dim]) == votes or (2 * sum(said[dim]) > votes) != bool(truth[dim]) for dim in DIMENSIONS)
        judge = {dim: truth[dim] if rng.random() < JUDGE_ACCURACY else 1 - truth[dim] for dim in DIMENSIONS}
        verdicts.append(Verdict(run=run, pair=pair, status="ok", **{f"{dim}_choice": pair.clip_a if judge[dim] else pair.clip_b for dim in DIMENSIONS}))
    Judgment.objects.bulk_create(judgments, batch_size=2000)
    Verdict.objects.bulk_create(verdicts, batch_size=2000)
    return study, wrong


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=600)
    parser.add_argument("--votes", type=int, default=3)
    parser.add_argument("--annotators", type=int, default=30)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--sqlite", action="store_true", help="a scratch SQLite file instead of PostgreSQL")
    args = parser.parse_args()
    if args.sqlite:
        import os

        os.environ["BENCH_DATABASE_URL"] = "sqlite"
    django_setup("bench_adjudication")
    from annotation.adjudication_selectors import adjudication_queue

    print(f"{args.pairs} pairs x {args.votes} votes, {args.annotators} annotators, judge accuracy {JUDGE_ACCURACY}, {args.seeds} seeds")
    print("crowd     budget  queue share  wrong share  precision (range)     gain over random [95% CI]   build ms")
    for crowd, spam in CROWDS.items():
        runs = []
        for seed in range(args.seeds):
            study, wrong = simulate_study(name=f"{crowd}-{seed}", pairs=args.pairs, votes=args.votes, annotators=args.annotators, spam=spam, seed=seed)
            started = time.perf_counter()
            order = [item.pair_id for item in adjudication_queue(study=study)]
            runs.append((wrong, order, (time.perf_counter() - started) * 1000))
        for budget in BUDGETS:
            shares, base, precisions, gains, lows, highs = [], [], [], [], [], []
            for seed, (wrong, order, _) in enumerate(runs):
                k = min(len(order), int(round(budget * len(wrong))))
                settled = np.array([wrong[i] for i in order[:k]], dtype=float)
                everyone = np.array(list(wrong.values()), dtype=float)
                shares.append(len(order) / len(wrong))
                base.append(everyone.mean())
                precisions.append(settled.mean() if k else float("nan"))
                gains.append(precisions[-1] - base[-1])
                rng = np.random.default_rng(1000 + seed)
                boot = settled[rng.integers(0, k, size=(args.resamples, k))].mean(1) - everyone[rng.integers(0, len(everyone), size=(args.resamples, len(everyone)))].mean(1)
                lows.append(float(np.percentile(boot, 2.5)))
                highs.append(float(np.percentile(boot, 97.5)))
            print(
                f"{crowd:<9} {budget:>5.0%}  {np.mean(shares):>10.3f}  {np.mean(base):>11.3f}  {np.mean(precisions):.3f} ({min(precisions):.3f}-{max(precisions):.3f})   "
                f"{np.mean(gains):+.3f} [{np.mean(lows):+.3f}, {np.mean(highs):+.3f}]     {statistics.median(t for _, _, t in runs):>7.1f}"
            )
    print("baseline: the same number of pairs drawn at random; its precision is the wrong share")


if __name__ == "__main__":
    main()
