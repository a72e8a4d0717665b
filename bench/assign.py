"""Next-pair latency with 50 concurrent annotators on PostgreSQL, and the over-assignment count.

    .venv/bin/python bench/assign.py [--annotators 50] [--pairs 400] [--overlap 3]

Baseline (same run): the same engine driven by one annotator at a time, so the
ratio shows what contention costs. Set BENCH_DATABASE_URL=sqlite to run on SQLite.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from collections import Counter
from datetime import timedelta

from _setup import django_setup, percentile


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--annotators", type=int, default=50)
    parser.add_argument("--pairs", type=int, default=400)
    parser.add_argument("--overlap", type=int, default=3)
    args = parser.parse_args()
    django_setup("auditorium_bench_assign")

    from django.contrib.auth import get_user_model
    from django.db import connection

    from annotation import services
    from annotation.models import Clip, Judgment, Pair, Study

    def build(name: str, n_pairs: int):
        study = Study.objects.create(name=name, overlap_target=args.overlap, overlap_share=1.0, min_listen_seconds=0.0)
        condition, _ = services.condition_get_or_create(prompt=f"bench prompt {name}")
        clips = [
            Clip.objects.create(sha256=f"{name}-{i:060d}"[-64:], file=f"bench/{name}-{i}.wav", duration=1.0, sample_rate=16000, channels=1)
            for i in range(n_pairs + 1)
        ]
        for i in range(n_pairs):
            services.pair_get_or_create(study=study, condition=condition, clip_a=clips[i], clip_b=clips[i + 1], overlap=args.overlap)
        services.planner_stats_refresh(Pair, Clip)  # as the importer does after a bulk load
        return study

    User = get_user_model()

    def annotator(name: str, study):
        user = User.objects.create(username=name)
        services.study_annotator_add(study=study, user=user)
        services.consent_give(user=user)
        return user

    def drive(study, user, latencies, lock):
        """Request, submit, repeat until the study has nothing left for this annotator."""
        mine = []
        try:
            while True:
                t0 = time.perf_counter()
                a = services.assignment_next(study=study, annotator=user)
                mine.append(time.perf_counter() - t0)
                if a is None:
                    break
                services.judgment_submit(
                    assignment_id=a.pk, annotator=user, alignment="A", alignment_confidence=3, musicality="A", musicality_confidence=3,
                    listening_log={"A": {"plays": 1, "seconds": 0}, "B": {"plays": 1, "seconds": 0}}, idempotency_key=f"{user.pk}-{a.pk}",
                    now=a.served_at + timedelta(seconds=1),
                )
        finally:
            connection.close()
            with lock:
                latencies.extend(mine)

    # Baseline: annotators one after another, no contention.
    base_study = build("baseline", args.pairs // 4)
    base_lat: list[float] = []
    lock = threading.Lock()
    for i in range(args.overlap + 1):
        drive(base_study, annotator(f"base{i}", base_study), base_lat, lock)

    study = build("concurrent", args.pairs)
    users = [annotator(f"ann{i}", study) for i in range(args.annotators)]
    latencies: list[float] = []
    threads = [threading.Thread(target=drive, args=(study, u, latencies, lock)) for u in users]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0

    per_pair = Counter(Judgment.objects.filter(pair__study=study).values_list("pair_id", flat=True))
    over = sum(1 for n in per_pair.values() if n > args.overlap)
    repeats = Judgment.objects.filter(pair__study=study).count() - len(set(Judgment.objects.filter(pair__study=study).values_list("annotator_id", "pair_id")))
    ms = lambda s: s * 1000  # noqa: E731
    print(f"database: {connection.vendor}; {args.annotators} annotators, {args.pairs} pairs x overlap {args.overlap}")
    print(f"baseline (1 annotator at a time): next-pair median {ms(statistics.median(base_lat)):.1f} ms, p99 {ms(percentile(base_lat, 99)):.1f} ms ({len(base_lat)} calls)")
    print(f"concurrent ({args.annotators} threads): next-pair median {ms(statistics.median(latencies)):.1f} ms, p99 {ms(percentile(latencies, 99)):.1f} ms ({len(latencies)} calls, {wall:.1f} s wall)")
    print(f"ratio concurrent/baseline: median x{statistics.median(latencies) / statistics.median(base_lat):.2f}, p99 x{percentile(latencies, 99) / percentile(base_lat, 99):.2f}")
    print(f"judgments stored: {sum(per_pair.values())} (expected {args.pairs * args.overlap}); over-assigned pairs: {over}; repeated (annotator, pair): {repeats}")


if __name__ == "__main__":
    main()
