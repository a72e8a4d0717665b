"""Twenty annotator threads locking and rating at once: no item over-filled, none rated twice by one annotator, nothing lost.

Runs on the configured database: SQLite by default and PostgreSQL in CI's second pass, where the
engine relies on SELECT ... FOR UPDATE SKIP LOCKED, as the pairwise engine does.
"""

import threading
from collections import Counter

import pytest
from django.db import connection

from annotation.ratings import services
from annotation.ratings.models import RatingItem, RatingSubmission
from tests.ratings_helpers import answer_for, listen_all, member, rating_study

N_ANNOTATORS = 20
N_ITEMS = 12
OVERLAP = 3


@pytest.mark.engine
@pytest.mark.django_db(transaction=True)
def test_twenty_threads_never_over_assign_repeat_or_lose():
    study = rating_study(task="multi", items=N_ITEMS, clips_per_item=2, dimensions=("musicality",), overlap_target=OVERLAP)
    users = [member(study) for _ in range(N_ANNOTATORS)]
    accepted, errors = [], []
    lock = threading.Lock()
    start = threading.Barrier(N_ANNOTATORS, timeout=120)

    def work(user):
        try:
            start.wait()
            while True:
                a = services.rating_next(study=study, annotator=user)
                if a is None:
                    break
                listen_all(a)
                kwargs = dict(assignment_id=a.pk, annotator=user, ratings=answer_for(a, 60), idempotency_key=f"{user.pk}-{a.pk}")
                answer, created = services.rating_submit(**kwargs)
                assert created and services.rating_submit(**kwargs) == (answer, False)
                with lock:
                    accepted.append((user.pk, a.item_id))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=work, args=(u,)) for u in users]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=240)
    assert not errors, errors[:3]
    per_item = Counter(item for _, item in accepted)
    assert len(accepted) == N_ITEMS * OVERLAP == RatingSubmission.objects.count()
    assert set(per_item.values()) == {OVERLAP}
    assert len(set(accepted)) == len(accepted)
    for item in RatingItem.objects.filter(study=study):
        assert (item.n_ratings, item.n_live) == (OVERLAP, 0)


@pytest.mark.engine
@pytest.mark.django_db(transaction=True)
def test_concurrent_next_requests_from_one_annotator_take_one_lock():
    study = rating_study(task="acr", items=5)
    user = member(study)
    got, errors = [], []
    start = threading.Barrier(8, timeout=60)

    def request():
        try:
            start.wait()
            got.append(services.rating_next(study=study, annotator=user).pk)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=request) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors and len(set(got)) == 1
    assert sum(i.n_live for i in RatingItem.objects.filter(study=study)) == 1
