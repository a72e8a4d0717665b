"""30 annotator threads on a study served in an active order: never over-assigned, nothing repeated or lost.

PostgreSQL only (marked `services`): the active order is one more list of candidates in front of
the same row-locked check (SELECT ... FOR UPDATE SKIP LOCKED), so many annotators asking for the
top-ranked pairs at once is the case that would over-assign if that check were bypassed.
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


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_active_order_under_thirty_threads_never_over_assigns():
    study = StudyFactory(overlap_target=OVERLAP, overlap_share=1.0, min_listen_seconds=1.0, lock_ttl_seconds=600, selection="uncertainty", active_share=0.8)
    pairs = [PairFactory(study=study, overlap=OVERLAP) for _ in range(N_PAIRS)]
    # Three quarters ranked, every annotator wants the same few first; the rest only in the random order.
    services.pair_priorities_replace(study=study, mode="uncertainty", values={p.pk: float(i) for i, p in enumerate(pairs[:30])}, source="test")
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
                services.judgment_submit(
                    assignment_id=a.pk, annotator=user, alignment="A", alignment_confidence=3, musicality="B", musicality_confidence=3,
                    listening_log=log, idempotency_key=f"{user.pk}-{a.pk}", now=a.served_at + timedelta(seconds=5),
                )  # fmt: skip
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
    judgments = list(Judgment.objects.values_list("annotator_id", "pair_id", "selection"))
    assert sorted((a, p) for a, p, _ in judgments) == sorted(accepted)
    assert len({(a, p) for a, p, _ in judgments}) == len(judgments)
    per_pair = Counter(p for _, p, _ in judgments)
    assert max(per_pair.values()) <= OVERLAP
    assert sum(per_pair.values()) == N_PAIRS * OVERLAP
    assert not Assignment.objects.filter(state=Assignment.State.ACTIVE).exists()
    # Every judgment says how its pair came; unranked pairs only ever came in the random order.
    ranked = {p.pk for p in pairs[:30]}
    kinds = Counter(s for _, _, s in judgments)
    assert set(kinds) <= {"uncertainty", "random"} and kinds["uncertainty"] > 0
    assert all(p in ranked for _, p, s in judgments if s == "uncertainty")
