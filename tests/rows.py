"""How many rows the database read for a piece of work (PostgreSQL only).

PostgreSQL counts, per table and per index, the tuples each scan returned: for a table
the rows a sequential scan read (`seq_tup_read`), for an index the entries an index,
index-only or bitmap scan read (`idx_tup_read`). The `pg_stat_get_xact_*` functions give
the counts of the current transaction, live, before they are flushed to
`pg_stat_user_tables`, so a test inside its transaction (pytest-django's) sees its own
reads exactly, with no other backend and no flush delay mixed in. Rows read is the sum
of both: every row a sequential scan walked past plus every index entry a scan went
through, which is what grows when a read scans more history than it shows.
Used by tests/public/test_bounded_reads.py.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from django.db import connection

_COUNTS = """
    SELECT c.relname, c.relkind, pg_stat_get_xact_tuples_returned(c.oid)
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'i')
"""


def _counts() -> Counter[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute(_COUNTS)
        rows = cursor.fetchall()
    return Counter({f"{name} ({'seq' if kind == 'r' else 'index'})": int(n) for name, kind, n in rows if n})


@dataclass
class RowsRead:
    """Filled when the `rows_read` block ends: the total and the relations behind it."""

    by_relation: Counter[str] = field(default_factory=Counter)

    @property
    def total(self) -> int:
        return sum(self.by_relation.values())

    def top(self, n: int = 5) -> str:
        return ", ".join(f"{name}: {count}" for name, count in self.by_relation.most_common(n))


@contextmanager
def rows_read() -> Iterator[RowsRead]:
    """Count the rows read by the statements run inside the block on this connection."""
    before = _counts()
    result = RowsRead()
    yield result
    after = _counts()
    after.subtract(before)
    # The catalogue lookups of the query above are not in the public schema's relations.
    result.by_relation = +after
