"""The pair counters the next-pair lookup reads (judgments, active locks) always equal what the rows say, whichever path writes."""

from datetime import timedelta

import pytest
from django.db.models import Count, Q

from annotation import services
from annotation.models import Assignment, Judgment, Pair
from tests.factories import PairFactory, StudyAnnotatorFactory, StudyFactory
from tests.annotation.helpers import submit

pytestmark = pytest.mark.django_db


def assert_counters_match(study):
    rows = Pair.objects.filter(study=study).annotate(
        judged=Count("judgments", distinct=True), active=Count("assignments", filter=Q(assignments__state=Assignment.State.ACTIVE), distinct=True)
    )
    for pair in rows:
        assert (pair.n_judgments, pair.n_live) == (pair.judged, pair.active), f"pair {pair.pk}"


def test_counters_follow_locks_submits_skips_expiry_withdrawal_and_deletes():
    study = StudyFactory(overlap_target=2, overlap_share=1.0, min_listen_seconds=2.0)
    pairs = [PairFactory(study=study, overlap=2) for _ in range(3)]
    users = [StudyAnnotatorFactory(study=study).annotator for _ in range(4)]
    held = [services.assignment_next(study=study, annotator=u) for u in users]
    assert_counters_match(study)
    submit(held[0], users[0], "k0")
    services.assignment_skip(assignment=held[1], annotator=users[1], reason="does not play")
    assert_counters_match(study)
    # A lapsed lock keeps its slot until the engine releases it when nothing else has room.
    later = held[2].lock_expires_at + timedelta(seconds=1)
    while services.assignment_next(study=study, annotator=users[1], now=later) is not None:
        services.assignment_skip(assignment=Assignment.objects.filter(annotator=users[1], state=Assignment.State.ACTIVE).latest("id"), annotator=users[1], reason="x")
    assert_counters_match(study)
    services.consent_withdraw(user=users[3])
    assert_counters_match(study)
    Judgment.objects.filter(annotator=users[0]).delete()
    Assignment.objects.filter(annotator=users[2]).delete()
    assert_counters_match(study)
    assert sum(p.n_judgments for p in Pair.objects.filter(pk__in=[p.pk for p in pairs])) == 0


def test_never_more_locks_and_judgments_than_overlap_by_the_counters():
    study = StudyFactory(overlap_target=2, overlap_share=1.0, min_listen_seconds=2.0)
    PairFactory(study=study, overlap=2)
    users = [StudyAnnotatorFactory(study=study).annotator for _ in range(3)]
    got = [services.assignment_next(study=study, annotator=u) for u in users]
    assert [g is not None for g in got] == [True, True, False]
    pair = Pair.objects.get(study=study)
    assert pair.n_judgments + pair.n_live == pair.overlap
