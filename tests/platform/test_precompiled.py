"""Statements compiled once (common.precompiled): the same rows and writes as the ORM, prepared once per session on PostgreSQL."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.db.models.signals import pre_save
from django.test.utils import CaptureQueriesContext, override_settings
from django.utils import timezone

from annotation.models import Assignment, Judgment
from annotation.services.assignment import MEMBERSHIP, _membership_query
from common.precompiled import PrecompiledInsert, PreparedSQL, _prepared_on
from tests.factories import PairFactory, StudyAnnotatorFactory, StudyFactory

pytestmark = pytest.mark.django_db(transaction=True)

POSTGRES = pytest.mark.skipif("connection.vendor != 'postgresql'", reason="prepared statements are PostgreSQL's")


def _prepared_names() -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT name FROM pg_prepared_statements")
        return {row[0] for row in cursor.fetchall()}


@pytest.fixture
def member():
    study = StudyFactory()
    for _ in range(3):
        PairFactory(study=study)
    membership = StudyAnnotatorFactory(study=study)
    return study, membership.annotator


def test_the_compiled_query_returns_what_the_orm_returns(member):
    study, user = member
    now = timezone.now()
    with transaction.atomic():
        compiled = MEMBERSHIP.first(study_id=study.pk, annotator_id=user.pk, now=now)
        orm = _membership_query(study_id=study.pk, annotator_id=user.pk, now=now).first()
    assert compiled is not None and compiled.pk == orm.pk
    for name in ("n_draws", "n_done", "n_pairs", "n_special", "current_id", "seen_version", "seed"):
        assert getattr(compiled, name) == getattr(orm, name), name
    with transaction.atomic():
        assert MEMBERSHIP.first(study_id=study.pk + 1000, annotator_id=user.pk, now=now) is None


@POSTGRES
def test_on_postgresql_a_compiled_query_is_prepared_once_per_session(member):
    study, user = member
    connection.close()
    for _ in range(3):
        with transaction.atomic(), CaptureQueriesContext(connection) as queries:
            MEMBERSHIP.first(study_id=study.pk, annotator_id=user.pk, now=timezone.now())
        # The request sends only the short EXECUTE with its values; the PREPARE is session set-up.
        assert len(queries) == 1 and queries[0]["sql"].startswith("EXECUTE auditorium_"), queries[0]["sql"]
    name = queries[0]["sql"].split("(")[0].removeprefix("EXECUTE ")
    assert name in _prepared_names()
    # Back to the pool and out again (the same session or another): it runs, prepared in that session.
    connection.close()
    with transaction.atomic():
        assert MEMBERSHIP.first(study_id=study.pk, annotator_id=user.pk, now=timezone.now()) is not None
    assert name in _prepared_names() and name in _prepared_on[connection.connection]


@POSTGRES
def test_a_prepared_statement_survives_a_rolled_back_transaction(member):
    study, user = member
    with pytest.raises(RuntimeError), transaction.atomic():
        MEMBERSHIP.first(study_id=study.pk, annotator_id=user.pk, now=timezone.now())
        raise RuntimeError("roll back")
    with transaction.atomic():
        assert MEMBERSHIP.first(study_id=study.pk, annotator_id=user.pk, now=timezone.now()) is not None


@pytest.mark.engine
def test_hand_written_sql_runs_as_given_or_prepared_with_the_same_result(member):
    study, _ = member
    statement = PreparedSQL(lambda conn: "SELECT COUNT(*) FROM annotation_pair WHERE study_id = %s AND overlap >= %s AND '%%' = '%%'")
    for prepared in (False, True):
        with override_settings(DB_PREPARED_STATEMENTS=prepared):
            fresh = PreparedSQL(statement.build)
            assert fresh.first(connection, [study.pk, 1]) == (3,)
            sql, _ = fresh.statement(connection, [study.pk, 1])
            assert sql.startswith("EXECUTE ") == (prepared and connection.vendor == "postgresql")
            touch = PreparedSQL(lambda conn: "UPDATE annotation_pair SET overlap = overlap + %s WHERE study_id = %s")
            assert touch.execute(connection, [0, study.pk]) == 3
            assert touch.execute(connection, [0, -1]) == 0


def test_a_compiled_insert_stores_the_row_the_orm_would(member):
    study, user = member
    pair = study.pairs.first()
    now = timezone.now()
    insert = PrecompiledInsert(Assignment)
    fields = {"state": Assignment.State.ACTIVE, "served_at": now, "lock_expires_at": now + timedelta(minutes=5), "a_clip_id": pair.clip_a_id}
    made = insert.create(annotator=user, pair=pair, **fields)
    assert made.pk is not None and not made._state.adding and made._state.db == "default"
    stored = Assignment.objects.get(pk=made.pk)
    assert (stored.annotator_id, stored.pair_id, stored.state, stored.a_clip_id) == (user.pk, pair.pk, "active", pair.clip_a_id)
    assert stored.lock_expires_at == fields["lock_expires_at"]
    # A second insert reuses the compiled statement and gets its own row.
    other = PairFactory(study=study)
    again = insert.create(annotator=user, pair=other, **{**fields, "a_clip_id": other.clip_a_id})
    assert again.pk != made.pk and Assignment.objects.filter(annotator=user).count() == 2


def test_a_compiled_insert_takes_the_orm_path_when_the_model_has_save_receivers(member):
    study, user = member
    pair = PairFactory(study=study)
    seen = []

    def receiver(sender, instance, **kwargs):
        seen.append(instance)

    pre_save.connect(receiver, sender=Assignment)
    try:
        now = timezone.now()
        made = PrecompiledInsert(Assignment).create(
            annotator=user, pair=pair, state=Assignment.State.ACTIVE, served_at=now, lock_expires_at=now, a_clip_id=pair.clip_a_id
        )
    finally:
        pre_save.disconnect(receiver, sender=Assignment)
    assert seen == [made] and Assignment.objects.filter(pk=made.pk).exists()


def test_a_compiled_insert_fills_auto_now_add_as_save_does(member):
    study, user = member
    pair = PairFactory(study=study)
    now = timezone.now()
    assignment = Assignment.objects.create(annotator=user, pair=pair, state=Assignment.State.ACTIVE, served_at=now, lock_expires_at=now, a_clip_id=pair.clip_a_id)
    before = timezone.now()
    judgment = PrecompiledInsert(Judgment).create(
        annotator=user, pair=pair, assignment=assignment, a_clip_id=pair.clip_a_id, alignment_choice_id=pair.clip_a_id, alignment_confidence="3.0",
        musicality_choice_id=pair.clip_b_id, musicality_confidence="4.0", rationale="", listening_log={"A": {"seconds": 3.0}}, idempotency_key="k-1",
    )
    stored = Judgment.objects.get(pk=judgment.pk)
    assert stored.created_at >= before and stored.created_at == judgment.created_at
    assert stored.listening_log == {"A": {"seconds": 3.0}} and str(stored.alignment_confidence) == "3.0"
