"""Arena battles as items, a dev benchmark's listening to disagreements, and a submission page while its judge runs."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from scoring.benchmarks import selectors, services
from scoring.benchmarks.models import Submission
from tests.benchmarks.helpers import item_truth, jsonl, known_study
from tests.factories import ClipFactory, UserFactory

pytestmark = pytest.mark.django_db


def _battles(choices: list[str]):
    from arena.models import ArenaSystem, Battle, Visitor, Vote
    from arena.seed import arena_seed

    arena_seed()
    a, b = list(ArenaSystem.objects.all()[:2])
    visitor = Visitor.objects.create(cookie_hash="v" * 64, pseudonym="u-bench", terms_version="1", terms_accepted_at=timezone.now())
    clips = [ClipFactory(), ClipFactory()]
    for k, choice in enumerate(choices):
        battle = Battle.objects.create(
            visitor=visitor,
            prompt=f"battle {k}",
            lyrics="oh oh" if k % 2 else "",
            duration_requested=3.0,
            seed=k,
            system_a=a,
            system_b=b,
            clip_a=clips[0],
            clip_b=clips[1],
            status=Battle.Status.VOTED,
        )
        Vote.objects.create(battle=battle, visitor=visitor, choice=choice, listen_seconds_a=5.0, listen_seconds_b=5.0)


def test_arena_battles_become_musicality_items(tmp_path):
    _battles(["a", "b", "tie", "both_bad", "a", "b"])
    bench = services.benchmark_create(name="arena", include_arena=True, is_dev=True, bootstrap_rounds=100)
    assert bench.n_items == 4  # ties and both-bad name no better clip
    items = list(bench.items.all())
    assert {i.source for i in items} == {"Music Arena"}
    assert all(i.labels["alignment"]["truth"] == -1 for i in items)
    services.export_to_dir(benchmark=bench, out=tmp_path / "pkg")
    rows = [json.loads(line) for line in (tmp_path / "pkg" / "items.jsonl").read_text().splitlines()]
    assert {r["preference"] for r in rows} == {"A", "B"}
    assert {r["modality"] for r in rows} == {"text", "text+lyrics"}
    # CMI-RewardBench's Music Arena rows carry one `predicted_preference`, from the musicality scores.
    results = [{**r, "benchmark_dataset": "MusicArena", "predicted_musicality": 0.9, "predicted_musicality_b": 0.1, "predicted_preference": "model_a"} for r in rows]
    sub = services.submission_from_file(benchmark=bench, team=services.team_create(name="arena-team"), data=jsonl(results))
    table = selectors.scores(bench, part="all", dim="musicality")
    expected = sum(r["preference"] == "A" for r in rows) / len(rows)
    assert table["rows"][0]["accuracy"] == pytest.approx(expected)
    assert selectors.scores(bench, part="all", dim="alignment")["n"] == 0
    assert sub.file_format == "cmi-results"


def test_dev_benchmark_lets_teams_listen_where_the_judge_contradicts_confident_humans():
    study, _ = known_study(n_pairs=12, name="dev", split="train")
    bench = services.benchmark_create(name="dev", study=study, is_dev=True, bootstrap_rounds=100)
    truth = item_truth(bench)
    flip = {"A": "B", "B": "A"}
    rows = [{"id": i, "preferred_alignment": flip[t["alignment"]], "preferred_musicality": t["musicality"]} for i, t in truth.items()]
    user = UserFactory(username="dev-member")
    sub = services.submission_from_file(benchmark=bench, team=services.team_create(name="dev-team", members=[user]), data=jsonl(rows))
    confident = [i for i in bench.items.all() if (i.labels["alignment"]["confidence"] or 0) >= 4]
    found = selectors.disagreements(bench, sub, dim="alignment")
    assert {r["item"].item_id for r in found} == {i.item_id for i in confident}
    assert selectors.disagreements(bench, sub, dim="musicality") == []
    client = Client()
    client.force_login(user)
    page = client.get(f"/benchmarks/submissions/{sub.pk}/").content.decode()
    assert 'id="disagreements"' in page
    src = page.split('<audio controls preload="none" src="')[1].split('"')[0]
    assert client.get(src.replace("http://testserver", "")).status_code == 200
    # A dev benchmark has no secret part: one leaderboard over every item.
    assert selectors.leaderboard(bench, user, dim="alignment")["part"] == "all"


def test_a_running_submission_has_a_page(django_capture_on_commit_callbacks):
    study, _ = known_study(n_pairs=4, name="pending")
    bench = services.benchmark_create(name="pending", study=study, bootstrap_rounds=100)
    sub = Submission.objects.create(benchmark=bench, team=services.team_create(name="slow"), kind=Submission.Kind.HTTP, state=Submission.State.RUNNING, endpoint_url="http://127.0.0.1:9/")
    reader = UserFactory(username="r2", roles=["researcher"])
    # The private part is the study rule's: only the study's reader is shown it, empty or not.
    study.collaborators.add(reader)
    researcher = Client()
    researcher.force_login(reader)
    response = researcher.get(f"/benchmarks/submissions/{sub.pk}/")
    assert response.status_code == 200
    assert "Running" in response.content.decode() and "Not scored yet" in response.content.decode()
    assert researcher.get(f"/api/benchmarks/submissions/{sub.pk}/").json()["parts"] == {"public": {}, "private": {}}


def test_benchmark_scores_text_output(capsys):
    study, _ = known_study(n_pairs=6, name="txt")
    bench = services.benchmark_create(name="txt", study=study, bootstrap_rounds=100)
    rows = [{"id": i, "preferred": "A"} for i in item_truth(bench)]
    services.submission_from_file(benchmark=bench, team=services.team_create(name="t"), data=jsonl(rows), label="all-a")
    call_command("benchmark_scores", "txt")
    out = capsys.readouterr().out
    assert "musicality (public" in out and "t/all-a" in out
