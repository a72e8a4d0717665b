"""Querysets compiled to SQL once per thread and variant, then run with fresh parameter values.

On the hot paths Django spent more time turning two complex querysets into SQL (about 13 ms a
request, measured with py-spy) than PostgreSQL spent running them. The SQL of such a query does
not depend on its values, only on its shape: so it is built once from the queryset itself (the
same SQL the ORM would send, on every vendor), with sentinel values standing in for the ones
that change, and each call binds the real values in their places. Rows come back as model
instances through Django's own converters and related-object populators, as `.first()` would.

A sentinel must be a value nothing else in the query can equal (a large, odd integer or a
datetime far in the past); anything that changes the shape of the SQL (a LIMIT, a branch that
is there or not) belongs in the variant key instead. The compiled form is kept for the process
(Django's ASGI handler runs every request in a thread of its own, so a per-thread copy would be
compiled again on every request); it runs on the calling thread's connection, and keeps from
the connection it was compiled on only the vendor's value converters, which read no state.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from django.db import connections
from django.db.models.query import get_related_populators

_compiled: dict = {}


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
        for param in params:
            slot = (None, None, param)
            for name, value in sentinels.items():
                if type(param) is type(value) and param == value:
                    slot = (name, None, None)
                elif isinstance(param, type(value)) and param == value:
                    slot = (name, type(param), None)
                elif name in adapted and type(param) is type(adapted[name]) and param == adapted[name]:
                    slot = (name, ops.adapt_datetimefield_value, None)
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

    def params(self, values: dict) -> list:
        out = []
        for name, prepare, fixed in self.slots:
            if name is None:
                out.append(fixed)
            else:
                out.append(prepare(values[name]) if prepare is not None else values[name])
        return out

    def first(self, connection, values: dict):
        with connection.cursor() as cursor:
            cursor.execute(self.sql, self.params(values))
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


class Precompiled:
    """`build(variant..., **sentinels)` returns the queryset (sliced to one row); `first(variant, **values)` runs it."""

    def __init__(self, build: Callable, sentinels: dict):
        self.build = build
        self.sentinels = sentinels

    def first(self, variant: tuple = (), *, using: str = "default", **values):
        connection = connections[using]
        key = (id(self), connection.alias, connection.vendor, variant)
        compiled = _compiled.get(key)
        if compiled is None:
            compiled = _compiled[key] = _Compiled(self.build(*variant, **self.sentinels), self.sentinels)
        return compiled.first(connection, values)
