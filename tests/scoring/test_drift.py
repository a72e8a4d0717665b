"""Drift: a later, worse recruitment batch shows as a drop by day and by batch, and pauses its link."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest
from django.utils import timezone

from annotation import services as annotation_services
from annotation.models import Judgment, Pair
from common.errors import ServiceError
from scoring.drift import drift_report, drift_section
from tests.factories import ClipFactory, ConditionFactory, JudgmentFactory, PairFactory, StudyFactory, UserFactory

pytestmark = pytest.mark.django_db


def _enter(link, pid: str):
    participant, _ = annotation_services.recruitment_enter(token=link.token, params={"PROLIFIC_PID": pid, "STUDY_ID": "s1", "SESSION_ID": f"x{pid}"})
    return participant


def _crowd(study, link, *, people: int, right: float, day, rng, regular, gold, first: int):
    """Each participant answers every pair; on each dimension the better clip with probability `right`.

    All join first (a link may pause while its participants are still answering), then answer."""
    users = [_enter(link, f"P{first + k}").user for k in range(people)]
    for user in users:
        for pair in [*regular, *gold]:
            picks = [pair.clip_a if rng.random() < right else pair.clip_b for _ in range(2)]
            JudgmentFactory(annotator=user, pair=pair, alignment_choice=picks[0], musicality_choice=picks[1])
        Judgment.objects.filter(annotator=user).update(created_at=day)


@pytest.fixture
def study_with_batches():
    rng = np.random.default_rng(7)
    study = StudyFactory(name="drift-study")
    regular = [PairFactory(study=study, condition=ConditionFactory(), clip_a=ClipFactory(), clip_b=ClipFactory(), overlap=20) for _ in range(8)]
    gold = []
    for _ in range(5):
        a, b = ClipFactory(), ClipFactory()
        gold.append(PairFactory(study=study, condition=ConditionFactory(), clip_a=a, clip_b=b, kind=Pair.Kind.GOLD, expected_alignment=a, expected_musicality=a, overlap=20))
    good = annotation_services.recruitment_link_create(study=study, completion_code="OK1", label="batch-1")
    bad = annotation_services.recruitment_link_create(study=study, completion_code="OK2", label="batch-2", gold_pause_below=0.7, gold_pause_window=4)
    day1 = timezone.now() - timedelta(days=2)
    _crowd(study, good, people=4, right=0.92, day=day1, rng=rng, regular=regular, gold=gold, first=0)
    _crowd(study, bad, people=4, right=0.5, day=day1 + timedelta(days=1), rng=rng, regular=regular, gold=gold, first=100)
    return study, good, bad


def test_the_worse_later_batch_shows_by_day_and_by_batch(study_with_batches):
    study, _, _ = study_with_batches
    section = drift_section(study=study, rounds=200, seed=1)
    by_batch = {row["group"]: row for row in section["by_batch"]}
    assert set(by_batch) == {"batch-1", "batch-2"}
    assert by_batch["batch-1"]["annotators"] == 4 and by_batch["batch-2"]["votes"] == 4 * 13
    good, bad = by_batch["batch-1"], by_batch["batch-2"]
    assert good["gold"]["value"] > 0.8 and bad["gold"]["value"] < 0.7
    assert bad["gold"]["ci"][0] <= bad["gold"]["value"] <= bad["gold"]["ci"][1]
    assert bad["agreement"]["value"] < good["agreement"]["value"]
    assert good["listening_seconds"]["value"] == 10.0  # 5 s on each clip
    assert len(section["by_day"]) == 2
    flagged = {(f["grouping"], f["group"], f["figure"]) for f in section["flags"]}
    assert ("batch", "batch-2", "gold") in flagged and ("batch", "batch-1", "gold") not in flagged
    later_day = section["by_day"][1]["group"]
    assert ("day", later_day, "gold") in flagged


def test_agreement_counts_each_other_annotator_once_and_leaves_out_ties():
    import pandas as pd

    from scoring.drift import COLUMNS

    def vote(annotator, pair, day, choice):
        return (annotator, pair, day, None, None, "regular", None, None, choice, choice, 1.0, 1.0)

    rows = [
        # Pair 1: annotators 1, 2 and 4 pick clip 10; annotator 3 picks 11, twice (a repeat counts once for the others).
        vote(1, 1, "2026-01-01", 10), vote(2, 1, "2026-01-01", 10), vote(4, 1, "2026-01-01", 10),
        vote(3, 1, "2026-01-02", 11), vote(3, 1, "2026-01-02", 11),
        # Pair 2: one vote each way: each voter's others are one vote against.
        vote(1, 2, "2026-01-01", 20), vote(2, 2, "2026-01-01", 21),
        # Pair 3: a lone vote has no one to agree with.
        vote(1, 3, "2026-01-01", 30),
    ]  # fmt: skip
    day1, day2 = drift_report(pd.DataFrame(rows, columns=COLUMNS), rounds=50)["by_day"]
    # Day 1: pair 1 three agreeing votes (2 others for, 1 against), pair 2 two disagreeing, pair 3 left out.
    assert day1["agreement"]["n"] == 5 and day1["agreement"]["value"] == pytest.approx(0.6)
    # Day 2: annotator 3's two votes see three others against.
    assert day2["agreement"]["n"] == 2 and day2["agreement"]["value"] == 0.0


def test_a_link_pauses_when_its_recent_gold_accuracy_falls_and_resumes(study_with_batches):
    study, good, bad = study_with_batches
    before = bad.participants.count()
    with pytest.raises(ServiceError) as refused:
        _enter(bad, "P999")
    assert refused.value.code == "paused" and "paused by its researchers" in refused.value.message
    bad.refresh_from_db()
    assert bad.paused_at is not None and "Gold accuracy of the last 4 participants" in bad.pause_reason and "below the link's 70%" in bad.pause_reason
    assert bad.participants.count() == before
    # A returning participant is not a new one: the pause does not stop them.
    returning = bad.participants.order_by("pk").first()
    assert returning is not None
    # The good link has no threshold and never pauses.
    _enter(good, "P500")
    good.refresh_from_db()
    assert good.paused_at is None
    resumed = annotation_services.recruitment_link_resume(study=study, link_id=bad.pk)
    assert resumed.paused_at is None and resumed.pause_reason == "" and resumed.resumed_at is not None
    # Those who joined before the resume no longer count: the next participant is admitted.
    _enter(bad, "P1000")
    with pytest.raises(ServiceError, match="not paused"):
        annotation_services.recruitment_link_resume(study=study, link_id=bad.pk)


def test_too_few_gold_answers_decide_nothing(db):
    study = StudyFactory(name="drift-few")
    a, b = ClipFactory(), ClipFactory()
    gold = PairFactory(study=study, condition=ConditionFactory(), clip_a=a, clip_b=b, kind=Pair.Kind.GOLD, expected_alignment=a, expected_musicality=a, overlap=5)
    link = annotation_services.recruitment_link_create(study=study, completion_code="C", gold_pause_below=0.9)
    user = _enter(link, "Q1").user
    JudgmentFactory(annotator=user, pair=gold, alignment_choice=b, musicality_choice=b)  # 0 of 2 right, but only 2 answers
    _enter(link, "Q2")
    link.refresh_from_db()
    assert link.paused_at is None
    with pytest.raises(ServiceError, match="share from 0 to 1"):
        annotation_services.recruitment_link_create(study=study, completion_code="C", gold_pause_below=1.5)


def test_the_study_page_shows_the_pause_and_its_owner_resumes_it(client, study_with_batches):
    from django.urls import reverse

    study, _, bad = study_with_batches
    study.owner = UserFactory(username="drift-owner", roles=["researcher"])
    study.save(update_fields=["owner"])
    enter = reverse("recruitment-enter", kwargs={"token": bad.token})
    refused = client.post(f"{enter}?PROLIFIC_PID=NEW1", {})
    assert refused.status_code == 410 and "paused by its researchers" in refused.content.decode()
    client.force_login(study.owner)
    page = client.get(reverse("study-manage", kwargs={"name": study.name})).content.decode()
    assert ">paused<" in page and "Gold accuracy of the last 4 participants" in page and "Pauses below 0.70 gold" in page
    # The form takes the threshold; a share above 1 is a form error that stores nothing.
    body = {"cap": "10", "days": "7", "completion_url": "https://app.prolific.com/submissions/complete", "completion_code": "OK3"}
    assert client.post(reverse("study-link-add", kwargs={"name": study.name}), {**body, "gold_pause_below": "1.2"}).status_code == 400
    assert client.post(reverse("study-link-add", kwargs={"name": study.name}), {**body, "gold_pause_below": "0.8", "gold_pause_window": "6"}).status_code == 302
    made = study.recruitment_links.get(completion_code="OK3")
    assert (made.gold_pause_below, made.gold_pause_window) == (0.8, 6)
    response = client.post(reverse("study-link-resume", kwargs={"name": study.name, "link_id": bad.pk}))
    assert response.status_code == 302
    bad.refresh_from_db()
    assert bad.paused_at is None
    client.logout()
    assert client.post(f"{enter}?PROLIFIC_PID=NEW1", {}).status_code == 200
