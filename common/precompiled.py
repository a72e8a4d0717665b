"""Querysets compiled to SQL once per thread and variant, then run with fresh parameter values.

On the hot paths Django spent more time turning two complex querysets into SQL (about 13 ms a
request, measured with py-spy) than PostgreSQL spent running them. The SQL of such a query does
not depend on its values, only on its shape: so it is built once from the queryset itself (the
same SQL the ORM would send, on every vendor), with sentinel values standing in for the ones
that change, and each call binds the real values in their places. Rows come back as model
instances through Django's own converters and related-object populators, as `.first()` would.

A sentinel must be a value nothing else in the query can equal (a large, odd integer, a
datetime far in the past or a made-up UUID); anything that changes the shape of the SQL (a LIMIT, a branch that
is there or not) belongs in the variant key instead. The compiled form is kept for the process
(Django's ASGI handler runs every request in a thread of its own, so a per-thread copy would be
compiled again on every request); it runs on the calling thread's connection, and keeps from
the connection it was compiled on only the vendor's value converters, which read no state.

On PostgreSQL (unless DB_PREPARED_STATEMENTS is off) each compiled query is also a prepared
statement of the database session: PREPARE once per connection, then EXECUTE with only the
changing values. The next-pair query is 9.7 kB of SQL with 146 parameters; sent whole it cost
PostgreSQL 1.9 ms of planning per request (EXPLAIN ANALYZE) and the driver a fresh parse of the
text each time (it caches only statements under 4 kB and 50 parameters). In the prepared form
the constants are inlined as the driver would quote them, each sentinel is one `$n`, and the
EXECUTE that carries the values is short. Prepared statements live in the session, not the
transaction (a rollback keeps them); a pooler that hands one session to many clients
(PgBouncer in transaction mode) needs DB_PREPARED_STATEMENTS=false.
"""

from __future__ import annotations

import hashlib
import re
import uuid
import weakref
from collections.abc import Callable
from datetime import datetime

from django.conf import settings
from django.db import connections
from django.db.models import signals, sql
from django.db.models.query import get_related_populators

# The statements prepared in each open database session, by the driver's connection object.
_prepared_on: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_PLACEHOLDER = re.compile(r"%%|%s")


class _Compiled:
    def __init__(self, queryset, sentinels: dict):
        self.db = queryset.db
        compiler = queryset.query.get_compiler(using=self.db)
        self.sql, params = compiler.as_sql()
        self.connection = compiler.connection
        ops = self.connection.ops
        # Each parameter: a fixed value, or the name of the sentinel it stands for and how the
        # ORM prepared it: as is, adapted (SQLite's datetimes become strings) or wrapped in a
        # driver type (psycopg's Int8 for a bigint Value), which the real value gets too.
        self.slots: list[tuple[str | None, object, object]] = []
        adapted = {name: ops.adapt_datetimefield_value(value) for name, value in sentinels.items() if isinstance(value, datetime)}
        adapt = dict.fromkeys(adapted, ops.adapt_datetimefield_value)
        if not self.connection.features.has_native_uuid_field:
            # A database without a uuid type (SQLite) is sent its 32-digit hex form, as UUIDField prepares it.
            uuids = {name: value for name, value in sentinels.items() if isinstance(value, uuid.UUID)}
            adapted |= {name: value.hex for name, value in uuids.items()}
            adapt |= dict.fromkeys(uuids, _uuid_hex)
        for param in params:
            slot = (None, None, param)
            for name, value in sentinels.items():
                if type(param) is type(value) and param == value:
                    slot = (name, None, None)
                elif isinstance(param, type(value)) and param == value:
                    slot = (name, type(param), None)
                elif name in adapted and type(param) is type(adapted[name]) and param == adapted[name]:
                    slot = (name, adapt[name], None)
            self.slots.append(slot)
        missing = set(sentinels) - {name for name, _, _ in self.slots}
        if missing:
            raise RuntimeError(f"Sentinels not found in the compiled query: {sorted(missing)}")
        self.compiler = compiler
        self.select, self.klass_info, self.annotation_col_map = compiler.select, compiler.klass_info, compiler.annotation_col_map
        self.converters = compiler.get_converters([column[0] for column in self.select[: compiler.col_count]])
        fields = self.klass_info["select_fields"]
        self.model_start, self.model_end = fields[0], fields[-1] + 1
        self.init_list = [column[0].target.attname for column in self.select[self.model_start : self.model_end]]
        self.populators = get_related_populators(self.klass_info, self.select, self.db)
        self.prepared = self._prepared_form(sentinels) if _prepares(self.connection) else None

    def _prepared_form(self, sentinels: dict) -> tuple[str, str, str, list]:
        """(name, PREPARE statement, EXECUTE statement, [(sentinel, how its value is prepared)])."""
        order = [name for name in sentinels if any(slot[0] == name for slot in self.slots)]
        number = {name: n for n, name in enumerate(order, start=1)}
        prepare_of = {}
        slots = iter(self.slots)

        def replace(match) -> str:
            if match.group() == "%%":
                return "%"
            name, prepare, fixed = next(slots)
            if name is None:
                # The literal the driver would have sent in its place (client-side binding is Django's default).
                return self.connection.ops.compose_sql("%s", [fixed])
            prepare_of.setdefault(name, prepare)
            return f"${number[name]}"

        name, prepare_sql, execute_sql = _prepared_statements(_PLACEHOLDER.sub(replace, self.sql), len(order))
        return name, prepare_sql, execute_sql, [(sentinel, prepare_of[sentinel]) for sentinel in order]

    def statement(self, connection, values: dict) -> tuple[str, list]:
        """The SQL and parameters to send on this connection for these values."""
        if self.prepared is None:
            return self.sql, self.params(values)
        name, prepare_sql, execute_sql, order = self.prepared
        _prepare_once(connection, name, prepare_sql)
        return execute_sql, [prepare(values[sentinel]) if prepare is not None else values[sentinel] for sentinel, prepare in order]

    def params(self, values: dict) -> list:
        out = []
        for name, prepare, fixed in self.slots:
            if name is None:
                out.append(fixed)
            else:
                out.append(prepare(values[name]) if prepare is not None else values[name])
        return out

    def first(self, connection, values: dict):
        sql, params = self.statement(connection, values)
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            row = cursor.fetchone()
        if row is None:
            return None
        if self.converters:
            row = next(iter(self.compiler.apply_converters([row], self.converters)))
        model = self.klass_info["model"]
        obj = model.from_db(self.db, self.init_list, row[self.model_start : self.model_end])
        for populator in self.populators:
            populator.populate(row, obj)
        for name, position in self.annotation_col_map.items():
            setattr(obj, name, row[position])
        return obj


def _uuid_hex(value) -> str:
    return (value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))).hex


def _prepared_statements(body: str, n_values: int) -> tuple[str, str, str]:
    """(name, PREPARE, EXECUTE with n %s placeholders) for a statement whose values are $1..$n."""
    name = "auditorium_" + hashlib.sha256(body.encode()).hexdigest()[:24]
    return name, f"PREPARE {name} AS {body}", f"EXECUTE {name}({', '.join(['%s'] * n_values)})"


def _prepare_once(connection, name: str, prepare_sql: str) -> None:
    connection.ensure_connection()
    session = connection.connection
    prepared = _prepared_on.get(session)
    if prepared is None:
        prepared = _prepared_on[session] = set()
    if name not in prepared:
        # Session set-up, as Django's own connection set-up, is sent past the query log:
        # it is paid once per connection, not by the request that happens to come first.
        with connection.wrap_database_errors:
            session.execute(prepare_sql)
        prepared.add(name)


def _prepares(connection) -> bool:
    return connection.vendor == "postgresql" and getattr(settings, "DB_PREPARED_STATEMENTS", False)


class PreparedSQL:
    """Hand-written SQL (each value one %s) built once per process and vendor; a prepared statement on PostgreSQL.

    `statement(connection, params)` gives what to execute: the SQL itself, or the EXECUTE of
    the session's prepared copy; `first(connection, params)` runs a statement that returns
    rows (`rows` gives them all), `execute(connection, params)` one that returns none.
    """

    def __init__(self, build: Callable):
        self.build = build
        self.compiled: dict = {}

    def statement(self, connection, params: list) -> tuple[str, list]:
        key = (connection.alias, connection.vendor)
        entry = self.compiled.get(key)
        if entry is None:
            sql = self.build(connection)
            prepared = None
            if _prepares(connection):
                numbers = iter(range(1, len(params) + 1))
                body = _PLACEHOLDER.sub(lambda match: "%" if match.group() == "%%" else f"${next(numbers)}", sql)
                prepared = _prepared_statements(body, len(params))
            entry = self.compiled[key] = (sql, prepared)
        sql, prepared = entry
        if prepared is None:
            return sql, params
        name, prepare_sql, execute_sql = prepared
        _prepare_once(connection, name, prepare_sql)
        return execute_sql, params

    def first(self, connection, params: list):
        """Run a statement that returns rows (a SELECT, an UPDATE ... RETURNING); its first row, or None."""
        sql, params = self.statement(connection, params)
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            # Not guarded by cursor.description: the driver builds a column object per column
            # for it, which was a tenth of a vote's time on the claim's 40 columns (py-spy).
            return cursor.fetchone()

    def rows(self, connection, params: list) -> list:
        """Run a statement that returns rows; all of them, as tuples."""
        sql, params = self.statement(connection, params)
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchall()

    def execute(self, connection, params: list) -> int:
        """Run a statement that returns no rows; the number of rows it changed."""
        sql, params = self.statement(connection, params)
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.rowcount


class Precompiled:
    """`build(variant..., **sentinels)` returns the queryset (sliced to one row); `first(variant, **values)` runs it."""

    def __init__(self, build: Callable, sentinels: dict):
        self.build = build
        self.sentinels = sentinels
        self.compiled: dict = {}

    def first(self, variant: tuple = (), *, using: str = "default", **values):
        connection = connections[using]
        key = (connection.alias, connection.vendor, variant)
        compiled = self.compiled.get(key)
        if compiled is None:
            compiled = self.compiled[key] = _Compiled(self.build(*variant, **self.sentinels), self.sentinels)
        return compiled.first(connection, values)


class PrecompiledInsert:
    """`Model.objects.create(**values)` on a hot path, with the INSERT's SQL built once per process and vendor.

    The row's values are prepared per call as Model.save prepares them (each field's
    pre_save, e.g. auto_now_add, then get_db_prep_save), and the database's generated
    values (the primary key) come back through RETURNING with Django's converters. Model
    save signals are not sent: a model that has receivers, a value that is an expression,
    or a database without INSERT ... RETURNING takes the ORM's own create instead.
    """

    def __init__(self, model):
        self.model = model
        self.compiled: dict = {}

    def create(self, *, using: str = "default", **values):
        model = self.model
        connection = connections[using]
        if (
            not connection.features.can_return_columns_from_insert
            or signals.pre_save.has_listeners(model)
            or signals.post_save.has_listeners(model)
            or any(hasattr(value, "resolve_expression") for value in values.values())
        ):
            return model._default_manager.db_manager(using).create(**values)
        obj = model(**values)
        key = (connection.alias, connection.vendor)
        compiled = self.compiled.get(key)
        if compiled is None:
            compiled = self.compiled[key] = _CompiledInsert(model, obj, using)
        return compiled.insert(connection, obj, using)


class _CompiledInsert:
    def __init__(self, model, obj, using: str):
        meta = model._meta
        # The fields Model.save inserts for a new row whose primary key the database assigns.
        self.fields = [field for field in meta.local_concrete_fields if not field.generated and field is not meta.auto_field]
        query = sql.InsertQuery(model)
        query.insert_values(self.fields, [obj])
        compiler = query.get_compiler(using=using)
        compiler.returning_fields = self.returning = meta.db_returning_fields
        [(self.sql, _)] = compiler.as_sql()
        self.returning_params = compiler.returning_params
        self.compiler = compiler
        self.converters = compiler.get_converters([field.get_col(meta.db_table) for field in self.returning])

    def insert(self, connection, obj, using: str):
        params = [field.get_db_prep_save(field.pre_save(obj, True), connection=connection) for field in self.fields]
        with connection.cursor() as cursor:
            cursor.execute(self.sql, params)
            row = connection.ops.fetch_returned_insert_columns(cursor, self.returning_params)
        if self.converters:
            row = next(iter(self.compiler.apply_converters([row], self.converters)))
        for field, value in zip(self.returning, row):
            setattr(obj, field.attname, value)
        obj._state.adding = False
        obj._state.db = using
        return obj
