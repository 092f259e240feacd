"""The one CSV writer: every export (insights tables, uptime, credit notices and
statements) goes through it, so no cell can run as a spreadsheet formula.

OWASP's rule: a text cell starting with =, +, -, @, tab or carriage return is prefixed
with a single quote. Numbers passed as numbers (int, Decimal, float) are written as they
are, so a negative amount stays a number; a number passed as text is text.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from decimal import Decimal

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def cell(value: object) -> object:
    """What the writer writes for one value."""
    if value is None:
        return ""
    if isinstance(value, int | float | Decimal) and not isinstance(value, bool):
        return value
    text = str(value)
    return f"'{text}" if text.startswith(FORMULA_START) else text


def csv_text(header: Sequence[object], rows: Iterable[Sequence[object]]) -> str:
    """A whole CSV document (RFC 4180 line ends), header first."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow([cell(v) for v in header])
    writer.writerows([cell(v) for v in row] for row in rows)
    return buffer.getvalue()
