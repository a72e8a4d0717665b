"""Separate screens: a pair's alignment answered first, its musicality next, on one assignment with one listening proof.

POST /api/studies/<name>/assignments/<id>/answer/ takes one dimension; the second makes the judgment and is answered
with the next pair. The listening rules are the single screen's (tests/annotation/test_judgment_cycle.py): too
little listening, bytes never shown received and replayed events are refused or ignored the same way on each answer.
"""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.urls import reverse

from annotation.models import Assignment, DimensionPasses, Judgment, ListeningEvent, Study
from tests.annotation.cycle_page import PassesPage, make_pairs
from tests.factories import StudyFactory
from tests.listening import Clock

pytestmark = pytest.mark.django_db

MIN = 2.0


@pytest.fixture
def clock(monkeypatch):
    return Clock(monkeypatch)


def separate_study(**kwargs):
    return StudyFactory(min_listen_seconds=MIN, overlap_target=1, dimension_passes=DimensionPasses.SEPARATE, **kwargs)


def test_two_screens_make_one_judgment_with_both_answers_and_their_order(clock):
    study = separate_study(rationale_min_length=5)
    make_pairs(study, 2)
    page = PassesPage(clock, study=study)
    assert page.assignment["passes"] == {"mode": "separate", "order": ["alignment", "musicality"], "answered": [], "current": "alignment"}
    page.listen_honestly()
    first = page.answer("alignment", "A", key="k-1", confidence=4, rationale="A fits")
    assert first.status_code == 201, first.content
    assert first.json()["complete"] is False and first.json()["next_dimension"] == "musicality" and "next" not in first.json()
    assert not Judgment.objects.exists()
    held = Assignment.objects.get(pk=page.assignment["id"])
    assert held.state == Assignment.State.ACTIVE and held.first_pass["dimension"] == "alignment" and held.first_pass["heard"]["A"] >= MIN
    # A reload of the page comes back to the second screen of the same pair.
    again = page.post(reverse("api-assignment-next", kwargs={"name": study.name}), {}).json()["assignment"]
    assert again["id"] == page.assignment["id"] and again["passes"]["answered"] == ["alignment"] and again["passes"]["current"] == "musicality"

    clock.advance(2.0)
    second = page.answer("musicality", "B", key="k-2", confidence=2.5, rationale="B swings")
    assert second.status_code == 201, second.content
    body = second.json()
    assert body["complete"] is True and body["next"]["assignment"]["id"] != page.assignment["id"]
    judgment = Judgment.objects.get(pk=body["judgment"])
    a_clip = held.a_clip_id
    b_clip = held.pair.other_clip_id(a_clip)
    assert (judgment.alignment_choice_id, judgment.musicality_choice_id) == (a_clip, b_clip)
    assert (judgment.alignment_confidence, judgment.musicality_confidence) == (Decimal("4.0"), Decimal("2.5"))
    assert judgment.rationale == "A fits\nB swings" and judgment.idempotency_key == "k-2"
    assert judgment.passes["order"] == ["alignment", "musicality"]
    assert [step["dimension"] for step in judgment.passes["steps"]] == ["alignment", "musicality"]
    assert judgment.passes["steps"][0]["answered_at"] < judgment.passes["steps"][1]["answered_at"]
    assert judgment.listening_log["source"] == "server" and judgment.listening_log["A"]["seconds"] >= MIN
    assert Assignment.objects.get(pk=held.pk).state == Assignment.State.SUBMITTED


def test_the_order_is_enforced_and_an_answer_out_of_turn_stores_nothing(clock):
    study = separate_study()
    make_pairs(study, 1)
    page = PassesPage(clock, study=study)
    page.listen_honestly()
    refused = page.answer("musicality", "A", key="k-1")
    assert refused.status_code == 409 and refused.json()["code"] == "wrong_step"
    assert "asks instruction following first" in refused.json()["detail"]
    held = Assignment.objects.get(pk=page.assignment["id"])
    assert held.first_pass == {} and held.listening_seq == 0 and not ListeningEvent.objects.exists()
    # The same listening then goes with the answer in turn.
    assert page.answer("alignment", "B", key="k-1").status_code == 201
    assert ListeningEvent.objects.filter(assignment=held).count() == 9


def test_double_submits_are_stored_once_and_a_second_key_for_an_answered_screen_is_refused(clock):
    study = separate_study()
    make_pairs(study, 2)
    page = PassesPage(clock, study=study)
    page.listen_honestly()
    batch = {"events": list(page.events), "receipts": list(page.receipts), "client_now": page.ms()}
    stored = page.answer("alignment", "A", key="k-1", listening=batch)
    repeated = page.answer("alignment", "A", key="k-1", listening=batch)
    assert (stored.status_code, repeated.status_code) == (201, 200)
    assert repeated.json() == stored.json()
    assert ListeningEvent.objects.count() == 9
    changed = page.answer("alignment", "B", key="k-other")
    assert changed.status_code == 409 and changed.json()["code"] == "step_done" and "first answer was kept" in changed.json()["detail"]
    assert Assignment.objects.get(pk=page.assignment["id"]).first_pass["choice"] == Assignment.objects.get(pk=page.assignment["id"]).a_clip_id
    # The first key cannot be spent on the second screen.
    reused = page.answer("musicality", "B", key="k-1")
    assert reused.status_code == 409 and reused.json()["code"] == "key_reused"

    done = page.answer("musicality", "B", key="k-2")
    done_again = page.answer("musicality", "B", key="k-2")
    assert (done.status_code, done_again.status_code) == (201, 200)
    assert done_again.json()["judgment"] == done.json()["judgment"] and Judgment.objects.count() == 1
    # The first screen repeated after the judgment: the same first answer, nothing new.
    late = page.answer("alignment", "A", key="k-1")
    assert late.status_code == 200 and late.json()["complete"] is False
    assert page.answer("musicality", "A", key="k-3").json()["code"] == "already_submitted"
    assert Judgment.objects.count() == 1


def test_forged_steps_are_refused_with_what_to_send_instead(clock):
    study = separate_study()
    make_pairs(study, 1)
    page = PassesPage(clock, study=study)
    page.listen_honestly()
    # Both dimensions at once, on the page's cycle or the plain endpoint, on a separate-screens study.
    for url in (page.url(), reverse("api-judgment-submit", kwargs={"assignment_id": page.assignment["id"]})):
        body = page.body(key="k-both")
        body.pop("listening") if "studies" not in url else None
        response = page.post(url, body)
        assert response.status_code == 409 and response.json()["code"] == "separate_passes", response.content
        assert "one dimension at a time" in response.json()["detail"]
    assert not Judgment.objects.exists() and not ListeningEvent.objects.exists()
    bad = page.post(page.answer_url(), {"idempotency_key": "k", "dimension": "timbre", "choice": "A", "confidence": 3})
    assert bad.status_code == 400 and "dimension" in bad.content.decode()
    # Someone else's assignment is not found, whatever the body.
    stranger = PassesPage(clock, study=study)
    assert stranger.post(page.answer_url(), {"idempotency_key": "k", "dimension": "alignment", "choice": "A", "confidence": 3}).status_code == 404
    # A together study keeps its one screen: the per-dimension endpoint refuses and the old endpoints work unchanged.
    together = StudyFactory(min_listen_seconds=MIN, overlap_target=1)
    make_pairs(together, 1)
    one = PassesPage(clock, study=together)
    assert "passes" not in one.assignment
    one.listen_honestly()
    refused = one.answer("alignment", "A", key="t-1")
    assert refused.status_code == 409 and refused.json()["code"] == "together_study"
    ok = one.submit(key="t-2")
    assert ok.status_code == 201 and Judgment.objects.get(pk=ok.json()["judgment"]).passes == {}


def test_each_answer_keeps_the_listening_proof(clock):
    study = separate_study()
    make_pairs(study, 1)
    page = PassesPage(clock, study=study)
    page.fetch("A")
    page.fetch("B")
    page.play("A", 1)
    short = page.answer("alignment", "A", key="k-1")
    assert short.status_code == 400 and short.json()["code"] == "listening_too_short"
    held = Assignment.objects.get(pk=page.assignment["id"])
    assert held.first_pass == {} and held.listening_seq == 0 and not ListeningEvent.objects.exists()
    # Bytes sent but never shown received count nothing either.
    other = separate_study()
    make_pairs(other, 1)
    unproven = PassesPage(clock, study=other)
    unproven.fetch("A", prove=False)
    unproven.fetch("B", prove=False)
    unproven.play("A", 3)
    unproven.play("B", 3, first="switch")
    refused = unproven.answer("alignment", "A", key="u-1")
    assert refused.status_code == 400 and refused.json()["code"] == "listening_too_short"
    assert "receiv" in refused.json()["detail"]
    # Replayed events (numbers already received) are ignored: the second answer adds no events and no seconds.
    page.events = []
    page.play("A", 3)
    page.play("B", 3, first="switch")
    assert page.answer("alignment", "A", key="k-1").status_code == 201
    stored = ListeningEvent.objects.filter(assignment=held).count()
    replay = {"events": [{"seq": 1, "side": "A", "kind": "play", "position": 0.0, "client_time": page.ms()}], "receipts": [], "client_now": page.ms()}
    done = page.answer("musicality", "B", key="k-2", listening=replay)
    assert done.status_code == 201, done.content
    assert ListeningEvent.objects.filter(assignment=held).count() == stored


def test_the_export_keeps_one_row_per_judgment_and_says_how_it_was_asked(clock, tmp_path):
    from tests.annotation.dataset_files import export, read_rows

    study = separate_study()
    make_pairs(study, 3)
    separate = PassesPage(clock, study=study)
    separate.listen_honestly()
    separate.answer("alignment", "A", key="s-1")
    separate.answer("musicality", "B", key="s-2")
    with_study = study.name
    study.dimension_passes = DimensionPasses.TOGETHER
    study.save()
    together = PassesPage(clock, study=study)
    together.listen_honestly()
    assert together.submit(key="t-1").status_code == 201
    export(tmp_path / "out", "--study", with_study)
    rows = [r for r in read_rows(tmp_path / "out" / "train.jsonl") if r["user id"]]
    assert len(rows) == 2 and len({r["user id"] for r in rows}) == 2
    by_choice = {tuple(r["dimension_passes"] or ()): r for r in rows}
    assert set(by_choice) == {("alignment", "musicality"), ()}
    # The shape is the single screen's: both dimensions on one row, the new key last.
    assert list(by_choice[()]) == list(by_choice[("alignment", "musicality")]) and list(rows[0])[-1] == "dimension_passes"
    assert by_choice[("alignment", "musicality")]["preference-alignment"] == "model_a"
    assert by_choice[("alignment", "musicality")]["preference-musicality"] == "model_b"
    assert any("`dimension_passes`" in p.read_text() for p in (tmp_path / "out").glob("*.md"))


def test_the_study_form_sets_the_option_and_refuses_a_bad_value(client):
    from tests.factories import UserFactory

    researcher = UserFactory(username="passes-owner", roles=["researcher"])
    client.force_login(researcher)
    body = {"name": "asked-apart", "overlap_target": 3, "overlap_share": 0.3, "min_listen_seconds": 10, "rationale_min_length": 0, "lock_ttl_seconds": 1800,
            "gold_rate": 0, "annotator_target": 0, "selection": "random", "active_share": 0.5, "licence": "CC BY 4.0", "is_active": "on"}  # fmt: skip
    bad = client.post(reverse("study-create"), {**body, "dimension_passes": "sideways"})
    assert bad.status_code == 200 and "sideways is not one of the available choices" in bad.content.decode()
    assert not Study.objects.filter(name="asked-apart").exists()
    made = client.post(reverse("study-create"), {**body, "dimension_passes": "separate"})
    assert made.status_code == 302
    study = Study.objects.get(name="asked-apart")
    assert study.dimension_passes == DimensionPasses.SEPARATE
    # Left out of an edit, it keeps its value; a post without it makes a together study, as before.
    edit = {k: v for k, v in body.items() if k != "name"}
    assert client.post(reverse("study-edit", kwargs={"name": study.name}), edit).status_code == 302
    study.refresh_from_db()
    assert study.dimension_passes == DimensionPasses.SEPARATE
    assert client.post(reverse("study-create"), {**body, "name": "asked-together"}).status_code == 302
    assert Study.objects.get(name="asked-together").dimension_passes == DimensionPasses.TOGETHER
    form = client.get(reverse("study-edit", kwargs={"name": study.name})).content.decode()
    assert "How the two questions are asked" in form and 'value="separate" selected' in form


def test_a_first_answer_from_an_earlier_serving_is_asked_again(clock):
    study = separate_study()
    make_pairs(study, 1)
    page = PassesPage(clock, study=study)
    page.listen_honestly()
    assert page.answer("alignment", "A", key="k-1").status_code == 201
    # The lock ran out and the pair came back to the same annotator: served again, after the first answer.
    clock.advance(5.0)
    Assignment.objects.filter(pk=page.assignment["id"]).update(served_at=clock.now)
    again = page.post(reverse("api-assignment-next", kwargs={"name": study.name}), {}).json()["assignment"]
    assert again["id"] == page.assignment["id"] and again["passes"]["current"] == "alignment" and again["passes"]["answered"] == []
    refused = page.answer("musicality", "B", key="k-2")
    assert refused.status_code == 409 and refused.json()["code"] == "wrong_step"
    clock.advance(1.0)
    page.events = []
    page.play("A", 3)
    page.play("B", 3, first="switch")
    assert page.answer("alignment", "B", key="k-3").status_code == 201
    held = Assignment.objects.get(pk=page.assignment["id"])
    assert held.first_pass["key"] == "k-3" and held.first_pass["choice"] == held.pair.other_clip_id(held.a_clip_id)
