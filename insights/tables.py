"""The table beside each insights chart, and the CSV download of that same table.

One definition feeds both, so the download is exactly the figures on screen (in machine
units: minutes and ISO times instead of "18 h 11 min").
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal

from core import csvfile
from incidents import uptime
from insights import metrics


@dataclass(frozen=True)
class Table:
    name: str  # also the CSV's file name
    caption: str
    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    csv_headers: tuple[str, ...]
    csv_rows: tuple[tuple[str, ...], ...]
    # Optional links of the first cell of each row (incident pages).
    links: tuple[str | None, ...] = ()

    @property
    def is_narrow(self) -> bool:
        """Few columns: the table fits beside its chart on a wide screen."""
        return len(self.headers) <= 4

    @property
    def stacks(self) -> bool:
        """Many columns or long text: one card per row on a phone instead of a grid."""
        return len(self.headers) > 6

    @property
    def html_rows(self) -> list[list[tuple[str, str, str | None]]]:
        """Each cell as (header, text, link): the template labels cells for the stacked view."""
        out = []
        for i, row in enumerate(self.rows):
            link = self.links[i] if i < len(self.links) else None
            out.append(
                [
                    (h, v, link if j == 0 else None)
                    for j, (h, v) in enumerate(zip(self.headers, row, strict=True))
                ]
            )
        return out


def minutes_of(delta: timedelta | None) -> str:
    if delta is None:
        return ""
    return str(uptime.minutes(delta).quantize(Decimal("0.01")))


def duration_text(delta: timedelta | None) -> str:
    return metrics.format_hours(delta)


def weighted_text(value: Decimal) -> str:
    return f"{value.quantize(Decimal('0.1'))}\N{NO-BREAK SPACE}min"


def iso(value: object) -> str:
    return value.isoformat() if hasattr(value, "isoformat") else ""


def csv_text(table: Table) -> str:
    # Through the one CSV writer: incident titles are user text, never run as formulas.
    return csvfile.csv_text(table.csv_headers, table.csv_rows)
