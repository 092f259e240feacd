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
from collections.abc import Sequence
from typing import Any

from django.db import connection, models

CHUNK = 5000


def _columns(model: type[models.Model], fields: Sequence[str]) -> list[models.Field[Any, Any]]:
    return [model._meta.get_field(name) for name in fields]  # type: ignore[misc]


def _is_json(field: models.Field[Any, Any]) -> bool:
    return isinstance(field, models.JSONField)


def _prepare(fields: list[models.Field[Any, Any]], rows: Sequence[Sequence[Any]]) -> list[list[Any]]:
    """One list per column; JSON values serialised (they are cast back in SQL)."""
    columns: list[list[Any]] = (
        [list(col) for col in zip(*rows, strict=True)] if rows else [[] for _ in fields]
    )
    for index, field in enumerate(fields):
        if _is_json(field):
            columns[index] = [None if v is None else json.dumps(v) for v in columns[index]]
    return columns


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
    table = connection.ops.quote_name(model._meta.db_table)
    cols = _columns(model, fields)
    names = ", ".join(connection.ops.quote_name(f.column) for f in cols)
    conflict = " ON CONFLICT DO NOTHING" if ignore_conflicts else ""
    inserted = 0
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            aliases = [f"c{i}" for i in range(len(cols))]
            arrays = ", ".join(f"%s::{_array_type(f)}" for f in cols)
            select = ", ".join(_value_sql(f, f"u.{a}") for f, a in zip(cols, aliases, strict=True))
            sql = (
                f"INSERT INTO {table} ({names}) SELECT {select} "  # noqa: S608 - quoted names from the model; values are parameters
                f"FROM UNNEST({arrays}) AS u({', '.join(aliases)}){conflict}"
            )
            for part in _chunks(rows, chunk):
                cursor.execute(sql, _prepare(cols, part))
                inserted += cursor.rowcount
        else:
            verb = "INSERT OR IGNORE" if ignore_conflicts else "INSERT"
            marks = ", ".join("%s" for _ in cols)
            sql = f"{verb} INTO {table} ({names}) VALUES ({marks})"
            for part in _chunks(rows, chunk):
                cursor.executemany(sql, _portable(cols, part))
                inserted += max(cursor.rowcount, 0)
    return inserted


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
    table = connection.ops.quote_name(model._meta.db_table)
    key_field = model._meta.pk if key == "pk" else model._meta.get_field(key)
    assert isinstance(key_field, models.Field)
    cols = [key_field, *_columns(model, fields)]
    key_column = connection.ops.quote_name(key_field.column)
    updated = 0
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            aliases = [f"c{i}" for i in range(len(cols))]
            arrays = ", ".join(f"%s::{_array_type(f)}" for f in cols)
            sets = ", ".join(
                f"{connection.ops.quote_name(f.column)} = {_value_sql(f, f'u.{a}')}"
                for f, a in zip(cols[1:], aliases[1:], strict=True)
            )
            sql = (
                f"UPDATE {table} SET {sets} FROM UNNEST({arrays}) AS u({', '.join(aliases)}) "  # noqa: S608 - quoted names from the model; values are parameters
                f"WHERE {table}.{key_column} = u.c0"
            )
            for part in _chunks(rows, chunk):
                cursor.execute(sql, _prepare(cols, part))
                updated += cursor.rowcount
        else:
            sets = ", ".join(f"{connection.ops.quote_name(f.column)} = %s" for f in cols[1:])
            sql = f"UPDATE {table} SET {sets} WHERE {key_column} = %s"  # noqa: S608 - quoted names from the model; values are parameters
            for part in _chunks(rows, chunk):
                cursor.executemany(sql, [(*row[1:], row[0]) for row in _portable(cols, part)])
                updated += max(cursor.rowcount, 0)
    return updated
