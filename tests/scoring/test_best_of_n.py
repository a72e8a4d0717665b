"""Best-of-N end to end on the demo's procedural systems: generate, rank with the signal judge, a blind study, simulated
votes that follow the systems' designed ranks, and the human win rate of the ranker's choice."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotation.demo import SYSTEM_NAMES
from annotation.demo.catalogue import DEMO_SYSTEMS
from annotation.demo.seed import SEEDED_VOTERS, seeded_voter
from annotation.demo.votes import demo_rank_votes_seed
from annotation.models import Judgment, Pair, Study
from arena.seed import arena_seed
from common.errors import ServiceError
from scoring import best_of_n
from scoring.demo import DEMO_BEST_OF_N, SIGNAL_JUDGE, demo_best_of_n, demo_judges_seed
from scoring.models import BestOfNCandidate, BestOfNExperiment, Judge
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

PROMPTS = ["Calm piano ballad in C major", "Upbeat synth pop at 120 bpm", "Slow ambient pad with soft strings"]


@pytest.fixture
def world():
    arena_seed()
    demo_judges_seed()
    return UserFactory(username="bon-owner", roles=["researcher"]), Judge.objects.get(key=SIGNAL_JUDGE)


def test_the_loop_ranks_builds_the_study_and_reports_the_rankers_win_rate(world):
    owner, judge = world
    experiment = best_of_n.best_of_n_create(name="bon-e2e", owner=owner, prompts=PROMPTS, n=6, ranker=judge, systems=SYSTEM_NAMES, seconds=3.0, queue=False)
    assert experiment.study.owner == owner and experiment.state == BestOfNExperiment.State.PENDING
    experiment = best_of_n.best_of_n_execute(experiment_id=experiment.pk)
    assert experiment.state == BestOfNExperiment.State.DONE, experiment.error
    candidates = BestOfNCandidate.objects.filter(experiment=experiment)
    assert candidates.count() == 3 * 6 and set(candidates.values_list("rank", flat=True)) == set(range(1, 7))
    # Each prompt: top-1 against a random other and against bottom-1 (one pair when they are the same clip).
    for condition_id in set(candidates.values_list("condition_id", flat=True)):
        rows = list(candidates.filter(condition_id=condition_id).order_by("rank"))
        assert sum(r.is_random for r in rows) == 1 and not rows[0].is_random
        assert all(a.score >= b.score for a, b in zip(rows, rows[1:]))
        pairs = Pair.objects.filter(study=experiment.study, condition_id=condition_id)
        assert all(p.clip_a_id == rows[0].clip_id for p in pairs) and {p.clip_b_id for p in pairs} == {rows[-1].clip_id, next(r.clip_id for r in rows if r.is_random)}
    # Running it again changes nothing.
    again = best_of_n.best_of_n_execute(experiment_id=experiment.pk)
    assert again.state == BestOfNExperiment.State.DONE and candidates.count() == 18
    # Simulated people who follow the systems' designed musicality ranks.
    voters = [seeded_voter(experiment.study, name) for name in SEEDED_VOTERS]
    assert demo_rank_votes_seed(study=experiment.study, annotators=voters, seed=3) == experiment.study.pairs.count() * 3
    assert best_of_n.best_of_n_report(experiment=experiment)["votes"] == 0  # seeded votes are left out unless asked for
    report = best_of_n.best_of_n_report(experiment=experiment, include_seeded=True, rounds=400)
    bottom = report["comparisons"]["top_vs_bottom"]["musicality"]
    assert bottom["n"] == 9 and bottom["prompts"] == 3
    assert bottom["ci"][0] <= bottom["win_rate"] <= bottom["ci"][1]
    # The signal judge hears the designed faults: its top pick is from a better-ranked system than its bottom pick.
    rank = {s.name: s.musicality_rank for s in DEMO_SYSTEMS}
    tops = [rank[c.clip.system.name] for c in candidates.filter(rank=1).select_related("clip__system")]
    bottoms = [rank[c.clip.system.name] for c in candidates.filter(rank=6).select_related("clip__system")]
    assert sum(tops) < sum(bottoms)
    assert bottom["win_rate"] > 0.5 and "judge_human_accuracy" in bottom
    assert "judge_human_accuracy" not in report["comparisons"]["top_vs_bottom"]["alignment"]  # not the ranked dimension


def test_refusals_store_nothing(world):
    owner, judge = world
    before = (Study.objects.count(), BestOfNExperiment.objects.count())
    cases = [
        ({"n": 1}, "from 2 to"),
        ({"prompts": []}, "at least one prompt"),
        ({"systems": ["no-such-system"]}, "No arena system named no-such-system"),
        ({"dimension": "alignment"}, "does not score alignment"),
        ({"seconds": 0.1}, "0.5 to 60 seconds"),
    ]
    for change, message in cases:
        args = {"name": "bon-bad", "owner": owner, "prompts": PROMPTS, "n": 4, "ranker": judge, "systems": SYSTEM_NAMES[:2], "queue": False, **change}
        with pytest.raises(ServiceError, match=message):
            best_of_n.best_of_n_create(**args)
    # Another researcher's study cannot lend its clips.
    stranger_study = Study.objects.create(name="not-mine", owner=UserFactory(username="other-r", roles=["researcher"]))
    with pytest.raises(ServiceError, match="may use its clips"):
        best_of_n.best_of_n_create(name="bon-bad", owner=owner, n=4, ranker=judge, source_study=stranger_study, queue=False)
    assert (Study.objects.count() - 1, BestOfNExperiment.objects.count()) == before


def test_candidates_from_a_study_and_the_pages(world, client):
    owner, judge = world
    source = best_of_n.best_of_n_create(name="bon-gen", owner=owner, prompts=PROMPTS[:2], n=3, ranker=judge, systems=SYSTEM_NAMES, seconds=2.0, queue=False)
    best_of_n.best_of_n_execute(experiment_id=source.pk)
    reused = best_of_n.best_of_n_create(name="bon-reuse", owner=owner, n=3, ranker=judge, source_study=source.study, queue=False)
    reused = best_of_n.best_of_n_execute(experiment_id=reused.pk)
    assert reused.state == BestOfNExperiment.State.DONE
    assert set(BestOfNCandidate.objects.filter(experiment=reused).values_list("clip_id", flat=True)) <= set(
        BestOfNCandidate.objects.filter(experiment=source).values_list("clip_id", flat=True)
    )
    client.force_login(owner)
    page = client.get(reverse("scoring:best-of-n-detail", kwargs={"name": "bon-gen"}))
    assert page.status_code == 200 and "Do people prefer the ranker" in page.content.decode() and PROMPTS[0] in page.content.decode()
    listing = client.get(reverse("scoring:best-of-n")).content.decode()
    assert "bon-gen" in listing and "bon-reuse" in listing
    # The form starts one (the worker runs it: eager in the embedded set-up) and refuses bad input with a message.
    response = client.post(reverse("scoring:best-of-n"), {"name": "bon-form", "prompts": PROMPTS[0], "n": "2", "systems": ",".join(SYSTEM_NAMES[:2]), "ranker": judge.key, "dimension": "musicality", "seconds": "2", "seed": "1"})
    assert response.status_code == 302 and response["Location"].endswith("/scoring/studies/bon-form/best-of-n/")
    bad = client.post(reverse("scoring:best-of-n"), {"name": "bon-form2", "prompts": "", "n": "2", "systems": SYSTEM_NAMES[0], "ranker": judge.key})
    assert bad.status_code == 400 and "at least one prompt" in bad.content.decode() and not Study.objects.filter(name="bon-form2").exists()
    # A stranger researcher may not open it (the study rule).
    client.force_login(UserFactory(username="stranger-r", roles=["researcher"]))
    assert client.get(reverse("scoring:best-of-n-detail", kwargs={"name": "bon-gen"})).status_code == 403
    assert "bon-gen" not in client.get(reverse("scoring:best-of-n")).content.decode()


def test_the_demo_runs_the_whole_loop_once(world):
    owner, _ = world
    experiment = demo_best_of_n(owner=owner)
    assert experiment.state == BestOfNExperiment.State.DONE
    assert Judgment.objects.filter(pair__study=experiment.study, source=Judgment.Source.SEEDED).count() == experiment.study.pairs.count() * 3
    assert demo_best_of_n(owner=owner) is None
    report = best_of_n.best_of_n_report(experiment=experiment, include_seeded=True, rounds=200)
    assert report["comparisons"]["top_vs_bottom"]["musicality"]["win_rate"] is not None
    assert experiment.study.name == DEMO_BEST_OF_N


def test_the_command_runs_and_reports(world, capsys):
    owner, judge = world
    call_command("best_of_n", "--name", "bon-cmd", "--prompt", PROMPTS[0], "--n", "2", "--systems", ",".join(SYSTEM_NAMES[:2]), "--ranker", judge.key, "--owner", owner.username, "--seconds", "2")
    assert "1 prompts ranked" in capsys.readouterr().out
    call_command("best_of_n", "--report", "bon-cmd")
    assert '"top_vs_random"' in capsys.readouterr().out
    with pytest.raises(CommandError, match="from 2 to"):
        call_command("best_of_n", "--name", "bon-cmd2", "--prompt", "x", "--n", "1", "--systems", SYSTEM_NAMES[0], "--ranker", judge.key, "--owner", owner.username)
