"""Two adjudicators deciding the same pair at the same moment end with one decision; the second is told the first.

Runs on whichever database is configured: SQLite (embedded default) and, in CI's second pass, PostgreSQL,
where the decision takes the pair's row lock (SELECT ... FOR UPDATE) before it checks and writes.
"""

from __future__ import annotations

import threading

import pytest
from django.db import connection
from django.test import Client

from annotation.adjudication_models import Adjudication, StudyAdjudicator
from annotation.services.adjudication import adjudication_decide
from common.errors import ServiceError
from tests.annotation.adjudication_world import build, receipts
from tests.factories import UserFactory

ROUNDS = 3


@pytest.mark.engine
@pytest.mark.django_db(transaction=True)
def test_two_adjudicators_at_once_leave_one_decision():
    w = build()
    study = w["study"]
    second = UserFactory(roles=["annotator"])
    StudyAdjudicator.objects.create(study=study, user=second)
    people = [w["adjudicator"], second]
    for _ in range(ROUNDS):
        Adjudication.objects.all().delete()
        pair = w["pairs"]["split"]
        forms = []
        for person in people:
            client = Client()
            client.force_login(person)
            fields = receipts(client, study, pair)
            forms.append({"A": fields["receipt_A"], "B": fields["receipt_B"]})
        outcomes: list = [None, None]
        start = threading.Barrier(2, timeout=60)

        def decide(index: int) -> None:
            try:
                start.wait()
                outcomes[index] = adjudication_decide(study=study, pair_id=pair.pk, adjudicator=people[index], alignment="AB"[index], musicality="A", reason=f"reason {index}", receipts=forms[index])
            except ServiceError as exc:
                outcomes[index] = exc
            except BaseException as exc:  # noqa: BLE001 - reported below
                outcomes[index] = exc
            finally:
                connection.close()

        threads = [threading.Thread(target=decide, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        decided = [o for o in outcomes if isinstance(o, Adjudication)]
        refused = [o for o in outcomes if isinstance(o, ServiceError)]
        assert len(decided) == 1 and len(refused) == 1, outcomes
        assert refused[0].code == "already_decided" and refused[0].status == 409
        stored = Adjudication.objects.get()
        assert stored.pk == decided[0].pk
        # The refusal names the decision that stands.
        assert stored.reason in refused[0].message
