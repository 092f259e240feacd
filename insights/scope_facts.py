"""Keeping the per-scope rows of `insights.models` fresh: each incident as every scope it
belongs to sees it (`ScopeIncident`), their per-month sums (`ScopeFacts`, moved by
difference), and each product's downtime per month from its closed stretches
(`DowntimeMonth`). Called by `insights.facts` from the write services' event hook and by
the rebuild; the page reads them in `insights.aggregates` (docs/adr/0035-scope-facts.md).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Sequence
from datetime import date, datetime, timedelta, tzinfo
from typing import Any, NamedTuple

from django.db import connection

from core.timezones import display_zone
from incidents import uptime
from incidents.models import ImpactWindow, Product
from insights.models import DowntimeMonth, IncidentFacts, ScopeFacts, ScopeIncident

ALL = "all"
_BATCH = 2000
_MEASURES = ("detect_us", "first_update_us", "resolve_us", "cadence_us")


def group_scope(group_id: int) -> str:
    return f"g{group_id}"


def product_scope(product_id: int) -> str:
    return f"p{product_id}"


def month_of(moment: datetime, tz: tzinfo) -> date:
    """The first day of the display-zone month `moment` falls in."""
    return uptime.local_date(moment, tz).replace(day=1)


def next_month(month: date) -> date:
    return date(month.year + month.month // 12, month.month % 12 + 1, 1)


class Row(NamedTuple):
    """One `ScopeIncident` as compared and counted (scope and incident first)."""

    scope: str
    incident_id: int
    month: date
    severity: int
    is_maintenance: bool
    is_open: bool
    detect_us: int | None
    first_update_us: int | None
    resolve_us: int | None
    cadence_us: int | None

    @property
    def cell(self) -> tuple[str, date, int, bool, bool]:
        return (self.scope, self.month, self.severity, self.is_maintenance, self.is_open)

    @property
    def counts(self) -> tuple[int, ...]:
        """What it adds to its cell: one incident, and one value per measure it has."""
        return (1, *(int(getattr(self, m) is not None) for m in _MEASURES))


_ROW_FIELDS = Row._fields


def _product_groups() -> dict[int, int | None]:
    return dict(Product.objects.values_list("pk", "group_id"))


def scope_rows(incident_ids: Sequence[int], *, tz: tzinfo) -> list[Row]:
    """What the rows of these incidents should be, from their stored facts and windows
    (three queries)."""
    groups = _product_groups()
    severities: dict[int, dict[str, int]] = defaultdict(dict)
    windows = ImpactWindow.objects.filter(incident_id__in=list(incident_ids)).values_list(
        "incident_id", "product_id", "level"
    )
    for incident_id, product_id, level in windows:
        seen = severities[incident_id]
        scopes = [product_scope(product_id)]
        if groups.get(product_id) is not None:
            scopes.append(group_scope(groups[product_id]))  # type: ignore[arg-type]
        for scope in scopes:
            seen[scope] = max(seen.get(scope, 0), uptime.SEVERITY[level])
    out = []
    facts = IncidentFacts.objects.filter(pk__in=list(incident_ids)).values_list(
        "incident_id", "started_at", "severity", "is_maintenance", "is_open", *_MEASURES
    )
    for incident_id, started_at, severity, maintenance, is_open, *measures in facts:
        month = month_of(started_at, tz)
        for scope, sev in [(ALL, severity), *sorted(severities[incident_id].items())]:
            out.append(Row(scope, incident_id, month, sev, maintenance, is_open, *measures))
    return out


def _stored_rows(incident_ids: Sequence[int]) -> dict[Row, int]:
    rows = ScopeIncident.objects.filter(incident_id__in=list(incident_ids)).values_list("pk", *_ROW_FIELDS)
    return {Row(*r): pk for pk, *r in rows}


def _add_counts(delta: dict[tuple[Any, ...], list[int]]) -> None:
    """Add each cell's counts to `ScopeFacts` (an upsert that adds), then drop cells at
    zero. Cells in a fixed order, so two writers lock them in the same order."""
    cells = sorted((cell, counts) for cell, counts in delta.items() if any(counts))
    if not cells:
        return
    table = ScopeFacts._meta.db_table
    sums = ("n", "n_detect", "n_first_update", "n_resolve", "n_cadence")
    columns = ("scope", "month", "severity", "is_maintenance", "is_open", *sums)
    placeholders = ", ".join(["(" + ", ".join(["%s"] * len(columns)) + ")"] * len(cells))
    sql = (
        f"INSERT INTO {table} ({', '.join(columns)}) VALUES {placeholders} "  # noqa: S608 - constants only
        "ON CONFLICT (scope, month, severity, is_maintenance, is_open) DO UPDATE SET "
        + ", ".join(f"{c} = {table}.{c} + excluded.{c}" for c in sums)
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [value for cell, counts in cells for value in (*cell, *counts)])
    scopes = {cell[0] for cell, _ in cells}
    months = {cell[1] for cell, _ in cells}
    ScopeFacts.objects.filter(scope__in=scopes, month__in=months, n=0).delete()


def scope_refresh(incident_ids: Iterable[int], *, tz: tzinfo | None = None) -> None:
    """Make the scope rows of these incidents what their facts and windows say (a
    deleted incident has none left), and move the month sums by the difference."""
    ids = sorted(set(incident_ids))
    if not ids:
        return
    wanted = set(scope_rows(ids, tz=tz or display_zone()))
    stored = _stored_rows(ids)
    gone, added = set(stored) - wanted, wanted - set(stored)
    if not gone and not added:
        return
    delta: dict[tuple[Any, ...], list[int]] = defaultdict(lambda: [0] * 5)
    for sign, rows in ((-1, gone), (1, added)):
        for row in rows:
            cell = delta[row.cell]
            for i, c in enumerate(row.counts):
                cell[i] += sign * c
    ScopeIncident.objects.filter(pk__in=[stored[row] for row in gone]).delete()
    ScopeIncident.objects.bulk_create([ScopeIncident(**r._asdict()) for r in sorted(added)])
    _add_counts(delta)


# --- Downtime per product and month -------------------------------------------------------------


def month_pieces(start: datetime, end: datetime, tz: tzinfo) -> Iterator[tuple[date, datetime, datetime]]:
    """[start, end) cut at the display zone's month starts: (month, piece start, piece end)."""
    month = month_of(start, tz)
    while True:
        following = next_month(month)
        boundary = uptime.local_midnight(following, tz)
        piece_end = min(end, boundary)
        if piece_end > start:
            yield month, start, piece_end
        if end <= boundary:
            return
        start, month = boundary, following


def _micros(delta: timedelta) -> int:
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def stretch_months(
    stretches: Iterable[tuple[int, int, datetime, datetime | None]], tz: tzinfo
) -> Counter[tuple[int, date, int]]:
    """(product, month, severity) -> microseconds of the closed stretches among
    (product, severity, start, end); open ones are read live."""
    out: Counter[tuple[int, date, int]] = Counter()
    for product_id, severity, start, end in stretches:
        if end is None:
            continue
        for month, lo, hi in month_pieces(start, end, tz):
            out[(product_id, month, severity)] += _micros(hi - lo)
    return out


def downtime_add(delta: Counter[tuple[int, date, int]] | dict[tuple[int, date, int], int]) -> None:
    """Add microseconds to `DowntimeMonth` cells (an upsert that adds; zeros dropped)."""
    cells = sorted((key, micros) for key, micros in delta.items() if micros)
    if not cells:
        return
    table = DowntimeMonth._meta.db_table
    placeholders = ", ".join(["(%s, %s, %s, %s)"] * len(cells))
    sql = (
        f"INSERT INTO {table} (product_id, month, severity, micros) VALUES {placeholders} "  # noqa: S608
        f"ON CONFLICT (product_id, month, severity) DO UPDATE SET micros = {table}.micros + excluded.micros"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [value for key, micros in cells for value in (*key, micros)])
    DowntimeMonth.objects.filter(
        product_id__in={key[0] for key, _ in cells}, month__in={key[1] for key, _ in cells}, micros=0
    ).delete()


# --- Rebuilding everything ---------------------------------------------------------------------


def scope_rebuild(
    incident_ids: Sequence[int], stretches: Iterable[tuple[int, int, datetime, datetime | None]]
) -> None:
    """Every scope row, month sum and downtime month from the stored facts and
    stretches (after `insights.facts.facts_rebuild` has rebuilt those)."""
    tz = display_zone()
    ScopeIncident.objects.all().delete()
    ScopeFacts.objects.all().delete()
    DowntimeMonth.objects.all().delete()
    sums: dict[tuple[Any, ...], list[int]] = defaultdict(lambda: [0] * 5)
    for lo in range(0, len(incident_ids), _BATCH):
        rows = scope_rows(incident_ids[lo : lo + _BATCH], tz=tz)
        for row in rows:
            cell = sums[row.cell]
            for i, c in enumerate(row.counts):
                cell[i] += c
        ScopeIncident.objects.bulk_create([ScopeIncident(**r._asdict()) for r in rows], batch_size=_BATCH)
    ScopeFacts.objects.bulk_create(
        [
            ScopeFacts(
                scope=scope,
                month=month,
                severity=severity,
                is_maintenance=maintenance,
                is_open=is_open,
                n=n,
                n_detect=nd,
                n_first_update=nf,
                n_resolve=nr,
                n_cadence=nc,
            )
            for (scope, month, severity, maintenance, is_open), (n, nd, nf, nr, nc) in sorted(sums.items())
        ],
        batch_size=_BATCH,
    )
    DowntimeMonth.objects.bulk_create(
        [
            DowntimeMonth(product_id=p, month=m, severity=s, micros=micros)
            for (p, m, s), micros in sorted(stretch_months(stretches, tz).items())
        ],
        batch_size=_BATCH,
    )
