"""30 annotator threads requesting and submitting at once: no over-assignment, no repeats, no lost judgments.

Runs on whichever database is configured: SQLite (embedded default) and, in CI's
second pass, PostgreSQL, where the engine relies on SELECT ... FOR UPDATE SKIP LOCKED.
"""

import threading
from collections import Counter
from datetime import timedelta

import pytest
from django.db import close_old_connections, connection

from annotation import services
from annotation.models import Assignment, Judgment
from tests.factories import PairFactory, StudyAnnotatorFactory, StudyFactory
from tests.listening import listen

N_ANNOTATORS = 30
N_PAIRS = 40
OVERLAP = 3


@pytest.mark.engine
@pytest.mark.django_db(transaction=True)
def test_thirty_threads_never_over_assign_repeat_or_lose():
    study = StudyFactory(overlap_target=OVERLAP, overlap_share=1.0, min_listen_seconds=1.0, lock_ttl_seconds=600)
    pairs = [PairFactory(study=study, overlap=OVERLAP) for _ in range(N_PAIRS)]
    annotators = [StudyAnnotatorFactory(study=study).annotator for _ in range(N_ANNOTATORS)]
    accepted: list[tuple[int, int]] = []
    errors: list[BaseException] = []
    lock = threading.Lock()
    start = threading.Barrier(N_ANNOTATORS, timeout=120)

    def work(user):
        try:
            start.wait()
            while True:
                a = services.assignment_next(study=study, annotator=user)
                if a is None:
                    break
                listen(a, seconds=1.0)
                log = {"A": {"plays": 1, "seconds": 1.0}, "B": {"plays": 1, "seconds": 1.0}, "switches": 1}
                kwargs = dict(
                    assignment_id=a.pk, annotator=user, alignment="A", alignment_confidence=3, musicality="B",
                    musicality_confidence=3, listening_log=log, idempotency_key=f"{user.pk}-{a.pk}",
                    now=a.served_at + timedelta(seconds=5),
                )
                answer, created = services.judgment_submit(**kwargs)
                # A client retry with the same key must not store a second judgment.
                replay, created_again = services.judgment_submit(**kwargs)
                assert created and not created_again and replay == answer
                with lock:
                    accepted.append((user.pk, a.pair_id))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=work, args=(u,)) for u in annotators]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    close_old_connections()

    assert not errors, errors[:3]
    judgments = list(Judgment.objects.values_list("annotator_id", "pair_id"))
    # Never lost: every accepted submit is stored, and nothing else is.
    assert sorted(judgments) == sorted(accepted)
    # Never repeated: one judgment per (annotator, pair).
    assert len(set(judgments)) == len(judgments)
    per_pair = Counter(pair_id for _, pair_id in judgments)
    # Never over-assigned, and with 30 annotators every pair fills up.
    assert max(per_pair.values()) <= OVERLAP
    assert sum(per_pair.values()) == N_PAIRS * OVERLAP
    assert not Assignment.objects.filter(state=Assignment.State.ACTIVE).exists()
    assert {p.pk for p in pairs} == set(per_pair)


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_twenty_concurrent_next_requests_from_one_annotator_take_one_lock():
    """One annotator's requests race for `next`: they all get the same pair, and one live lock exists."""
    from django.test import Client
    from django.urls import reverse
    from django.utils import timezone

    study = StudyFactory(overlap_target=1, overlap_share=0.0, lock_ttl_seconds=1800)
    for _ in range(30):
        PairFactory(study=study)
    user = StudyAnnotatorFactory(study=study).annotator
    url = reverse("api-assignment-next", kwargs={"name": study.name})
    n = 20
    start = threading.Barrier(n, timeout=60)
    answers: list[int] = []
    errors: list[BaseException] = []

    def request():
        try:
            client = Client()
            client.force_login(user)
            start.wait()
            response = client.post(url)
            assert response.status_code == 200, response.content
            answers.append(response.json()["assignment"]["id"])
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=request) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    close_old_connections()

    assert not errors, errors[:3]
    live = Assignment.objects.filter(annotator=user, state=Assignment.State.ACTIVE, lock_expires_at__gt=timezone.now())
    assert live.count() == 1
    assert Assignment.objects.filter(annotator=user).count() == 1
    assert set(answers) == {live.get().pk} and len(answers) == n
