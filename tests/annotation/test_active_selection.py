"""Active selection in the assignment engine: the ranked order, the cap on its share, and how each pair was chosen."""

from __future__ import annotations

from datetime import timedelta

import pytest

from annotation import services
from annotation.active import RANDOM, UNCERTAINTY, active_draw, active_order, draw_mode
from annotation.models import Assignment, Judgment, Pair, PairPriority
from common.errors import ServiceError
from tests.factories import PairFactory, StudyAnnotatorFactory, StudyFactory
from tests.listening import listen

pytestmark = pytest.mark.django_db

LOG = {"A": {"plays": 1, "seconds": 3.0}, "B": {"plays": 1, "seconds": 3.0}, "switches": 1}


def ranked_study(*, n=6, overlap=1, share=1.0, ranked=None, selection=UNCERTAINTY):
    study = StudyFactory(overlap_target=overlap, selection=selection, active_share=share, min_listen_seconds=1.0)
    pairs = [PairFactory(study=study, overlap=overlap) for _ in range(n)]
    ranked = pairs if ranked is None else ranked
    # The first ranked pair gets the lowest value, so the order differs from creation order.
    services.pair_priorities_replace(study=study, mode=UNCERTAINTY, values={p.pk: float(i) for i, p in enumerate(ranked)}, source="test")
    return study, pairs


def take(study, user, key):
    assignment = services.assignment_next(study=study, annotator=user)
    if assignment is None:
        return None
    listen(assignment, seconds=1.0)
    services.judgment_submit(
        assignment_id=assignment.pk, annotator=user, alignment="A", alignment_confidence=3, musicality="B", musicality_confidence=3,
        listening_log=LOG, idempotency_key=key, now=assignment.served_at + timedelta(seconds=5),
    )  # fmt: skip
    return assignment


def test_the_draw_rule_is_seeded_and_keeps_its_share():
    picks = [active_draw(seed=42, draw=d, share=0.3) for d in range(3000)]
    assert picks == [active_draw(seed=42, draw=d, share=0.3) for d in range(3000)]
    assert 0.27 < sum(picks) / len(picks) < 0.33
    assert not any(active_draw(seed=42, draw=d, share=0.0) for d in range(200))
    assert all(active_draw(seed=42, draw=d, share=1.0) for d in range(200))
    assert draw_mode(selection=RANDOM, seed=1, draw=0, share=1.0) == RANDOM
    assert draw_mode(selection=UNCERTAINTY, seed=1, draw=0, share=1.0) == UNCERTAINTY
    assert active_order({1: 0.2, 2: 0.9, 3: 0.9}, {2: 50, 3: 10}) == [3, 2, 1]


def test_ranked_pairs_come_first_highest_first_and_say_so():
    study, pairs = ranked_study(n=6, ranked=None)
    user = StudyAnnotatorFactory(study=study).annotator
    served = [take(study, user, f"k{i}") for i in range(6)]
    assert [a.pair_id for a in served] == [p.pk for p in reversed(pairs)]
    assert {a.selection for a in served} == {UNCERTAINTY}
    assert set(Judgment.objects.values_list("selection", flat=True)) == {UNCERTAINTY}
    assert take(study, user, "k-last") is None


def test_full_pairs_are_skipped_and_unranked_pairs_follow_in_the_random_order():
    study = StudyFactory(overlap_target=1, selection=UNCERTAINTY, active_share=1.0, min_listen_seconds=1.0)
    pairs = [PairFactory(study=study, overlap=1) for _ in range(4)]
    services.pair_priorities_replace(study=study, mode=UNCERTAINTY, values={pairs[0].pk: 0.9, pairs[1].pk: 0.5}, source="test")
    first, second = (StudyAnnotatorFactory(study=study).annotator for _ in range(2))
    assert take(study, first, "a").pair_id == pairs[0].pk
    # pairs[0] is full: the next annotator's active draw gets the next ranked pair.
    assert take(study, second, "b").pair_id == pairs[1].pk
    rest = [take(study, first, "c"), take(study, first, "d")]
    assert {a.pair_id for a in rest} == {pairs[2].pk, pairs[3].pk}
    assert {a.selection for a in rest} == {RANDOM}
    per_pair = Judgment.objects.values_list("pair_id", flat=True)
    assert sorted(per_pair) == sorted(p.pk for p in pairs)


def test_the_share_caps_actively_chosen_pairs():
    study, pairs = ranked_study(n=40, share=0.0)
    user = StudyAnnotatorFactory(study=study).annotator
    served = [take(study, user, f"z{i}") for i in range(10)]
    assert {a.selection for a in served} == {RANDOM}

    study, pairs = ranked_study(n=60, share=0.5)
    membership = StudyAnnotatorFactory(study=study)
    served = [take(study, membership.annotator, f"h{i}") for i in range(40)]
    # Each draw follows the seeded rule, so the recorded choice is exactly the rule's.
    expected = [draw_mode(selection=UNCERTAINTY, seed=membership.seed, draw=d, share=0.5) for d in range(40)]
    assert [a.selection for a in served] == expected
    assert 0.3 < expected.count(UNCERTAINTY) / 40 < 0.7
    # Active draws took the highest-ranked pairs still open, in order.
    values = dict(PairPriority.objects.filter(pair__study=study).values_list("pair_id", "value"))
    active = [values[a.pair_id] for a in served if a.selection == UNCERTAINTY]
    assert active == sorted(active, reverse=True)


def test_gold_pool_draws_are_recorded_as_gold():
    study, pairs = ranked_study(n=4)
    gold = PairFactory(study=study, kind=Pair.Kind.GOLD, overlap=1)
    study.gold_rate = 1.0
    study.save()
    user = StudyAnnotatorFactory(study=study).annotator
    first = take(study, user, "g")
    assert (first.pair_id, first.selection) == (gold.pk, "gold")
    assert Judgment.objects.get(pair=gold).selection == "gold"


def test_random_studies_ignore_priorities():
    study, pairs = ranked_study(n=5, selection=RANDOM)
    user = StudyAnnotatorFactory(study=study).annotator
    served = [take(study, user, f"r{i}") for i in range(5)]
    assert {a.selection for a in served} == {RANDOM}
    assert Assignment.objects.filter(selection=UNCERTAINTY).count() == 0


def test_priorities_are_replaced_whole_and_checked():
    study, pairs = ranked_study(n=3)
    other = PairFactory()
    services.pair_priorities_replace(study=study, mode=UNCERTAINTY, values={pairs[0].pk: 0.5}, source="again")
    assert list(PairPriority.objects.filter(pair__study=study).values_list("pair_id", "value", "source")) == [(pairs[0].pk, 0.5, "again")]
    with pytest.raises(ServiceError, match="not in study"):
        services.pair_priorities_replace(study=study, mode=UNCERTAINTY, values={other.pk: 1.0})
    with pytest.raises(ServiceError, match="Unknown selection mode"):
        services.pair_priorities_replace(study=study, mode="random", values={})
    assert PairPriority.objects.filter(pair__study=study).count() == 1
