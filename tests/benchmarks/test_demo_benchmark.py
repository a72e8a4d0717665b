"""The demo's judge benchmark: made from the demo study's test split, labelled demo data, a non-empty leaderboard, added once."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from scoring.benchmarks.demo import CHANCE_LABEL, DEMO_BENCHMARK, DEMO_TEAM, SIGNAL_LABEL
from scoring.benchmarks.models import Benchmark, Submission
from scoring.demo import demo_judges_seed, demo_signal_run
from scoring.models import ScoringRun
from tests.benchmarks.helpers import known_study
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def test_the_demo_benchmark_has_a_leaderboard_and_is_added_once(django_capture_on_commit_callbacks):
    study, _ = known_study(n_pairs=8, name="demo")
    UserFactory(username="researcher", roles=["researcher"])
    demo_judges_seed()
    with django_capture_on_commit_callbacks(execute=True):
        run = demo_signal_run(study=study)
    run.refresh_from_db()
    assert run.state == ScoringRun.State.DONE
    out = io.StringIO()
    call_command("seed_demo_benchmark", stdout=out)
    bench = Benchmark.objects.get(name=DEMO_BENCHMARK)
    assert bench.n_items == 8 and "demo data" in bench.title and "demo data" in out.getvalue()
    subs = {s.label: s for s in Submission.objects.filter(benchmark=bench)}
    assert set(subs) == {CHANCE_LABEL, SIGNAL_LABEL}
    assert all(s.state == Submission.State.DONE and s.team.name == DEMO_TEAM for s in subs.values())
    # The signal judge's submission is its existing demo run, not a second one.
    assert subs[SIGNAL_LABEL].scoring_run_id == run.pk and ScoringRun.objects.count() == 1
    assert subs[SIGNAL_LABEL].predictions.exclude(musicality=-1).count() == 8

    reader = UserFactory(username="r-demo", roles=["researcher"])
    # The reliability plot draws on the private part too, which the study rule opens to the study's reader.
    study.collaborators.add(reader)
    client = Client()
    client.force_login(reader)
    page = client.get(f"/benchmarks/{DEMO_BENCHMARK}/").content.decode()
    assert "Demo judge benchmark (demo data)" in page
    assert SIGNAL_LABEL in page and CHANCE_LABEL in page and "No submission yet" not in page
    assert len(client.get(f"/api/benchmarks/{DEMO_BENCHMARK}/leaderboard/").json()["rows"]) == 2
    # The coin-flip file states probabilities: its page draws a reliability plot.
    assert "reliability-plot" in client.get(f"/benchmarks/submissions/{subs[CHANCE_LABEL].pk}/").content.decode()

    call_command("seed_demo_benchmark", stdout=io.StringIO())
    assert Benchmark.objects.count() == 1 and Submission.objects.count() == 2


def test_a_signal_run_still_going_is_collected_later(django_capture_on_commit_callbacks):
    study, _ = known_study(n_pairs=4, name="demo")
    demo_judges_seed()
    with django_capture_on_commit_callbacks(execute=False):
        demo_signal_run(study=study)  # queued, not run
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        call_command("seed_demo_benchmark", stdout=io.StringIO())
    signal = Submission.objects.get(label=SIGNAL_LABEL)
    assert signal.state == Submission.State.RUNNING and len(callbacks) == 1


def test_without_the_demo_study_it_says_what_to_run():
    with pytest.raises(CommandError, match="run seed_demo first"):
        call_command("seed_demo_benchmark", stdout=io.StringIO())
