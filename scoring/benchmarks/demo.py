"""The demo's judge benchmark: a small benchmark from the demo study's test split, a demo team and two submissions.

Labelled as demo data everywhere it shows (title, description, team and submission names). Re-running
it adds nothing. The signal judge's submission reuses the signal judge's run on the demo study (queued
by seed_demo_judges): it is collected at once when that run is done, otherwise by the worker when it is.
"""

from __future__ import annotations

import json

import numpy as np
from django.contrib.auth import get_user_model
from django.db import transaction

from annotation.models import Study
from common.errors import ServiceError
from scoring.models import Judge, ScoringRun

from . import runners, services
from .models import Benchmark, Submission, Team

DEMO_BENCHMARK = "demo-judges"
DEMO_TEAM = "demo-team"
SIGNAL_LABEL = "signal judge (demo)"
CHANCE_LABEL = "coin flip (demo file)"
SIGNAL_JUDGE = "signal-technical"


def chance_file(benchmark: Benchmark, *, seed: int = 0) -> bytes:
    """A MIREX-layout file of seeded coin flips with a stated probability, so the submission page has a reliability plot."""
    rng = np.random.default_rng(seed)
    rows = []
    for item_id in benchmark.items.order_by("position").values_list("item_id", flat=True):
        p = round(float(rng.random()), 3)
        rows.append({"id": item_id, "preferred": "A" if p >= 0.5 else "B", "probability_a": p})
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def _signal_submission(benchmark: Benchmark, team: Team) -> Submission | None:
    judge = Judge.objects.filter(key=SIGNAL_JUDGE).first()
    run = ScoringRun.objects.filter(judge=judge, study=benchmark.study).exclude(state=ScoringRun.State.FAILED).order_by("-id").first() if judge else None
    if run is None:
        return None
    with transaction.atomic():
        submission = Submission.objects.create(
            benchmark=benchmark, team=team, label=SIGNAL_LABEL, kind=Submission.Kind.JUDGE, state=Submission.State.RUNNING, judge=judge, scoring_run=run
        )
        if run.state != ScoringRun.State.DONE:
            runners._queue(runners.COLLECT_TASK, submission.pk)
    if run.state == ScoringRun.State.DONE:
        runners.judge_collect(submission_id=submission.pk)
    return submission


def demo_benchmark_seed(*, study_name: str = "demo") -> dict:
    """Create (once) the demo benchmark, its team and its submissions; returns what exists now."""
    study = Study.objects.filter(name=study_name).first()
    if study is None:
        raise ServiceError(f"No study {study_name!r}: run seed_demo first.", code="no_study")
    benchmark = Benchmark.objects.filter(name=DEMO_BENCHMARK).first()
    if benchmark is None:
        benchmark = services.benchmark_create(
            name=DEMO_BENCHMARK,
            title="Demo judge benchmark (demo data)",
            description="Demo data: drawn from the demo study's test split, whose votes are seeded by the demo. Not a measurement of any real judge.",
            study=study,
            seed=0,
            public_share=0.5,
            demo=True,
            bootstrap_rounds=500,
        )
    team, _ = Team.objects.get_or_create(name=DEMO_TEAM, defaults={"benchmark": benchmark})
    researcher = get_user_model().objects.filter(username="researcher").first()
    if researcher is not None:
        team.members.add(researcher)
    labels = set(Submission.objects.filter(benchmark=benchmark, team=team).values_list("label", flat=True))
    if CHANCE_LABEL not in labels:
        services.submission_from_file(benchmark=benchmark, team=team, data=chance_file(benchmark), label=CHANCE_LABEL)
    if SIGNAL_LABEL not in labels:
        _signal_submission(benchmark, team)
    return {
        "benchmark": benchmark,
        "team": team,
        "submissions": list(Submission.objects.filter(benchmark=benchmark, team=team).order_by("id")),
    }
