"""MOS benchmarks: a rating study's rated clips frozen with their MOS, score files, SRCC ranking, ceiling, disclosure."""

from __future__ import annotations

import io
import json
import zipfile

import numpy as np
import pytest
from django.test import Client
from scipy import stats as sps

from common.errors import ServiceError
from scoring import ratings
from scoring.benchmarks import formats, selectors, services
from scoring.benchmarks.models import Benchmark, Team
from tests.benchmarks.helpers import jsonl, known_study, rated_study
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def _bench(**kwargs):
    study, mos = rated_study(**kwargs)
    bench = services.benchmark_create(name="mos", study=study, kind="mos", seed=5, bootstrap_rounds=300)
    by_id = {i.item_id: mos[i.clip_a_id] for i in bench.items.all()}
    return bench, by_id


def _team(bench, name="ours"):
    team = Team.objects.create(name=name, benchmark=bench)
    user = UserFactory(username=f"{name}-member")
    team.members.add(user)
    return team, user


def test_items_are_the_rated_clips_with_their_mos_split_in_two():
    bench, truth = _bench(n_clips=30)
    items = list(bench.items.order_by("position"))
    assert bench.is_mos and bench.n_items == 30 and all(i.clip_b_id is None for i in items)
    assert 0 < sum(i.is_private for i in items) < 30
    for item in items:
        for dim in ("musicality", "alignment"):
            block = item.labels[dim]
            assert block["mos"] == pytest.approx(truth[item.item_id][dim]) and block["n"] == 3 and len(block["ratings"]) == 3


def test_the_export_carries_no_mos():
    bench, truth = _bench(n_clips=12)
    with zipfile.ZipFile(io.BytesIO(services.export_zip(benchmark=bench))) as archive:
        names = archive.namelist()
        rows = [json.loads(line) for line in archive.read(next(n for n in names if n.endswith("items.jsonl"))).decode().splitlines()]
        info = json.loads(archive.read(next(n for n in names if n.endswith("benchmark.json"))))
    assert len(rows) == 12 and info["kind"] == "mos" and info["prediction_layouts"] == [formats.CMI_MOS, formats.MOS_SCORES]
    assert all(set(row) == {"id", "prompt", "lyrics", "audio", "reference_audio", "modality", "audio-path", "ref-audio-path", "prompt id"} for row in rows)
    assert sum(1 for n in names if "/audio/" in n) == 12


def test_a_mos_benchmark_needs_a_rating_study_and_a_pair_benchmark_refuses_one():
    study, _ = rated_study(n_clips=4)
    pairs, _ = known_study(n_pairs=4, name="pairs")
    for kwargs, code in (
        ({"study": pairs, "kind": "mos"}, "no_source"),
        ({"study": study, "kind": "mos", "is_dev": True}, "bad_kind"),
        ({"study": study, "kind": "mos", "include_arena": True}, "bad_kind"),
        ({"study": study}, "bad_kind"),
        ({"study": study, "kind": "votes"}, "bad_kind"),
    ):
        with pytest.raises(ServiceError) as caught:
            services.benchmark_create(name="refused", **kwargs)
        assert caught.value.code == code
    assert not Benchmark.objects.exists()


def test_the_layouts_are_one_table_read_by_the_benchmark_kind():
    ids = {"x-1", "x-2"}
    parsed = formats.parse_predictions(jsonl([{"id": "x-1", "score": 3.5}, {"id": "x-2", "score_alignment": -1, "score_musicality": 2}]), item_ids=ids, kind=formats.MOS)
    assert parsed.layout == formats.MOS_SCORES
    assert parsed.rows["x-1"] == {"score_musicality": 3.5, "score_alignment": 3.5} and parsed.rows["x-2"] == {"score_musicality": 2.0, "score_alignment": -1.0}
    cmi = formats.parse_predictions(jsonl([{"id": "x-1", "predicted_musicality": 0.7, "predicted_text-music alignment": 0.2}]), item_ids=ids, kind=formats.MOS)
    assert cmi.layout == formats.CMI_MOS and cmi.rows["x-1"] == {"score_musicality": 0.7, "score_alignment": 0.2}
    assert formats.parse_predictions(jsonl([{"id": "x-1", "preferred": "A"}]), item_ids=ids).layout == formats.MIREX
    with pytest.raises(formats.PredictionFileError) as caught:
        formats.parse_predictions(jsonl([{"id": "x-1", "preferred": "A"}, {"id": "x-2", "score": True}, {"id": "x-2", "score": "high"}]), item_ids=ids, kind=formats.MOS)
    assert len(caught.value.errors) == 3 and "no score" in caught.value.errors[0] and "finite number" in caught.value.errors[1]
    assert {layout.kind for layout in formats.LAYOUTS} == {formats.PAIRS, formats.MOS}


def test_srcc_ranks_the_judges_and_the_ceiling_is_the_raters_split_half():
    bench, truth = _bench(n_clips=60, raters=4)
    team, _ = _team(bench)
    ids = sorted(truth)
    perfect = [{"id": i, "score_musicality": truth[i]["musicality"], "score_alignment": truth[i]["alignment"]} for i in ids]
    rng = np.random.default_rng(0)
    noisy = [{"id": i, "score": truth[i]["musicality"] + rng.normal(0, 1.5)} for i in ids]
    half = [{"id": i, "score": truth[i]["musicality"]} for i in ids[: len(ids) // 2]]
    subs = [services.submission_from_file(benchmark=bench, team=team, data=jsonl(rows), label=name) for name, rows in (("perfect", perfect), ("noisy", noisy), ("half", half))]
    table = selectors.mos_scores(bench, part="public", dim="musicality")
    rows = {r["submission"]: r for r in table["rows"]}
    public = [i.item_id for i in bench.items.filter(is_private=False).order_by("position")]
    assert table["n"] == len(public)
    assert rows[subs[0].pk]["srcc"] == pytest.approx(1.0) and rows[subs[0].pk]["rank"] == 1
    expected = sps.spearmanr([next(r["score"] for r in noisy if r["id"] == i) for i in public], [truth[i]["musicality"] for i in public]).statistic
    assert rows[subs[1].pk]["srcc"] == pytest.approx(expected, abs=1e-4)
    low, high = rows[subs[1].pk]["ci"]
    assert low < rows[subs[1].pk]["srcc"] < high and rows[subs[1].pk]["rank"] > 1
    # Missing scores rank at the bottom: answering half the clips is worse than answering all of them right.
    assert rows[subs[2].pk]["answered"] < len(public) and rows[subs[2].pk]["srcc"] < 1.0
    assert table["p"][0][1] < 0.05
    items = bench.items.filter(is_private=False)
    clip = [n for n, i in enumerate(items) for _ in i.labels["musicality"]["ratings"]]
    value = [v for i in items for _, v in i.labels["musicality"]["ratings"]]
    assert table["ceiling"] == ratings.split_half_ceiling(clip, value, seed=bench.seed)
    assert table["ceiling"]["srcc"] == pytest.approx(2 * table["ceiling"]["srcc_half"] / (1 + table["ceiling"]["srcc_half"]), abs=1e-3)


def test_split_half_ceiling_of_raters_who_agree_is_one_and_of_noise_near_zero():
    clip = np.repeat(np.arange(50), 4)
    agree = np.repeat(np.arange(50, dtype=float), 4)
    assert ratings.split_half_ceiling(clip, agree)["srcc"] == 1.0
    noise = np.random.default_rng(1).normal(size=200)
    assert abs(ratings.split_half_ceiling(clip, noise, splits=200)["srcc_half"]) < 0.2
    assert ratings.split_half_ceiling([1, 1, 2, 2], [1, 2, 3, 4])["srcc"] is None  # two clips: no correlation


def test_a_team_sees_the_public_part_before_the_close_and_the_private_part_after():
    bench, truth = _bench(n_clips=40)
    team, member = _team(bench)
    client = Client()
    client.force_login(member)
    rows = [{"id": i, "score": s["musicality"]} for i, s in truth.items()]
    response = client.post(f"/api/benchmarks/{bench.name}/submissions/", {"team": team.name, "file": io.BytesIO(jsonl(rows))})
    assert response.status_code == 201 and response.json()["format"] == formats.MOS_SCORES
    n_public = bench.items.filter(is_private=False).count()
    board = client.get(f"/api/benchmarks/{bench.name}/leaderboard/?dim=musicality").json()
    assert board["part"] == "public" and board["n"] == n_public and board["rows"][0]["own_private"] is None
    assert board["rows"][0]["srcc"] == pytest.approx(1.0)
    detail = client.get(f"/api/benchmarks/submissions/{response.json()['submission']}/").json()
    assert list(detail["parts"]) == ["public"]
    page = client.get(f"/benchmarks/{bench.name}/")
    assert page.status_code == 200 and b"SRCC" in page.content and b"Human ceiling" in page.content
    for item in bench.items.all():  # no MOS on any team-visible page
        assert f"{item.labels['musicality']['mos']:.3f}".encode() not in page.content or item.labels["musicality"]["mos"] in (1.0, 5.0)
    services.benchmark_close(benchmark=bench, operator=True)
    board = client.get(f"/api/benchmarks/{bench.name}/leaderboard/?dim=musicality").json()
    assert board["part"] == "private" and board["n"] == 40 - n_public
    detail = client.get(f"/api/benchmarks/submissions/{response.json()['submission']}/").json()
    assert list(detail["parts"]) == ["private", "public"]


def test_a_filter_under_k_clips_shows_no_figure(settings):
    settings.BENCHMARK_MIN_CELL = 50
    bench, truth = _bench(n_clips=20)
    team, member = _team(bench)
    services.submission_from_file(benchmark=bench, team=team, data=jsonl([{"id": i, "score": s["musicality"]} for i, s in truth.items()]))
    client = Client()
    client.force_login(member)
    board = client.get(f"/api/benchmarks/{bench.name}/leaderboard/?dim=musicality").json()
    assert board["hidden"] and board["rows"][0]["srcc"] is None and board["ceiling"]["srcc"] is None
    researcher = Client()
    stranger = UserFactory(username="res", roles=["researcher"])
    researcher.force_login(stranger)
    # A researcher who is not the study's reader sees the team's view; its collaborator, the figures.
    assert researcher.get(f"/api/benchmarks/{bench.name}/leaderboard/?dim=musicality").json()["rows"][0]["srcc"] is None
    bench.study.collaborators.add(stranger)
    assert researcher.get(f"/api/benchmarks/{bench.name}/leaderboard/?dim=musicality").json()["rows"][0]["srcc"] == pytest.approx(1.0)


def test_judge_runs_are_refused_on_a_mos_benchmark_and_nothing_is_stored():
    bench, _ = _bench(n_clips=6)
    team, member = _team(bench)
    client = Client()
    client.force_login(member)
    response = client.post(f"/api/benchmarks/{bench.name}/runs/", {"team": team.name, "endpoint": "judge"}, content_type="application/json")
    assert response.status_code == 400 and response.json()["code"] == "mos_files_only"
    assert not bench.submissions.exists()


def test_the_scores_command_prints_srcc_for_a_mos_benchmark():
    from django.core.management import call_command

    bench, truth = _bench(n_clips=20)
    team, _ = _team(bench)
    services.submission_from_file(benchmark=bench, team=team, data=jsonl([{"id": i, "score": s["musicality"]} for i, s in truth.items()]), label="oracle")
    out = io.StringIO()
    call_command("benchmark_scores", bench.name, "--part", "all", "--json", stdout=out)
    block = json.loads(out.getvalue())["dimensions"]["musicality"]
    assert block["n"] == 20 and block["submissions"][0]["srcc"] == pytest.approx(1.0) and block["submissions"][0]["label"] == "oracle"
    assert block["ceiling"]["srcc"] is not None
