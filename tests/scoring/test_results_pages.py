"""The results section on the report page, the compare-two-systems page and its API, and the demo's designed order."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.factories import UserFactory
from tests.scoring.showcase_study import showcase_study

pytestmark = pytest.mark.django_db


def _reader(study, username="reader"):
    user = UserFactory(username=username, roles=["researcher"])
    study.collaborators.add(user)
    client = Client()
    client.force_login(user)
    return client


def test_the_report_page_shows_which_system_won_with_forest_plots():
    study, _, _ = showcase_study(name="won")
    client = _reader(study)
    page = client.get(f"/scoring/studies/{study.name}/report/?bootstrap=200").content.decode()
    assert 'id="results"' in page and 'id="compare-link"' in page
    report = client.get(f"/api/studies/{study.name}/report/", {"bootstrap": 200}).json()["systems"]
    for dim in ("alignment", "musicality"):
        # Each dimension's strengths and pair win rates are drawn, and each pair's quotable sentence is on the page.
        assert f'id="forest-strengths-{dim}"' in page and f'id="forest-pairs-{dim}"' in page
        for sentence in report["dimensions"][dim]["sentences"]:
            assert sentence.replace("'", "&#x27;") in page


def test_the_compare_api_gives_the_paired_figures_and_listenable_conditions():
    study, _, _ = showcase_study(name="pairs")
    client = _reader(study)
    body = client.get(f"/api/studies/{study.name}/compare/", {"a": "aurora", "b": "clipper", "bootstrap": 200}).json()
    assert body["kind"] == "pairwise" and (body["system_a"], body["system_b"]) == ("aurora", "clipper")
    music = body["dimensions"]["musicality"]
    # The same figures as the report's row for the pair, from a's side (the report orders the pair by name).
    report = client.get(f"/api/studies/{study.name}/report/", {"bootstrap": 200}).json()
    [row] = [r for r in report["systems"]["dimensions"]["musicality"]["pairs"] if {r["system_a"], r["system_b"]} == {"aurora", "clipper"}]
    assert music["votes"] == row["votes"] and music["conditions"] == row["conditions"] and music["p"] == row["p"]
    assert music["win_rate_a"] == pytest.approx(row["win_rate_a"] if row["system_a"] == "aurora" else 1 - row["win_rate_a"], abs=1e-4)
    assert music["lower"] <= music["win_rate_a"] <= music["upper"]
    assert music["sentence"].startswith("aurora") and "for this comparison alone" in music["sentence"]
    # Where they differ most, most lopsided first, each with both systems' clips to play.
    rates = [abs(c["win_rate_a"] - 0.5) for c in music["differ_most"]]
    assert rates == sorted(rates, reverse=True) and len(rates) >= 3
    for c in music["differ_most"]:
        assert c["prompt"] and c["clip_a"]["url"] != c["clip_b"]["url"]
        assert client.get(c["clip_a"]["url"]).status_code == 200 and client.get(c["clip_b"]["url"]).status_code == 200
    assert {g["by"] for g in music["groups"]} == {"modality", "vocal", "language"}


def test_the_compare_page_and_api_refuse_bad_choices_with_a_reason_and_strangers():
    study, _, _ = showcase_study(name="refuse")
    client = _reader(study)
    for params, words in (({"a": "aurora", "b": "aurora"}, "two different systems"), ({"a": "aurora", "b": "nobody"}, "No system 'nobody'"), ({"a": "aurora"}, "Choose two systems"), ({"a": "aurora", "b": "hiss", "bootstrap": "x"}, "bootstrap")):
        api = client.get(f"/api/studies/{study.name}/compare/", params)
        assert api.status_code == 400 and words in api.json()["detail"], api.content
        page = client.get(f"/scoring/studies/{study.name}/compare/", params)
        assert page.status_code == 400 and words.replace("'", "&#x27;") in page.content.decode()
    # The form alone, with the study's systems to choose from.
    form = client.get(f"/scoring/studies/{study.name}/compare/").content.decode()
    assert 'id="compare-form"' in form and form.count("<option") == 2 * 6
    stranger = Client()
    stranger.force_login(UserFactory(username="stranger", roles=["researcher"]))
    assert stranger.get(f"/api/studies/{study.name}/compare/", {"a": "aurora", "b": "hiss"}).status_code in (403, 404)
    assert stranger.get(f"/scoring/studies/{study.name}/compare/", {"a": "aurora", "b": "hiss"}).status_code in (403, 404)


def test_a_rating_study_compares_paired_means_and_lists_the_conditions_apart():
    from annotation.models import System
    from annotation.ratings import services as rating_services
    from annotation.ratings.models import Rating, RatingSubmission
    from tests.factories import AnnotatorFactory, ClipFactory, ConditionFactory, StudyFactory

    study = StudyFactory(name="rated")
    rating_services.rating_task_set(study=study, task="multi", dimensions=["musicality"])
    good, bad = System.objects.create(name="good"), System.objects.create(name="bad")
    raters = [AnnotatorFactory() for _ in range(3)]
    # good is rated 10 points above bad, plus 0, 5, ..., 35 more on condition k: the last condition differs most.
    for k in range(8):
        clips = [ClipFactory(system=good), ClipFactory(system=bad)]
        item = rating_services.rating_item_add(study=study, condition=ConditionFactory(prompt=f"prompt {k}"), clips=clips)
        for r, rater in enumerate(raters):
            sub = RatingSubmission.objects.create(annotator=rater, item=item)
            Rating.objects.create(submission=sub, clip=clips[0], dimension="musicality", value=60 + 5 * k + r)
            Rating.objects.create(submission=sub, clip=clips[1], dimension="musicality", value=50 - r)
    client = _reader(study)
    body = client.get(f"/api/studies/{study.name}/compare/", {"a": "bad", "b": "good"}).json()
    music = body["dimensions"]["musicality"]
    assert body["kind"] == "rating" and music["conditions"] == 8
    # Asked bad first: the difference is bad minus good.
    assert music["difference"] == pytest.approx(-(10 + 2 + 17.5), abs=1e-3)
    assert music["upper"] < 0 and music["sentence"].startswith("good was rated")
    assert [c["prompt"] for c in music["differ_most"][:2]] == ["prompt 7", "prompt 6"]
    assert music["differ_most"][0]["clip_a"]["url"] and music["differ_most"][0]["clip_b"]["url"]
    page = client.get(f"/scoring/studies/{study.name}/report/").content.decode()
    assert 'id="forest-differences-musicality"' in page and "good was rated" in page


@pytest.mark.engine
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_on_the_demo_study_musicality_strengths_follow_the_designed_quality(client):
    import io

    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from annotation.demo import DEMO_SYSTEMS

    call_command("seed_demo", stdout=io.StringIO())
    client.force_login(get_user_model().objects.get(username="researcher"))
    section = client.get("/api/studies/demo/report/", {"include_seeded": 1}).json()["systems"]
    strengths = section["dimensions"]["musicality"]["strengths"]
    designed = [s.name for s in sorted(DEMO_SYSTEMS, key=lambda s: s.musicality_rank)]
    assert [s["system"] for s in sorted(strengths, key=lambda s: -s["strength"])] == designed
    # The ranks by interval overlap never put a designed-worse system above a designed-better one.
    rank = {s["system"]: s["rank"] for s in strengths}
    assert all(rank[a] <= rank[b] for a, b in zip(designed, designed[1:]))


def test_the_report_command_says_which_system_won():
    import io

    from django.core.management import call_command

    study, _, _ = showcase_study(name="cmd")
    out = io.StringIO()
    call_command("report", "--study", study.name, "--bootstrap", "100", stdout=out)
    text = out.getvalue()
    assert "which system won:" in text and "musicality strengths: 1. aurora" in text
    assert text.count("after Holm.") >= 2 * 15


@pytest.mark.parametrize(("low", "high", "expected"), [(0.0, 1.0, [0.0, 0.25, 0.5, 0.75, 1.0]), (-1.3, 2.7, [-1.0, 0.0, 1.0, 2.0]), (-0.07, 0.02, [-0.05, -0.025, 0.0]), (3.0, 3.0, [3.0])])
def test_forest_ticks_are_round_and_inside_the_axis(low, high, expected):
    from scoring.results_view import nice_ticks

    assert nice_ticks(low, high) == pytest.approx(expected)


def test_a_forest_plot_places_points_and_intervals_on_one_axis_with_the_reference():
    from scoring.results_view import forest

    rows = [{"system": "a", "strength": 1.0, "lower": 0.5, "upper": 1.5}, {"system": "b", "strength": -1.0, "lower": -2.0, "upper": None}]
    plot = forest(rows, label="system", value="strength", reference=0.0)
    a, b = plot["rows"]
    # The axis spans the intervals and the reference, padded: every mark lies inside 0–100 % and in order.
    assert 0 < b["x"] < plot["ref_x"] < a["x_lo"] < a["x"] < a["x_hi"] < 100
    assert b["x_lo"] is not None and b["x_hi"] is None and b["text"] == "-1.00"
    assert a["text"] == "1.00 [0.50, 1.50]"
    assert all(0 <= t["x"] <= 100 for t in plot["ticks"]) and "0" in [t["text"] for t in plot["ticks"]]
    # Win rates: a fixed 0–100 % axis, a value outside it drawn at its edge.
    rates = forest([{"label": "x", "win_rate_a": 0.62, "lower": 0.56, "upper": 1.2}], label="label", value="win_rate_a", reference=0.5, bounds=(0.0, 1.0), percent=True)
    assert rates["ref_x"] == 50 and rates["rows"][0]["x"] == 62 and rates["rows"][0]["x_hi"] == 100 and rates["rows"][0]["text"] == "62 [56, 120]"


def test_the_compare_api_without_systems_lists_them():
    study, _, _ = showcase_study(name="listing")
    body = _reader(study).get(f"/api/studies/{study.name}/compare/").json()
    assert body["systems"] == sorted(["aurora", "draggy", "hiss", "detune", "wobble", "clipper"]) and "?a=" in body["detail"]
