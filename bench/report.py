"""The study report on 100,000 synthetic votes, against a naive per-pair Python loop measured in the same run.

    .venv/bin/python bench/report.py [--votes 100000] [--bootstrap 1000] [--repeat 3]
    .venv/bin/python bench/report.py --db     # also: store the votes in a scratch database and time report_build end to end
    .venv/bin/python bench/report.py --votes 2000 --repeat 1 --crowdkit   # instead: the report with crowd-kit's point fits vs numpy's

What is timed:
  1. agreement point estimates (rate + Krippendorff's alpha, both dimensions):
     vectorised (scoring.agreement, no bootstrap) vs a plain Python loop over pairs and vote pairs;
     both must give the same numbers.
  2. one bootstrap round of the agreement figures: vectorised (all rounds at once, divided) vs the
     naive loop re-run on a resample of pairs (a few rounds, divided).
  3. the whole report computation (agreement with bootstrap, confidence, position bias, annotators,
     two judges with breakdowns) on frames; with --db, report_build from the database as well.
  4. the whole report computed the old way (ReportOptions(legacy=True): crowd intervals from 200
     refits per model and dimension, MACE by plain EM, the judges' pair-level interval drawn pair
     by pair) beside the default, CPU seconds of both, and every figure that differs between them
     (--no-legacy skips it: the old way takes minutes at 100,000 votes).
  5. with --crowdkit, instead of 1-4 (it runs on a handful of votes too): the whole report with the Dawid–Skene and MACE point fits done by crowd-kit (as
     the report did before common.crowd fitted them in numpy), CPU seconds of both, and how far the two
     fits' P(first clip), reliability and labels lie apart on this data.
Baseline and subject run in the same process on the same data; medians of --repeat runs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
MODALITIES = ["text", "text+lyrics", "text+ref", "text+lyrics+ref"]


def synthetic(votes_wanted: int, seed: int = 0):
    """Votes, pairs and two judges' verdicts shaped like a real study: ~45% of pairs overlapped, 300 annotators."""
    rng = np.random.default_rng(seed)
    sizes = []
    while sum(sizes) < votes_wanted:
        sizes.append(int(rng.choice([1, 2, 3, 5], p=[0.55, 0.2, 0.15, 0.1])))
    sizes[-1] -= sum(sizes) - votes_wanted
    sizes = np.array([s for s in sizes if s > 0])
    n_pairs = len(sizes)
    pair_id = np.repeat(np.arange(n_pairs), sizes)
    clip_a, clip_b = 2 * pair_id, 2 * pair_id + 1
    accuracy = rng.uniform(0.55, 0.95, size=300)
    annotator = rng.integers(0, 300, size=len(pair_id))
    truth_a = np.repeat(rng.random(n_pairs) < 0.5, sizes)
    frame = {"judgment_id": np.arange(len(pair_id)), "pair_id": pair_id, "annotator_id": annotator, "excluded": False, "clip_a": clip_a, "clip_b": clip_b}
    frame["pseudonym"] = np.array([f"a-{i:03d}" for i in range(300)], dtype=object)[annotator]
    frame["a_clip"] = np.where(rng.random(len(pair_id)) < 0.5, clip_a, clip_b)
    for dim in ("alignment", "musicality"):
        right = rng.random(len(pair_id)) < accuracy[annotator]
        frame[f"{dim}_choice"] = np.where(right == truth_a, clip_a, clip_b)
        frame[f"{dim}_confidence"] = rng.integers(2, 11, size=len(pair_id)) / 2.0
    frame["time_on_page_ms"] = rng.integers(15000, 90000, size=len(pair_id))
    frame["heard_a"] = rng.uniform(5, 30, size=len(pair_id))
    frame["heard_b"] = rng.uniform(5, 30, size=len(pair_id))
    frame["rationale_length"] = np.where(rng.random(len(pair_id)) < 0.64, rng.integers(20, 200, size=len(pair_id)), 0)
    frame["kind"] = np.where(rng.random(len(pair_id)) < 0.05, "gold", "regular")
    truth_clip = np.where(truth_a, clip_a, clip_b).astype(float)
    frame["expected_alignment"] = np.where(frame["kind"] == "gold", truth_clip, np.nan)
    frame["expected_musicality"] = frame["expected_alignment"]
    frame["modality"] = np.array(MODALITIES)[pair_id % 4]
    votes = pd.DataFrame(frame)
    pairs = pd.DataFrame({"clip_a": 2 * np.arange(n_pairs), "clip_b": 2 * np.arange(n_pairs) + 1, "modality": np.array(MODALITIES)[np.arange(n_pairs) % 4]}, index=pd.Index(np.arange(n_pairs), name="pair_id"))
    truth_pair = rng.random(n_pairs) < 0.5
    verdict_parts = []
    for run_id, (skill, discard) in enumerate(((0.7, 0.0), (0.62, 0.1)), start=1):
        status = np.where(rng.random(n_pairs) < discard, "discarded", "ok")
        part = {"run_id": run_id, "pair_id": np.arange(n_pairs), "status": status}
        for dim in ("alignment", "musicality"):
            right = rng.random(n_pairs) < skill
            part[f"{dim}_choice"] = np.where(status == "ok", np.where(right == truth_pair, 2 * np.arange(n_pairs), 2 * np.arange(n_pairs) + 1), np.nan).astype(float)
            part[f"{dim}_score_a"] = np.nan
            part[f"{dim}_score_b"] = np.nan
        verdict_parts.append(pd.DataFrame(part))
    verdicts = pd.concat(verdict_parts, ignore_index=True)
    sources = [{"source": "run", "id": i, "judge": f"judge-{i}", "judge_kind": "signal", "label": f"judge {i}", "template": "", "state": "done", "created_at": ""} for i in (1, 2)]
    return votes, pairs, verdicts, sources


def naive_agreement(records: list[tuple[int, int, int]]) -> dict:
    """Agreement rate and nominal alpha per dimension with dicts and loops: the obvious way to write it."""
    by_pair: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for pair_id, a, m in records:
        by_pair[pair_id].append((a, m))
    out = {}
    for d, dim in enumerate(("alignment", "musicality")):
        agree = total = 0
        o = [[0.0, 0.0], [0.0, 0.0]]
        for answers in by_pair.values():
            size = len(answers)
            if size < 2:
                continue
            for x, y in combinations(answers, 2):
                total += 1
                agree += x[d] == y[d]
            for i in range(size):
                for j in range(size):
                    if i != j:
                        o[answers[i][d]][answers[j][d]] += 1.0 / (size - 1)
        n0, n1 = o[0][0] + o[0][1], o[1][0] + o[1][1]
        alpha = 1.0 - (n0 + n1 - 1.0) * o[0][1] / (n0 * n1)
        out[dim] = {"agreement_rate": agree / total, "alpha": alpha}
    return out


def median_time(fn, repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def median_cpu(fn, repeat: int) -> tuple[float, float, object]:
    """Median CPU seconds (time.process_time) and wall seconds of `repeat` calls, and the last result."""
    cpu, wall, result = [], [], None
    for _ in range(repeat):
        c0, w0 = time.process_time(), time.perf_counter()
        result = fn()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return statistics.median(cpu), statistics.median(wall), result


def profiled(fn):
    """fn under cProfile, printing the report's own functions by cumulative time after each call."""
    import cProfile
    import pstats

    def run():
        profiler = cProfile.Profile()
        result = profiler.runcall(fn)
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(r"(common|scoring)/[a-z_]+\.py", 12)
        return result

    return run


def crowdkit_point_fits(seed: int = 0):
    """Replacements for common.crowd's numpy point fits that call crowd-kit instead, with the report's old settings."""
    from common import crowd

    def ds_params(codes):
        _, errors, prior1 = crowd.ds_state(codes)
        return errors[:, 0, 0], errors[:, 1, 1], prior1

    def frame(codes):
        return pd.DataFrame({"worker": codes["worker_names"][codes["worker"]], "task": codes["item_names"][codes["item"]], "label": codes["label"]})

    # The interval's parameters (third value) stay numpy's: only the point fits are swapped.
    return {
        "_dawid_skene": lambda codes: (*crowd.ds_crowdkit(frame(codes)), ds_params(codes)),
        "_mace": lambda codes, **_: (*crowd.mace_crowdkit(frame(codes), seed, restarts=3, iterations=50), crowd.mace_fit(codes, strategy=True)[3]),
    }


def frame_crowdkit_order(codes) -> pd.DataFrame:
    """The votes ordered so that crowd-kit's MACE reads its counts back right: a 0 vote first, workers named by first appearance."""
    label = codes["label"]
    order = np.r_[int(np.flatnonzero(label == 0)[0]), np.flatnonzero(label == 1), np.flatnonzero(label == 0)[1:]]
    frame = pd.DataFrame({"worker": codes["worker"][order], "task": codes["item"][order], "label": label[order]})
    frame["worker"] = pd.factorize(frame["worker"])[0]
    return frame


def crowdkit_comparison(votes: pd.DataFrame, compute, seed: int, repeat: int, profile: bool = False) -> None:
    """The report with crowd-kit's point fits vs numpy's (CPU), and the two fits side by side on each dimension."""
    from common import crowd

    if profile:
        compute = profiled(compute)

    numpy_fits = {name: getattr(crowd, name) for name in ("_dawid_skene", "_mace")}
    crowd._crowdkit()  # its import (nltk and friends, seconds) is paid once per process: not timed here
    try:
        for name, fit in crowdkit_point_fits(seed).items():
            setattr(crowd, name, fit)
        cpu_ck, wall_ck, _ = median_cpu(compute, repeat)
    finally:
        for name, fit in numpy_fits.items():
            setattr(crowd, name, fit)
    cpu_np, wall_np, _ = median_cpu(compute, repeat)
    print(f"full report on frames, point fits by crowd-kit: {cpu_ck:.2f} s CPU ({wall_ck:.2f} s wall); "
          f"by numpy: {cpu_np:.2f} s CPU ({wall_np:.2f} s wall) -> {cpu_ck / cpu_np:.1f}x")
    two_valued = votes[~votes["tie_any"] & ~votes["excluded"]]
    for dim in ("alignment", "musicality"):
        two = two_valued[two_valued[f"pref_{dim}"].notna()]
        codes = crowd._codes(crowd._frame(two["annotator_id"].to_numpy(), two["pair_id"].to_numpy(), two[f"pref_{dim}"].to_numpy()))
        for name, fit in crowdkit_point_fits(seed).items():
            p_ck, rel_ck, _ = fit(codes)
            p_np, rel_np, _ = numpy_fits[name](codes)
            label_ck, label_np = crowd._label(p_ck), crowd._label(p_np)
            differ = int((label_ck.fillna(-1) != label_np.reindex(label_ck.index).fillna(-1)).sum())
            print(f"  {dim} {name.strip('_')}: max |P(first) numpy - crowd-kit| {np.abs(p_np.reindex(p_ck.index) - p_ck).max():.2e}, "
                  f"max |reliability diff| {np.abs(rel_np.reindex(rel_ck.index) - rel_ck).max():.2e}, labels differ on {differ} of {len(label_ck)} pairs")
            if name == "_mace":
                # crowd-kit's MACE draws its start by the annotators' order of appearance: the same votes, rows reversed.
                reverse = {key: (value[::-1] if key in ("item", "worker", "label") else value) for key, value in codes.items()}
                p_rev, rel_rev, _ = fit(reverse)
                differ = int((label_ck.fillna(-1) != crowd._label(p_rev).reindex(label_ck.index).fillna(-1)).sum())
                print(f"  {dim} mace, crowd-kit against itself on the rows reversed: max |P(first) diff| {np.abs(p_rev.reindex(p_ck.index) - p_ck).max():.2e}, "
                      f"max |reliability diff| {np.abs(rel_rev.reindex(rel_ck.index) - rel_ck).max():.2e}, labels differ on {differ} of {len(label_ck)} pairs")
                # crowd-kit's model from crowd-kit's own start (the numpy port, equal to crowd-kit at 50 iterations
                # in the tests) run to convergence: how much of the gap is its 50 iterations, how much another optimum.
                aligned = crowd._codes(frame_crowdkit_order(codes))
                q_ck, know_ck, loglik_ck = crowd.mace_fit(aligned, start=crowd.mace_crowdkit_start(aligned["workers"], seed), iterations=20_000)
                q_np, know_np, loglik_np = crowd.mace_fit(aligned, iterations=20_000)
                print(f"  {dim} mace, both starts run to convergence: max |P(first) diff| {np.abs(q_ck - q_np).max():.2e}, max |reliability diff| "
                      f"{np.abs(know_ck - know_np).max():.2e}, labels differ on {int(((q_ck > 0.5) != (q_np > 0.5)).sum())}; log-likelihood "
                      f"crowd-kit's start {loglik_ck:.3f}, majority start {loglik_np:.3f}")


def differences(old, new, path="") -> list[tuple[str, object, object]]:
    """Every leaf where two JSON-like reports differ: (path, old, new)."""
    if isinstance(old, dict) and isinstance(new, dict):
        return [d for key in sorted(set(old) | set(new), key=str) for d in differences(old.get(key), new.get(key), f"{path}.{key}")]
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [d for i, (a, b) in enumerate(zip(old, new, strict=True)) for d in differences(a, b, f"{path}[{i}]")]
    return [] if old == new else [(path, old, new)]


def compare_legacy(compute, options, repeat: int) -> None:
    """CPU of the report computed the old way and the default way in this process, and which figures moved, by how much."""
    import re
    from dataclasses import replace

    cpu_old, wall_old, (old, _) = median_cpu(lambda: compute(replace(options, legacy=True)), 1)
    cpu_new, wall_new, (new, _) = median_cpu(lambda: compute(options), repeat)
    print(f"full report on frames, old path (ReportOptions(legacy=True): bootstrap crowd intervals, plain-EM MACE, pair-by-pair judge draws): "
          f"{cpu_old:.2f} s CPU ({wall_old:.2f} s wall); default: {cpu_new:.2f} s CPU ({wall_new:.2f} s wall) -> {cpu_old / cpu_new:.1f}x")
    groups: dict[str, list] = defaultdict(list)
    for path, a, b in differences(old, new):
        # Group by the path with list positions and annotator / pair ids taken out: one line per kind of figure.
        groups[re.sub(r"\[\d+\]", "[]", path)].append((a, b))
    same = not groups
    print("  figures that differ between the two:" + (" none" if same else ""))
    for key, pairs in sorted(groups.items()):
        gaps = [abs(a - b) for a, b in pairs if isinstance(a, (int, float)) and isinstance(b, (int, float))]
        gap = f"max |old - new| {max(gaps):.4f}, mean {statistics.mean(gaps):.4f}" if gaps else "not numbers: " + repr(pairs[:2])
        print(f"    {key}: {len(pairs)} values, {gap}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--votes", type=int, default=100_000)
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--naive-rounds", type=int, default=5, help="bootstrap rounds the naive loop runs (each is a full pass)")
    parser.add_argument("--crowdkit", action="store_true", help="instead: the report with crowd-kit's Dawid-Skene and MACE point fits vs numpy's (slow: a few thousand votes at most)")
    parser.add_argument("--profile", action="store_true", help="with --crowdkit: cProfile each report run (CPU figures then include the profiler)")
    parser.add_argument("--no-legacy", action="store_true", help="skip timing the report the old way (ReportOptions.legacy) beside the default")
    parser.add_argument("--db", action="store_true", help="also time report_build from a scratch database (BENCH_DATABASE_URL, default local PostgreSQL)")
    args = parser.parse_args()

    if args.db:
        sys.path.insert(0, str(ROOT / "bench"))
        from _setup import django_setup

        django_setup("auditorium_bench_report")
    else:
        sys.path[:0] = [str(ROOT), str(ROOT / "platform")]
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "auditorium.settings")
        os.environ.setdefault("DJANGO_DEBUG", "true")
        os.environ.setdefault("SQLITE_PATH", str(Path(tempfile.mkdtemp()) / "bench.sqlite3"))
        os.environ.setdefault("LOG_LEVEL", "WARNING")
        import django

        django.setup()

    from scoring import agreement, report

    raw_votes, pairs, verdicts, sources = synthetic(args.votes)
    votes = agreement.votes_frame_prepare(raw_votes)
    multi = int((votes.groupby("pair_id").size() >= 2).sum())
    print(f"data: {len(votes):,} votes on {votes['pair_id'].nunique():,} pairs ({multi:,} with >=2 votes), {votes['annotator_id'].nunique()} annotators, 2 judges x {len(pairs):,} verdicts")
    options = report.ReportOptions(rounds=args.bootstrap)
    if args.crowdkit:
        compute = lambda: report.report_compute(votes=votes, verdicts=verdicts, pairs=pairs, sources=sources, options=options)  # noqa: E731
        crowdkit_comparison(votes, compute, options.seed, args.repeat, profile=args.profile)
        return

    # 1. Point estimates: vectorised vs naive loop, same numbers.
    records = list(zip(votes["pair_id"].tolist(), votes["pref_alignment"].tolist(), votes["pref_musicality"].tolist(), strict=True))
    def vectorised_core():
        # The same work as the naive loop: rate and nominal alpha per dimension, nothing else.
        out = {}
        for dim in ("alignment", "musicality"):
            counts = agreement.pair_counts(votes, dim)
            units = counts[counts["n"] >= 2]
            sums = agreement.nominal_unit_stats(units["n"].to_numpy(), units["k"].to_numpy()).sum(axis=0)
            out[dim] = {"agreement_rate": sums[1] / sums[0], "alpha": float(agreement.alpha_nominal_from_sums(sums))}
        return out

    t_core, core = median_time(vectorised_core, args.repeat)
    t_vec, vec = median_time(lambda: agreement.agreement_report(votes, rounds=0), args.repeat)
    t_naive, naive = median_time(lambda: naive_agreement(records), args.repeat)
    for dim in ("alignment", "musicality"):
        assert abs(core[dim]["agreement_rate"] - naive[dim]["agreement_rate"]) < 1e-12 and abs(core[dim]["alpha"] - naive[dim]["alpha"]) < 1e-9, (core[dim], naive[dim])
        assert abs(vec[dim]["agreement_rate"] - round(naive[dim]["agreement_rate"], 4)) < 1e-9, (vec[dim], naive[dim])
        assert abs(vec[dim]["alpha"] - round(naive[dim]["alpha"], 4)) < 1e-9, (vec[dim], naive[dim])
    print(f"agreement rate + alpha, both dimensions (same numbers): vectorised {t_core * 1000:.0f} ms, naive loop {t_naive * 1000:.0f} ms -> {t_naive / t_core:.1f}x")
    print(f"  agreement_report without bootstrap (adds buckets by confidence, ordinal alpha of confidence, alpha via the krippendorff package): {t_vec * 1000:.0f} ms")

    # 2. Bootstrap cost per round.
    t_boot, _ = median_time(lambda: agreement.agreement_report(votes, rounds=args.bootstrap, seed=0), args.repeat)
    by_pair = defaultdict(list)
    for record in records:
        by_pair[record[0]].append(record)
    keys = list(by_pair)
    rng = np.random.default_rng(0)

    def naive_rounds():
        for _ in range(args.naive_rounds):
            sample = rng.integers(0, len(keys), size=len(keys))
            resampled = [(i, a, m) for i, k in enumerate(sample) for (_, a, m) in by_pair[keys[k]]]
            naive_agreement(resampled)

    t_naive_boot, _ = median_time(naive_rounds, 1)
    per_vec = (t_boot - t_vec) / args.bootstrap
    per_naive = t_naive_boot / args.naive_rounds
    print(f"bootstrap, per round: vectorised {per_vec * 1000:.2f} ms ({args.bootstrap} rounds in {t_boot:.2f} s incl. estimates), "
          f"naive {per_naive * 1000:.0f} ms ({args.naive_rounds} rounds measured) -> {per_naive / per_vec:.0f}x")

    # 3. The whole report computation on frames.
    t_full, body = median_time(lambda: report.report_compute(votes=votes, verdicts=verdicts, pairs=pairs, sources=sources, options=options), args.repeat)
    t_naive_report = t_naive + args.bootstrap * per_naive
    print(f"full report on frames ({args.bootstrap} bootstrap rounds, {len(body[0]['annotators'])} annotators, 2 judges): {t_full:.2f} s; "
          f"the naive loop needs {t_naive_report:.0f} s for the agreement figures alone ({args.bootstrap} x {per_naive * 1000:.0f} ms, from the rounds measured above) -> {t_naive_report / t_full:.0f}x")

    # 4. The same report the old way (ReportOptions.legacy) and the default, CPU seconds, and where their figures differ.
    if not args.no_legacy:
        compare_legacy(lambda opts: report.report_compute(votes=votes, verdicts=verdicts, pairs=pairs, sources=sources, options=opts), options, args.repeat)

    if args.db:
        time_from_database(raw_votes, pairs, verdicts, options, args.repeat)


def time_from_database(raw_votes: pd.DataFrame, pairs: pd.DataFrame, verdicts: pd.DataFrame, options, repeat: int) -> None:
    """Store the same votes as rows and time report_build (loading included), uncached."""
    from django.contrib.auth import get_user_model
    from django.db import connection

    from annotation.models import AnnotatorProfile, Clip, Condition, Judgment, Pair, Study
    from scoring import report
    from scoring.models import Judge, ScoringRun, Verdict

    started = time.perf_counter()
    study = Study.objects.create(name="bench-report")
    conditions = [Condition.objects.create(prompt=f"bench {m}", modality=m, content_key=f"bench-{m}") for m in MODALITIES]
    clip_ids = Clip.objects.bulk_create(
        [Clip(sha256=f"{i:064d}", file=f"bench/{i}.wav", duration=10.0, sample_rate=16000, channels=1) for i in range(2 * len(pairs))], batch_size=5000
    )
    clip_pk = [c.pk for c in clip_ids]
    pair_objs = Pair.objects.bulk_create(
        [
            Pair(study=study, condition=conditions[i % 4], clip_a_id=clip_pk[2 * i], clip_b_id=clip_pk[2 * i + 1], clip_key=Pair.key_for(clip_pk[2 * i], clip_pk[2 * i + 1]))
            for i in range(len(pairs))
        ],
        batch_size=5000,
    )
    pair_pk = [p.pk for p in pair_objs]
    User = get_user_model()
    users = User.objects.bulk_create([User(username=f"bench-{i:03d}") for i in range(300)])
    AnnotatorProfile.objects.bulk_create([AnnotatorProfile(user=u, pseudonym=f"a-{i:03d}") for i, u in enumerate(users)])
    rows = raw_votes
    Judgment.objects.bulk_create(
        [
            Judgment(
                annotator_id=users[a].pk,
                pair_id=pair_pk[p],
                a_clip_id=clip_pk[int(ac)],
                alignment_choice_id=clip_pk[int(al)],
                alignment_confidence=f"{ca:.1f}",
                musicality_choice_id=clip_pk[int(mu)],
                musicality_confidence=f"{cm:.1f}",
                time_on_page_ms=int(t),
                listening_log={"A": {"plays": 1, "seconds": float(ha)}, "B": {"plays": 1, "seconds": float(hb)}, "switches": 1},
                source=Judgment.Source.IMPORT,
            )
            for a, p, ac, al, ca, mu, cm, t, ha, hb in zip(
                rows["annotator_id"], rows["pair_id"], rows["a_clip"], rows["alignment_choice"], rows["alignment_confidence"],
                rows["musicality_choice"], rows["musicality_confidence"], rows["time_on_page_ms"], rows["heard_a"], rows["heard_b"], strict=True,
            )
        ],
        batch_size=5000,
        ignore_conflicts=True,  # the generator may give one annotator a pair twice; the database keeps one
    )
    for run_id in (1, 2):
        judge = Judge.objects.create(key=f"bench-judge-{run_id}", kind=Judge.Kind.SIGNAL)
        run = ScoringRun.objects.create(judge=judge, study=study, state=ScoringRun.State.DONE)
        part = verdicts[verdicts["run_id"] == run_id]
        Verdict.objects.bulk_create(
            [
                Verdict(
                    run=run,
                    pair_id=pair_pk[int(p)],
                    status=s,
                    alignment_choice_id=None if np.isnan(al) else clip_pk[int(al)],
                    musicality_choice_id=None if np.isnan(mu) else clip_pk[int(mu)],
                )
                for p, s, al, mu in zip(part["pair_id"], part["status"], part["alignment_choice"], part["musicality_choice"], strict=True)
            ],
            batch_size=5000,
        )
    stored = Judgment.objects.filter(pair__study=study).count()
    print(f"database ({connection.vendor}): stored {stored:,} judgments in {time.perf_counter() - started:.1f} s")
    t_db, data = median_time(lambda: report.report_build(study=study, options=options, use_cache=False), repeat)
    print(f"report_build from the database (load + compute + triage + JSON-safe dict): {t_db:.2f} s for {data['study']['votes']:,} votes")


if __name__ == "__main__":
    main()
