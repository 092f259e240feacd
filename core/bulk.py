"""Set-based inserts and updates for many rows, without a model instance per row.

On PostgreSQL each call is ONE statement per chunk: the values travel as one array per
column and `UNNEST` turns them back into rows, so the SQL text and the planning cost do
not grow with the row count (Django's `bulk_create` writes a VALUES tuple per row and
`bulk_update` a CASE chain per field, and both want model instances first). Elsewhere
(SQLite, the embedded default) the same calls run as `executemany`, correct and portable.

Values are given per row as tuples in the order of `fields`, already in Python types the
driver adapts (str, int, bool, Decimal, date, aware datetime, None); JSON fields take any
JSON-serialisable value. No field defaults, no `auto_now`: the caller passes every column
it means to set (the timestamps too).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import date
from decimal import Decimal
from typing import Any

from django.db import connection, models
from django.db.models import Lookup

CHUNK = 5000


def _columns(model: type[models.Model], fields: Sequence[str]) -> list[models.Field[Any, Any]]:
    """The model's fields by name ("pk" for the primary key, whatever its name)."""
    return [model._meta.pk if name == "pk" else model._meta.get_field(name) for name in fields]  # type: ignore[misc]


def _insert_head(
    model: type[models.Model], fields: Sequence[str], ignore_conflicts: bool
) -> tuple[str, list[models.Field[Any, Any]], str, str]:
    """The quoted table, the fields, their quoted column list and the conflict clause."""
    cols = _columns(model, fields)
    table = connection.ops.quote_name(str(model._meta.db_table))
    names = ", ".join(connection.ops.quote_name(str(f.column)) for f in cols)
    return table, cols, names, " ON CONFLICT DO NOTHING" if ignore_conflicts else ""


def _is_json(field: models.Field[Any, Any]) -> bool:
    return isinstance(field, models.JSONField)


def _element(value: Any) -> str:
    if value is None:
        return "NULL"
    if value is True:
        return "t"
    if value is False:
        return "f"
    if isinstance(value, int | float | Decimal):
        return str(value)
    if isinstance(value, date):  # datetimes too: ISO 8601 with the offset
        value = value.isoformat()
    return _quoted(str(value))


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _array_literal(values: list[Any], *, text: bool = False) -> str:
    """One column as ONE PostgreSQL array literal ('{"a","b",NULL}').

    psycopg2 would send a list as ARRAY['a', 'b', ...]: one SQL constant per value, which
    the server parses one by one (for 5,000 rows of 25 columns, most of the statement's
    time). A single literal per column goes through the array input function instead.
    """
    if text:
        # Text columns (the bulk of the bytes): the quoting inline, no type dispatch.
        return "{" + ",".join("NULL" if v is None else _quoted(v) for v in values) + "}"
    return "{" + ",".join(map(_element, values)) + "}"


def _sources(
    fields: list[models.Field[Any, Any]], rows: Sequence[Sequence[Any]]
) -> tuple[list[str], str, list[Any]]:
    """For each column the SQL giving its value, the UNNEST(...) clause, and the params.

    A column with one value for every row (a state, a timestamp, a shared body: most of
    them, in practice) is sent once as a scalar; the others as one array literal each.
    The first column is always an array: it gives UNNEST its rows.
    """
    columns: list[list[Any]] = [list(col) for col in zip(*rows, strict=True)]
    exprs: list[str] = []
    scalars: list[Any] = []
    arrays: list[str] = []
    array_params: list[str] = []
    aliases: list[str] = []
    for index, (field, column) in enumerate(zip(fields, columns, strict=True)):
        if _is_json(field):
            column = [None if v is None else json.dumps(v) for v in column]
        if index and column.count(column[0]) == len(column):
            exprs.append(_value_sql(field, f"%s::{_array_type(field)[:-2]}"))
            scalars.append(column[0])
            continue
        alias = f"c{index}"
        aliases.append(alias)
        arrays.append(f"%s::{_array_type(field)}")
        text = _is_json(field) or isinstance(field, models.CharField | models.TextField)
        array_params.append(_array_literal(column, text=text))
        exprs.append(_value_sql(field, f"u.{alias}"))
    unnest = f"UNNEST({', '.join(arrays)}) AS u({', '.join(aliases)})"
    return exprs, unnest, [*scalars, *array_params]


def _portable(fields: list[models.Field[Any, Any]], rows: Sequence[Sequence[Any]]) -> list[tuple[Any, ...]]:
    # Through each field's own conversion: the backend stores dates, decimals and JSON
    # its way (SQLite: naive UTC text for datetimes), and queries compare them so.
    return [
        tuple(f.get_db_prep_save(v, connection) for f, v in zip(fields, row, strict=True)) for row in rows
    ]


def _array_type(field: models.Field[Any, Any]) -> str:
    if _is_json(field):
        return "text[]"
    db_type = field.cast_db_type(connection) if hasattr(field, "cast_db_type") else field.db_type(connection)
    if db_type is None:
        raise ValueError(f"{field} has no column type")
    return f"{db_type}[]"


def _value_sql(field: models.Field[Any, Any], ref: str) -> str:
    return f"{ref}::jsonb" if _is_json(field) else ref


def _chunks(rows: Sequence[Sequence[Any]], size: int) -> list[Sequence[Sequence[Any]]]:
    return [rows[i : i + size] for i in range(0, len(rows), size)]


def bulk_insert(
    model: type[models.Model],
    fields: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *,
    ignore_conflicts: bool = False,
    chunk: int = CHUNK,
) -> int:
    """INSERT `rows` (tuples in the order of `fields`); returns how many were inserted.

    `ignore_conflicts` skips rows that would break a unique constraint (ON CONFLICT DO
    NOTHING), so two concurrent callers still insert each key once.
    """
    if not rows:
        return 0
    if connection.vendor == "postgresql":
        return sum(count for count, _ in _insert_postgresql(model, fields, rows, ignore_conflicts, chunk, ()))
    table, cols, names, conflict = _insert_head(model, fields, ignore_conflicts)
    marks = ", ".join("%s" for _ in cols)
    # ON CONFLICT, not INSERT OR IGNORE: that would skip NOT NULL violations too.
    sql = f"INSERT INTO {table} ({names}) VALUES ({marks}){conflict}"  # noqa: S608 - quoted names from the model; values are parameters
    inserted = 0
    with connection.cursor() as cursor:
        for part in _chunks(rows, chunk):
            cursor.executemany(sql, _portable(cols, part))
            inserted += max(cursor.rowcount, 0)
    return inserted


def bulk_insert_returning(
    model: type[models.Model],
    fields: Sequence[str],
    rows: Sequence[Sequence[Any]],
    returning: Sequence[str],
    *,
    ignore_conflicts: bool = False,
    chunk: int = CHUNK,
) -> list[tuple[Any, ...]] | None:
    """`bulk_insert`, giving the `returning` columns of each row inserted (not of those
    skipped as conflicts), in no set order. None where the backend cannot say in the
    same statement (anything but PostgreSQL): the rows are inserted, and the caller reads
    back what it needs.
    """
    if connection.vendor != "postgresql":
        bulk_insert(model, fields, rows, ignore_conflicts=ignore_conflicts, chunk=chunk)
        return None
    out: list[tuple[Any, ...]] = []
    for _, part in _insert_postgresql(model, fields, rows, ignore_conflicts, chunk, returning):
        out.extend(part)
    return out


def _insert_postgresql(
    model: type[models.Model],
    fields: Sequence[str],
    rows: Sequence[Sequence[Any]],
    ignore_conflicts: bool,
    chunk: int,
    returning: Sequence[str],
) -> list[tuple[int, list[tuple[Any, ...]]]]:
    """Each chunk's count of rows inserted, and their `returning` columns (if any)."""
    table, cols, names, conflict = _insert_head(model, fields, ignore_conflicts)
    returned = ", ".join(connection.ops.quote_name(str(f.column)) for f in _columns(model, returning))
    back = f" RETURNING {returned}" if returning else ""
    parts = []
    with connection.cursor() as cursor:
        for part in _chunks(rows, chunk):
            exprs, unnest, params = _sources(cols, part)
            sql = (
                f"INSERT INTO {table} ({names}) SELECT {', '.join(exprs)} "  # noqa: S608 - quoted names from the model; values are parameters
                f"FROM {unnest}{conflict}{back}"
            )
            cursor.execute(sql, params)
            parts.append((cursor.rowcount, cursor.fetchall() if returning else []))
    return parts


def bulk_update(
    model: type[models.Model],
    fields: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *,
    key: str = "pk",
    chunk: int = CHUNK,
) -> int:
    """UPDATE each row matched on `key` (the first value of each tuple) with the rest.

    `rows` are tuples (key value, then one value per name in `fields`). Returns how many
    rows were updated.
    """
    if not rows:
        return 0
    table = connection.ops.quote_name(str(model._meta.db_table))
    cols = _columns(model, [key, *fields])
    key_column = connection.ops.quote_name(str(cols[0].column))
    updated = 0
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            for part in _chunks(rows, chunk):
                exprs, unnest, params = _sources(cols, part)
                sets = ", ".join(
                    f"{connection.ops.quote_name(str(f.column))} = {expr}"
                    for f, expr in zip(cols[1:], exprs[1:], strict=True)
                )
                sql = f"UPDATE {table} SET {sets} FROM {unnest} WHERE {table}.{key_column} = u.c0"  # noqa: S608 - quoted names from the model; values are parameters
                cursor.execute(sql, params)
                updated += cursor.rowcount
        else:
            sets = ", ".join(f"{connection.ops.quote_name(str(f.column))} = %s" for f in cols[1:])
            sql = f"UPDATE {table} SET {sets} WHERE {key_column} = %s"  # noqa: S608 - quoted names from the model; values are parameters
            for part in _chunks(rows, chunk):
                cursor.executemany(sql, [(*row[1:], row[0]) for row in _portable(cols, part)])
                updated += max(cursor.rowcount, 0)
    return updated


class AnyOf(Lookup):  # type: ignore[type-arg]
    """`filter(AnyOf(F("pk"), ids))`: the rows whose field is one of `ids`.

    On PostgreSQL `field = ANY('{...}'::type[])`: ONE parameter however many values (an
    IN list compiles, sends and parses a placeholder per value: for 5,000 ids, more than
    the query itself). Elsewhere a plain IN list.
    """

    lookup_name = "any_of"
    prepare_rhs = False

    def __init__(self, lhs: Any, rhs: Iterable[Any]) -> None:
        super().__init__(lhs, list(rhs))

    def as_sql(self, compiler: Any, connection: Any) -> tuple[str, Any]:
        lhs, lhs_params = self.process_lhs(compiler, connection)
        values: list[Any] = self.rhs
        field = self.lhs.output_field
        if not values:
            return "1 = 0", []
        if connection.vendor == "postgresql":
            text = isinstance(field, models.CharField | models.TextField)
            return f"{lhs} = ANY(%s::{_array_type(field)})", [*lhs_params, _array_literal(values, text=text)]
        prepared = [field.get_db_prep_value(v, connection, prepared=False) for v in values]
        return f"{lhs} IN ({', '.join('%s' for _ in prepared)})", [*lhs_params, *prepared]
