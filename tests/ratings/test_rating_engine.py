"""The rating engine: task types, items, locks, overlap, order per annotator, listening enforced on the server."""

from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.ratings import services
from annotation.ratings.models import Rating, RatingAssignment, RatingItem, RatingSubmission
from common.errors import ServiceError
from tests.factories import ClipFactory, ConditionFactory, PairFactory, StudyFactory
from tests.ratings_helpers import answer_for, listen_all, member, rating_study

pytestmark = pytest.mark.django_db


def _rate(assignment, value=3, **extra):
    return services.rating_submit(assignment_id=assignment.pk, annotator=assignment.annotator, ratings=answer_for(assignment, value), idempotency_key=f"k-{assignment.pk}", **extra)


def test_acr_item_is_one_clip_and_multi_takes_reference_and_anchor():
    acr = rating_study(task="acr", items=0)
    with pytest.raises(ServiceError, match="exactly one clip"):
        services.rating_item_add(study=acr, condition=ConditionFactory(), clips=[ClipFactory(), ClipFactory()])
    multi = rating_study(task="multi", items=1, clips_per_item=3, reference=True, anchor=True)
    item = multi.rating_items.get()
    assert sorted(item.item_clips.values_list("role", flat=True)) == ["anchor", "reference", "test", "test", "test"]


def test_a_study_holding_pairs_cannot_become_a_rating_study():
    study = StudyFactory()
    PairFactory(study=study)
    with pytest.raises(ServiceError, match="already holds pairs"):
        services.rating_task_set(study=study, task="acr", dimensions=["musicality"])
    with pytest.raises(ServiceError, match="acr or multi"):
        services.rating_task_set(study=StudyFactory(), task="likert", dimensions=["musicality"])


def test_gold_needs_an_expected_range_inside_the_scale():
    study = rating_study(task="acr", items=0)
    clip = ClipFactory()
    with pytest.raises(ServiceError, match="expected rating range"):
        services.rating_item_add(study=study, condition=ConditionFactory(), clips=[clip], kind="gold")
    with pytest.raises(ServiceError, match="within the scale"):
        services.rating_item_add(study=study, condition=ConditionFactory(), clips=[clip], kind="gold", expected={clip.pk: {"musicality": [4, 7]}})
    item = services.rating_item_add(study=study, condition=ConditionFactory(), clips=[clip], kind="gold", expected={clip.pk: {"musicality": [4, 5]}})
    assert item.expected == {str(clip.pk): {"musicality": [4.0, 5.0]}}


def test_same_lock_comes_back_until_submitted_then_a_new_item():
    study = rating_study(task="acr", items=2)
    user = member(study)
    first = services.rating_next(study=study, annotator=user)
    assert services.rating_next(study=study, annotator=user).pk == first.pk
    listen_all(first)
    _rate(first)
    second = services.rating_next(study=study, annotator=user)
    assert second.item_id != first.item_id
    listen_all(second)
    _rate(second)
    assert services.rating_next(study=study, annotator=user) is None


def test_overlap_target_is_never_exceeded_and_counters_match_rows():
    study = rating_study(task="acr", items=2, overlap_target=2)
    users = [member(study) for _ in range(6)]
    taken = [services.rating_next(study=study, annotator=u) for u in users]
    # 2 items x 2 slots: four locks, then nothing for the other two.
    assert sum(a is not None for a in taken) == 4 and taken[4] is None and taken[5] is None
    for item in RatingItem.objects.filter(study=study):
        assert item.n_live == item.assignments.filter(state="active").count() == 2


def test_a_lapsed_lock_is_released_for_others_and_a_late_submit_is_refused():
    study = rating_study(task="acr", items=1, overlap_target=1, lock_ttl_seconds=10)
    first_user, second_user = member(study), member(study)
    held = services.rating_next(study=study, annotator=first_user)
    assert services.rating_next(study=study, annotator=second_user) is None
    later = timezone.now() + timedelta(seconds=60)
    moved = services.rating_next(study=study, annotator=second_user, now=later)
    assert moved is not None and moved.item_id == held.item_id
    listen_all(held)
    with pytest.raises(ServiceError, match="expired"):
        _rate(held)
    item = RatingItem.objects.get(pk=held.item_id)
    assert (item.n_live, item.n_ratings) == (1, 0)


def test_order_is_random_per_annotator_recorded_and_labels_are_blind():
    study = rating_study(task="multi", items=1, clips_per_item=5, reference=True, anchor=True, overlap_target=8)
    orders = set()
    for _ in range(8):
        a = services.rating_next(study=study, annotator=member(study))
        assert sorted(a.order) == sorted(a.item.item_clips.values_list("clip_id", flat=True))
        orders.add(tuple(a.order))
    assert len(orders) > 1


def test_server_refuses_a_rating_of_an_unheard_clip():
    study = rating_study(task="multi", items=1, clips_per_item=3)
    user = member(study)
    a = services.rating_next(study=study, annotator=user)
    listen_all(a, skip=("C",))
    with pytest.raises(ServiceError) as refused:
        _rate(a, 50)
    assert refused.value.code == "listening_too_short" and "clip C" in refused.value.message
    assert not RatingSubmission.objects.exists()
    listen_all(a, start=timezone.now() - timedelta(seconds=5), skip=("A", "B"))
    answer, created = _rate(a, 50)
    assert created and Rating.objects.filter(submission_id=answer["submission"]).count() == 3 * 2


def test_values_are_checked_per_scale_and_a_retry_stores_one_answer():
    study = rating_study(task="acr", items=1, dimensions=("musicality",))
    a = services.rating_next(study=study, annotator=member(study))
    listen_all(a)
    for bad in (0, 6, 2.5, True, "4", float("nan")):
        with pytest.raises(ServiceError, match="Clip A, musicality"):
            services.rating_submit(assignment_id=a.pk, annotator=a.annotator, ratings={"A": {"musicality": bad}}, idempotency_key="x")
    with pytest.raises(ServiceError, match="Rate every clip"):
        services.rating_submit(assignment_id=a.pk, annotator=a.annotator, ratings={"B": {"musicality": 3}}, idempotency_key="x")
    first = services.rating_submit(assignment_id=a.pk, annotator=a.annotator, ratings={"A": {"musicality": 4}}, idempotency_key="x")
    again = services.rating_submit(assignment_id=a.pk, annotator=a.annotator, ratings={"A": {"musicality": 4}}, idempotency_key="x")
    assert first[1] and not again[1] and first[0] == again[0]
    assert RatingSubmission.objects.count() == 1 and RatingAssignment.objects.get(pk=a.pk).state == "submitted"


def test_skip_frees_the_slot_and_needs_a_reason():
    study = rating_study(task="acr", items=1, overlap_target=1)
    a = services.rating_next(study=study, annotator=member(study))
    with pytest.raises(ServiceError, match="Say why"):
        services.rating_skip(assignment_id=a.pk, annotator=a.annotator, reason=" ")
    services.rating_skip(assignment_id=a.pk, annotator=a.annotator, reason="silent")
    assert RatingItem.objects.get(pk=a.item_id).n_live == 0
    assert services.rating_next(study=study, annotator=member(study)) is not None


def test_gold_items_come_at_the_study_rate():
    study = rating_study(task="acr", items=6, gold_rate=1.0, overlap_target=1)
    clip = ClipFactory()
    gold = services.rating_item_add(study=study, condition=ConditionFactory(), clips=[clip], kind="gold", expected={clip.pk: {"musicality": [4, 5]}})
    a = services.rating_next(study=study, annotator=member(study))
    assert a.item_id == gold.pk and a.selection == "gold"


def test_a_task_refuses_listening_events_past_its_limit_and_keeps_what_it_had(monkeypatch):
    monkeypatch.setattr(services, "MAX_EVENTS_PER_ASSIGNMENT", 5)
    study = rating_study(task="acr", items=1)
    user = member(study)
    assignment = services.rating_next(study=study, annotator=user)
    label, now = next(iter(assignment.labels)), timezone.now()

    def send(seqs):
        return services.rating_listening_record(assignment_id=assignment.pk, annotator=user, events=[{"seq": n, "side": label, "kind": "tick"} for n in seqs], now=now)

    assert send(range(1, 5))["accepted"] == 4
    with pytest.raises(ServiceError) as refused:
        send(range(5, 7))
    assert refused.value.code == "too_many_events" and refused.value.status == 429 and refused.value.retry_after == 60
    assignment.refresh_from_db()
    assert assignment.listening_events.count() == 4 and assignment.listening_seq == 4 and assignment.listening["events"] == 4
    # A replay adds nothing, so it is answered at the limit; one more new event still fits.
    assert send([4])["ignored"] == 1
    assert send([5])["last_seq"] == 5
