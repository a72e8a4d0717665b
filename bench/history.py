"""Does `next` stay flat as an annotator's history grows? Next-pair time at a long history vs a fresh start.

    .venv/bin/python bench/history.py [--pairs 12000] [--history 4000] [--samples 200]

One study with --pairs pairs (bulk-imported). One annotator judges --history pairs, then
--samples more are timed (next only; each is then submitted). Baseline (same run): the
same engine, same study, a second annotator's first --samples pairs. The ratio is long
history over fresh: a cost that counts the annotator's past (or the study's pairs) on
every request shows up here, and in nothing the load bench's short histories can see.
Set BENCH_DATABASE_URL=sqlite to run on SQLite.
"""

from __future__ import annotations

import argparse
import statistics
import time
from datetime import timedelta

from _setup import django_setup, percentile


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=12000)
    parser.add_argument("--history", type=int, default=4000)
    parser.add_argument("--samples", type=int, default=200)
    args = parser.parse_args()
    django_setup("auditorium_bench_history")

    from django.contrib.auth import get_user_model
    from django.db import connection

    from annotation import services
    from annotation.models import Clip, Pair, Study

    study = Study.objects.create(name="history", overlap_target=2, overlap_share=1.0, min_listen_seconds=0.0)
    condition, _ = services.condition_get_or_create(prompt="bench prompt history")
    clips = Clip.objects.bulk_create(
        [Clip(sha256=f"{i:064d}", file=f"bench/h{i}.wav", duration=1.0, sample_rate=16000, channels=1) for i in range(args.pairs + 1)]
    )
    Pair.objects.bulk_create(
        [Pair(study=study, condition=condition, clip_a=clips[i], clip_b=clips[i + 1], clip_key=Pair.key_for(clips[i].pk, clips[i + 1].pk), overlap=2) for i in range(args.pairs)]
    )
    services.planner_stats_refresh(Pair, Clip)  # as the importer does after a bulk load

    User = get_user_model()

    def annotator(name: str):
        user = User.objects.create(username=name)
        services.study_annotator_add(study=study, user=user)
        services.consent_give(user=user)
        return user

    def cycles(user, n: int, timed: list | None = None) -> None:
        for _ in range(n):
            t0 = time.perf_counter()
            held = services.assignment_next(study=study, annotator=user)
            if timed is not None:
                timed.append(time.perf_counter() - t0)
            services.judgment_submit(
                assignment_id=held.pk, annotator=user, alignment="A", alignment_confidence=3, musicality="A", musicality_confidence=3,
                listening_log={"A": {"plays": 1, "seconds": 0}, "B": {"plays": 1, "seconds": 0}}, idempotency_key=f"{user.pk}-{held.pk}",
                now=held.served_at + timedelta(seconds=1),
            )

    veteran, newcomer = annotator("veteran"), annotator("newcomer")
    t0 = time.perf_counter()
    cycles(veteran, args.history)
    built = time.perf_counter() - t0
    services.planner_stats_refresh(Pair, Clip)
    fresh: list[float] = []
    long: list[float] = []
    # Interleaved in blocks, so a drift of the machine's pace hits both alike.
    block = max(1, min(20, args.samples))
    for _ in range(args.samples // block):
        cycles(newcomer, block, fresh)
        cycles(veteran, block, long)
    ms = lambda s: s * 1000  # noqa: E731
    print(f"database: {connection.vendor}; {args.pairs} pairs; history of {args.history} judgments built in {built:.1f} s")
    print(f"baseline (fresh annotator, 0-{len(fresh)} judgments): next median {ms(statistics.median(fresh)):.2f} ms, p99 {ms(percentile(fresh, 99)):.2f} ms")
    print(f"long history ({args.history}-{args.history + len(long)} judgments): next median {ms(statistics.median(long)):.2f} ms, p99 {ms(percentile(long, 99)):.2f} ms")
    print(f"ratio long/fresh: median x{statistics.median(long) / statistics.median(fresh):.2f}")


if __name__ == "__main__":
    main()
