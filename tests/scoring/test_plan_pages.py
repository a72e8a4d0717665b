"""The study planner on the study page, its own page, its API and manage.py plan_study: fitted to the study's votes or to a typed effect."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from tests.factories import UserFactory
from tests.scoring.showcase_study import showcase_study

pytestmark = pytest.mark.django_db


def _reader(study, username="planner"):
    user = UserFactory(username=username, roles=["researcher"])
    study.collaborators.add(user)
    client = Client()
    client.force_login(user)
    return client


def test_the_plan_api_fits_the_studys_votes_and_sizes_the_next_study():
    from scoring import planner
    from scoring.results_section import _study_frames

    study, _, _ = showcase_study(name="plan")
    client = _reader(study)
    body = client.get(f"/api/studies/{study.name}/plan/", {"a": "aurora", "b": "draggy", "dimension": "musicality"}).json()
    _, frame, _ = _study_frames(study=study, include_seeded=False)
    fitted = planner.fit_pairwise(frame, "aurora", "draggy", "musicality")
    assert body["kind"] == "pairwise" and body["model"]["source"] == "pilot"
    assert body["model"]["win_rate"] == pytest.approx(fitted.win_rate, abs=1e-4) and body["model"]["condition_sd"] == pytest.approx(fitted.condition_sd, abs=1e-4)
    # Six systems: fifteen comparisons, so Holm's first step.
    assert body["comparisons"] == 15 and body["alpha"] == pytest.approx(0.05 / 15)
    rows = [r for r in body["rows"] if r["conditions"] is not None]
    assert rows and all(r["power"] >= 0.8 and r["total"] == r["conditions"] * r["per_condition"] for r in rows)
    # The same as the planner run on the same model, and a typed effect replaces the fitted one, the spread staying fitted.
    direct = planner.plan(planner.PairwiseModel(win_rate=fitted.win_rate, condition_sd=fitted.condition_sd, tie_rate=fitted.tie_rate), alpha=0.05 / 15)
    assert [r["conditions"] for r in body["rows"]] == [r["conditions"] for r in direct["rows"]]
    typed = client.get(f"/api/studies/{study.name}/plan/", {"a": "aurora", "b": "draggy", "dimension": "musicality", "effect": "0.55", "power": "0.9", "alpha": "0.05"}).json()
    assert typed["model"]["win_rate"] == 0.55 and typed["model"]["condition_sd"] == body["model"]["condition_sd"] and typed["model"]["source"] == "pilot, with typed values"
    assert typed["power"] == 0.9 and typed["alpha"] == 0.05 and typed["pilot"]["model"]["win_rate"] == body["model"]["win_rate"]
    smaller = {r["per_condition"]: r["conditions"] for r in typed["rows"]}
    # A smaller effect at higher power needs more conditions than the study's own effect.
    assert all(smaller[r["per_condition"]] > r["conditions"] for r in rows if smaller[r["per_condition"]])


def test_the_plan_refuses_bad_input_with_a_reason_on_the_page_the_api_and_the_command():
    study, _, _ = showcase_study(name="planbad")
    client = _reader(study)
    cases = (
        ({"a": "aurora", "b": "aurora", "dimension": "musicality"}, "two different systems"),
        ({"a": "aurora", "b": "nobody", "dimension": "musicality"}, "No system 'nobody'"),
        ({"a": "aurora", "b": "draggy", "dimension": "loudness"}, "No dimension 'loudness'"),
        ({"a": "aurora", "b": "draggy", "dimension": "musicality", "effect": "lots"}, "must be a number"),
        ({"a": "aurora", "b": "draggy", "dimension": "musicality", "effect": "1.2"}, "strictly between 0 and 1"),
        ({"a": "aurora", "b": "draggy", "dimension": "musicality", "power": "nan"}, "power must lie"),
        ({"a": "aurora", "b": "draggy", "dimension": "musicality", "tie_rate": "0.95"}, "tie_rate must lie"),
    )
    for params, words in cases:
        api = client.get(f"/api/studies/{study.name}/plan/", params)
        assert api.status_code == 400 and words in api.json()["detail"], (params, api.content)
        page = client.get(f"/scoring/studies/{study.name}/plan/", params)
        assert page.status_code == 400 and words.replace("'", "&#x27;") in page.content.decode()
    with pytest.raises(CommandError, match="No system 'nobody'"):
        call_command("plan_study", "--study", study.name, "--a", "aurora", "--b", "nobody", stdout=io.StringIO())
    stranger = Client()
    stranger.force_login(UserFactory(username="stranger", roles=["researcher"]))
    assert stranger.get(f"/api/studies/{study.name}/plan/", cases[1][0]).status_code in (403, 404)
    assert stranger.get(f"/scoring/studies/{study.name}/plan/").status_code in (403, 404)


def test_two_systems_that_never_met_need_a_typed_effect():
    from annotation.models import Pair

    study, _, _ = showcase_study(name="planmet")
    # Take away every pair between aurora and hiss: no pilot for them.
    Pair.objects.filter(study=study, clip_a__system__name="aurora", clip_b__system__name="hiss").delete()
    Pair.objects.filter(study=study, clip_a__system__name="hiss", clip_b__system__name="aurora").delete()
    client = _reader(study)
    api = client.get(f"/api/studies/{study.name}/plan/", {"a": "aurora", "b": "hiss", "dimension": "musicality"})
    assert api.status_code == 400 and "type the win rate" in api.json()["detail"]
    typed = client.get(f"/api/studies/{study.name}/plan/", {"a": "aurora", "b": "hiss", "dimension": "musicality", "effect": "0.65"}).json()
    assert typed["model"]["source"] == "typed" and typed["pilot"] is None and typed["rows"][0]["conditions"] > 0


def test_the_study_page_offers_the_planner_and_the_plan_page_says_it_in_one_sentence():
    study, _, _ = showcase_study(name="planpage")
    client = _reader(study)
    detail = client.get(f"/manage/studies/{study.name}/").content.decode()
    assert 'id="plan-next-form"' in detail and f'action="/scoring/studies/{study.name}/plan/"' in detail and detail.count("<option") >= 12
    # The study page's form sends the two systems only: the plan page takes its last dimension, musicality.
    page = client.get(f"/scoring/studies/{study.name}/plan/", {"a": "aurora", "b": "draggy"}).content.decode()
    assert 'id="plan-sentence"' in page and "To find aurora winning" in page and "on musicality with 80 % power" in page
    assert page.count("<tr>") >= 7  # the header and a row per number of votes on a condition
    listing = client.get(f"/api/studies/{study.name}/plan/").json()
    assert listing["systems"] == sorted(["aurora", "draggy", "hiss", "detune", "wobble", "clipper"]) and "dimension=" in listing["detail"]
    form = client.get(f"/scoring/studies/{study.name}/plan/").content.decode()
    assert 'id="plan-form"' in form and 'id="plan"' not in form


def test_the_plan_command_prints_the_plan_and_its_json_is_the_apis():
    import json

    study, _, _ = showcase_study(name="plancmd")
    out = io.StringIO()
    call_command("plan_study", "--study", study.name, "--a", "aurora", "--b", "draggy", stdout=out)
    text = out.getvalue()
    assert text.startswith("To find aurora winning") and "per condition" in text and "model (pilot)" in text
    out = io.StringIO()
    call_command("plan_study", "--study", study.name, "--a", "aurora", "--b", "draggy", "--json", stdout=out)
    api = _reader(study).get(f"/api/studies/{study.name}/plan/", {"a": "aurora", "b": "draggy", "dimension": "musicality"}).json()
    assert json.loads(out.getvalue()) == api


def test_a_rating_study_plans_in_ratings_per_system():
    from annotation.models import System
    from annotation.ratings import services as rating_services
    from annotation.ratings.models import Rating, RatingSubmission
    from tests.factories import AnnotatorFactory, ClipFactory, ConditionFactory, StudyFactory

    study = StudyFactory(name="planrated")
    rating_services.rating_task_set(study=study, task="multi", dimensions=["musicality"])
    good, bad = System.objects.create(name="good"), System.objects.create(name="bad")
    raters = [AnnotatorFactory() for _ in range(3)]
    for k in range(10):
        clips = [ClipFactory(system=good), ClipFactory(system=bad)]
        item = rating_services.rating_item_add(study=study, condition=ConditionFactory(prompt=f"prompt {k}"), clips=clips)
        for r, rater in enumerate(raters):
            sub = RatingSubmission.objects.create(annotator=rater, item=item)
            Rating.objects.create(submission=sub, clip=clips[0], dimension="musicality", value=55 + (7 * k + 5 * r) % 20)
            Rating.objects.create(submission=sub, clip=clips[1], dimension="musicality", value=50 + (3 * k + 11 * r) % 20)
    body = _reader(study).get(f"/api/studies/{study.name}/plan/", {"a": "good", "b": "bad", "dimension": "musicality"}).json()
    assert body["kind"] == "rating" and body["unit"] == "ratings" and body["model"]["source"] == "pilot"
    assert body["model"]["rating_sd"] > 0 and body["model"]["difference"] > 0
    assert all(r["total"] == 2 * r["conditions"] * r["per_condition"] for r in body["rows"] if r["conditions"])
