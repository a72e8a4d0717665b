"""Every named route with the URL arguments it needs, and one object of each kind to fill them in."""

from __future__ import annotations

import pytest
from django.urls import URLResolver, get_resolver, reverse

from annotation.models import AnnotatorProfile
from scoring.benchmarks.models import Benchmark, Submission, Team
from scoring.models import BestOfNExperiment, Judge, ScoringRun, TrainingRun
from tests.factories import JudgmentFactory, PairFactory, StudyAnnotatorFactory, StudyFactory


def all_routes() -> dict[str, set[str]]:
    """Route name -> the URL keyword arguments it needs (including those of enclosing includes)."""

    def walk(patterns, namespace="", outer=frozenset()):
        for p in patterns:
            converters = outer | set(getattr(p.pattern, "converters", {}))
            if isinstance(p, URLResolver):
                if p.app_name == "admin":
                    continue
                yield from walk(p.url_patterns, p.namespace or namespace, frozenset(converters))
            elif p.name:
                yield (f"{namespace}:{p.name}" if namespace else p.name), converters

    return dict(walk(get_resolver().url_patterns))


@pytest.fixture
def world(db):
    study = StudyFactory(name="acl")
    pair = PairFactory(study=study)
    member = StudyAnnotatorFactory(study=study).annotator
    judgment = JudgmentFactory(pair=pair, annotator=member)
    judge = Judge.objects.create(key="signal-acl", kind=Judge.Kind.SIGNAL)
    run = ScoringRun.objects.create(judge=judge, study=study)
    training = TrainingRun.objects.create(study=study, feature_judge=judge)
    BestOfNExperiment.objects.create(study=study, prompts=["a calm piano piece"], n=2, ranker=judge)
    pseudonym = AnnotatorProfile.objects.get(user=member).pseudonym
    benchmark = Benchmark.objects.create(name=study.name, study=study)
    submission = Submission.objects.create(benchmark=benchmark, team=Team.objects.create(name="acl-team"), state=Submission.State.DONE)
    kwargs = {
        "name": study.name, "public_id": "00000000-0000-4000-8000-000000000000", "pseudonym": pseudonym, "run_id": run.pk, "table": "annotators", "assignment_id": 1, "training_id": training.pk,
        "submission_id": submission.pk, "token": "not-a-signed-token", "build_id": 1, "team": submission.team.name, "index": 0, "item_id": 1, "which": "a", "link_id": 1, "tie_id": 1,
    }
    return {"study": study, "judgment": judgment, "kwargs": kwargs}


def url_for(full_name: str, converters: set[str], kwargs: dict) -> str:
    return reverse(full_name, kwargs={key: kwargs[key] for key in converters})
