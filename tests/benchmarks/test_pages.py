"""The researcher's create form, uploads through the page and the API, and runs through the command and the API."""

from __future__ import annotations

import io
import json

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from scoring.benchmarks import services
from scoring.benchmarks.models import Benchmark, Submission, Team
from scoring.models import Judge
from tests.benchmarks.helpers import item_truth, jsonl, known_study
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db
User = get_user_model()


@pytest.fixture
def researcher():
    client = Client()
    client.force_login(UserFactory(username="res", roles=["researcher"]))
    return client


def _own(study) -> None:
    # The study rule: a benchmark from a study, or a judge run on its pairs, is its owner's (or collaborators', admins').
    study.owner = User.objects.get(username="res")
    study.save(update_fields=["owner"])


def test_researcher_creates_a_benchmark_from_the_form(researcher):
    _own(known_study(n_pairs=10, name="form-study")[0])
    response = researcher.post("/benchmarks/new/", {"name": "web-bench", "study": "form-study", "seed": "2", "public_share": "0.5", "rounds": "200"})
    assert response.status_code == 302
    bench = Benchmark.objects.get(name="web-bench")
    assert bench.n_items == 10 and bench.seed == 2 and bench.bootstrap_rounds == 200
    # A bad share is refused with the reason, and nothing is made.
    response = researcher.post("/benchmarks/new/", {"name": "bad", "study": "form-study", "public_share": "2"})
    assert response.status_code == 400
    assert "public share" in response.content.decode()
    assert not Benchmark.objects.filter(name="bad").exists()


def test_an_empty_leaderboard_renders(researcher):
    study, _ = known_study(n_pairs=4, name="empty")
    services.benchmark_create(name="empty", study=study, bootstrap_rounds=100)
    response = researcher.get("/benchmarks/empty/")
    assert response.status_code == 200
    assert "No submission yet" in response.content.decode()
    assert researcher.get("/api/benchmarks/empty/leaderboard/").json()["rows"] == []


def test_non_researchers_cannot_create():
    client = Client()
    client.force_login(UserFactory(username="someone"))
    assert client.get("/benchmarks/new/").status_code == 403


def test_team_uploads_on_the_page_and_through_the_api():
    study, _ = known_study(n_pairs=10, name="up")
    bench = services.benchmark_create(name="up", study=study, bootstrap_rounds=100)
    user = UserFactory(username="member")
    services.team_create(name="team-up", members=[user])
    client = Client()
    client.force_login(user)
    rows = [{"id": i, "preferred": t["musicality"]} for i, t in item_truth(bench).items()]
    response = client.post("/benchmarks/up/submit/", {"team": "team-up", "label": "page", "file": io.BytesIO(jsonl(rows))})
    assert response.status_code == 302
    response = client.post("/api/benchmarks/up/submissions/", {"team": "team-up", "label": "api", "file": io.BytesIO(jsonl(rows))})
    assert response.status_code == 201
    assert response.json()["answered"] == 10
    assert list(Submission.objects.values_list("label", flat=True)) == ["page", "api"]
    board = client.get("/api/benchmarks/up/leaderboard/?dim=musicality").json()
    assert [r["accuracy"] for r in board["rows"]] == [1.0, 1.0]
    # Holm-adjusted paired p-values on the shown part, in the order of board["pairwise"]["submissions"].
    assert board["pairwise"]["p"] == [[1.0, 1.0], [1.0, 1.0]]
    assert client.get("/api/benchmarks/up/leaderboard/?dim=nope").status_code == 400


def test_in_platform_judge_through_the_command_and_the_api(researcher, capsys, django_capture_on_commit_callbacks):
    study, _ = known_study(n_pairs=6, name="cmd")
    _own(study)
    services.benchmark_create(name="cmd", study=study, bootstrap_rounds=100)
    Judge.objects.create(key="signal", kind=Judge.Kind.SIGNAL)
    with django_capture_on_commit_callbacks(execute=True):
        call_command("benchmark_submit", "cmd", "--team", "house", "--create-team", "--judge", "signal", "--json")
    # The command printed while the run was still queued; the run and the collection ran at commit.
    capsys.readouterr()
    call_command("benchmark_scores", "cmd", "--json", "--part", "all")
    scores = json.loads(capsys.readouterr().out)
    assert scores["dimensions"]["musicality"]["submissions"][0]["answered"] == 6
    response = researcher.post("/api/benchmarks/cmd/runs/", {"team": "house", "judge": "signal"}, content_type="application/json")
    assert response.status_code == 202
    with pytest.raises(CommandError, match="No judge"):
        call_command("benchmark_submit", "cmd", "--team", "house", "--judge", "nope")


def test_benchmark_create_command(capsys):
    known_study(n_pairs=8, name="cli", split="train")
    call_command("benchmark_create", "cli-bench", "--study", "cli", "--seed", "4", "--dev")
    assert "8 items (4 public, 4 private)" in capsys.readouterr().out
    assert Benchmark.objects.get(name="cli-bench").is_dev
    with pytest.raises(CommandError, match="exists already"):
        call_command("benchmark_create", "cli-bench", "--study", "cli")
    with pytest.raises(CommandError, match="No study"):
        call_command("benchmark_create", "x", "--study", "missing")


def test_create_team_leaves_no_team_behind_when_the_file_is_refused(tmp_path):
    study, _ = known_study(n_pairs=4, name="ct")
    services.benchmark_create(name="ct", study=study, bootstrap_rounds=100)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "nope", "preferred": "A"}\n')
    with pytest.raises(CommandError, match="not an item of this benchmark"):
        call_command("benchmark_submit", "ct", "--team", "new-team", "--create-team", "--file", str(bad))
    assert not Team.objects.filter(name="new-team").exists()


def test_the_in_platform_menu_lists_only_judges_that_can_run_here(researcher, tmp_path):
    study, _ = known_study(n_pairs=6, name="menu")
    _own(study)
    services.benchmark_create(name="menu", study=study, bootstrap_rounds=100)
    Judge.objects.create(key="signal", kind=Judge.Kind.SIGNAL)
    Judge.objects.create(key="clap-absent", kind=Judge.Kind.CLAP, weights=str(tmp_path / "no-such-clap"))
    Judge.objects.create(key="signal-off", kind=Judge.Kind.SIGNAL, enabled=False)
    page = researcher.get("/benchmarks/menu/").content.decode()
    menu = page[page.index('id="j-judge"') : page.index("</select>", page.index('id="j-judge"'))]
    assert 'value="signal"' in menu
    assert "clap-absent" not in menu and "signal-off" not in menu
    # The run refuses the judge the menu leaves out, for the same reason.
    Team.objects.create(name="house")
    refused = researcher.post("/api/benchmarks/menu/runs/", {"team": "house", "judge": "clap-absent"}, content_type="application/json")
    assert refused.status_code == 409
