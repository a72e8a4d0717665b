"""The counters `next` reads instead of counting history (migration 0012) equal what the rows say, whichever path writes.

Per membership: draws (the annotator's assignments in the study, any state) and judgments;
per study: pairs and gold/catch pairs. Kept by triggers on both databases; a full save()
of a stale instance must not write old values back.
"""

import pytest

from annotation import services
from annotation.models import Assignment, Judgment, Pair, Study, StudyAnnotator
from tests.annotation.helpers import submit
from tests.factories import AnnotatorFactory, PairFactory, StudyAnnotatorFactory, StudyFactory

pytestmark = pytest.mark.django_db


def assert_counters_match(study):
    study = Study.objects.get(pk=study.pk)
    pairs = Pair.objects.filter(study=study)
    assert (study.n_pairs, study.n_special) == (pairs.count(), pairs.filter(kind__in=["gold", "catch"]).count())
    for membership in StudyAnnotator.objects.filter(study=study):
        draws = Assignment.objects.filter(annotator_id=membership.annotator_id, pair__study=study).count()
        done = Judgment.objects.filter(annotator_id=membership.annotator_id, pair__study=study).count()
        assert (membership.n_draws, membership.n_done) == (draws, done), f"membership {membership.pk}"


def test_counters_follow_draws_submits_skips_deletes_and_late_membership():
    study = StudyFactory(overlap_target=2, overlap_share=1.0, min_listen_seconds=2.0, gold_rate=0.5)
    pairs = [PairFactory(study=study, overlap=2) for _ in range(4)] + [PairFactory(study=study, overlap=2, kind=Pair.Kind.GOLD)]
    users = [StudyAnnotatorFactory(study=study).annotator for _ in range(3)]
    assert_counters_match(study)
    assert Study.objects.get(pk=study.pk).n_special == 1
    for round_ in range(3):
        for n, user in enumerate(users):
            held = services.assignment_next(study=study, annotator=user)
            if held is None:
                continue
            if n == 1:
                services.assignment_skip(assignment=held, annotator=user, reason="does not play")
            else:
                submit(held, user, f"k{round_}-{n}")
            assert_counters_match(study)
    membership = StudyAnnotator.objects.get(study=study, annotator=users[0])
    assert membership.n_done == 3 and membership.n_draws == 3
    # The answer's progress comes from the counters.
    following = services.assignment_next(study=study, annotator=users[0])
    assert following.progress["done"] == 3 and following.progress["planned"] == len(pairs)

    Judgment.objects.filter(annotator=users[0]).first().delete()
    Assignment.objects.filter(annotator=users[2], state=Assignment.State.SKIPPED).delete()
    assert_counters_match(study)

    # Leaving and joining again starts from the history already there.
    StudyAnnotator.objects.filter(study=study, annotator=users[0]).delete()
    services.study_annotator_add(study=study, user=users[0])
    assert_counters_match(study)
    assert StudyAnnotator.objects.get(study=study, annotator=users[0]).n_done == 2

    # Pairs: bulk imports, a kind change, deletes.
    mixed = [(pairs[i].clip_a, pairs[j].clip_b) for i, j in ((1, 2), (2, 3), (3, 1))]
    Pair.objects.bulk_create(
        [Pair(study=study, condition=pairs[0].condition, clip_a=a, clip_b=b, clip_key=Pair.key_for(a.pk, b.pk)) for a, b in mixed]
    )
    Pair.objects.filter(pk=pairs[0].pk).update(kind=Pair.Kind.CATCH)
    assert_counters_match(study)
    Pair.objects.filter(study=study, n_judgments=0, n_live=0, kind=Pair.Kind.REGULAR).delete()
    assert_counters_match(study)


def test_a_stale_instance_saved_whole_keeps_the_counters_the_database_moved():
    study = StudyFactory()
    stale = Study.objects.get(pk=study.pk)
    membership = StudyAnnotatorFactory(study=study)
    stale_membership = StudyAnnotator.objects.get(pk=membership.pk)
    PairFactory(study=study)
    services.assignment_next(study=study, annotator=membership.annotator)
    moved = StudyAnnotator.objects.get(pk=membership.pk)
    stale.title = "Renamed"
    stale.save()
    stale_membership.is_active = True
    stale_membership.save()
    study.refresh_from_db()
    membership.refresh_from_db()
    assert study.title == "Renamed" and study.n_pairs == 1
    assert (membership.n_draws, membership.lock_version) == (1, moved.lock_version)
    assert_counters_match(study)


def test_membership_counts_stay_per_study():
    first, second = StudyFactory(min_listen_seconds=2.0), StudyFactory(min_listen_seconds=2.0)
    user = AnnotatorFactory()
    for study in (first, second):
        PairFactory(study=study)
        services.study_annotator_add(study=study, user=user)
    held = services.assignment_next(study=first, annotator=user)
    submit(held, user, "only-first")
    assert StudyAnnotator.objects.get(study=first, annotator=user).n_done == 1
    assert StudyAnnotator.objects.get(study=second, annotator=user).n_done == 0
    assert_counters_match(first)
    assert_counters_match(second)
