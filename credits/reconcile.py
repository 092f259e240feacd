"""Reconciliation (a read): an incident's declared impact windows beside the downtime
measured from each product's SLI source, per product and location. See
docs/adr/0030-credits-from-measurements.md."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal

from django.utils import timezone

from credits import sla, sla_measured
from incidents.intervals import Interval, merge
from incidents.models import ImpactWindow, Incident
from measurements import selectors as measured_selectors
from measurements.prometheus import SourceUnavailable

# How far around the declared windows the measurement is read, to catch impact that
# began before anyone declared it or lasted after.
MARGIN = timedelta(hours=2)
DEFAULT_DEFINITION = sla_measured.Definition(down_above=Decimal(5))


@dataclass
class Row:
    """One product and location of an incident."""

    product: str
    location: str
    declared: list[Interval]
    product_id: int = 0
    location_id: int | None = None
    measured: list[Interval] = field(default_factory=list)
    agree: list[Interval] = field(default_factory=list)
    undeclared: list[Interval] = field(default_factory=list)  # measured, nobody declared: draft windows
    unmeasured: list[Interval] = field(default_factory=list)  # declared, no measured impact
    gaps: list[Interval] = field(default_factory=list)
    declared_minutes: Decimal = Decimal(0)
    measured_minutes: Decimal | None = None
    request_uptime: Decimal | None = None  # request-weighted, over the span read
    span: Interval | None = None  # the stretch read from the source
    problem: str = ""  # no source, or the source could not be read


def _minus(intervals: list[Interval], holes: list[Interval]) -> list[Interval]:
    out: list[Interval] = []
    for interval in intervals:
        out.extend(sla_measured._minus(interval, holes))
    return merge(out)


def _intersect(a: list[Interval], b: list[Interval]) -> list[Interval]:
    out = [p for x in a for y in b if (p := x.clip(y.start, y.end)) is not None]
    return merge(out)


def _minutes(intervals: list[Interval]) -> Decimal:
    return sum((sla._minutes(iv.duration) for iv in intervals), Decimal(0))


def incident_reconciliation(
    incident: Incident,
    *,
    definition: sla_measured.Definition = DEFAULT_DEFINITION,
    now: datetime | None = None,
) -> list[Row]:
    """Per (product, location) of the incident's windows: declared and measured impact,
    where they agree, what was measured but not declared, what was declared but not
    measured, and the stretches without data (never counted either way)."""
    now = now or timezone.now()
    groups: dict[tuple[int, int | None], list[ImpactWindow]] = {}
    windows = ImpactWindow.objects.filter(incident=incident).select_related("product", "location")
    for window in windows.order_by("started_at", "id"):
        groups.setdefault((window.product_id, window.location_id), []).append(window)
    return [_row(ws, definition, now) for ws in groups.values()]


def _row(windows: list[ImpactWindow], definition: sla_measured.Definition, now: datetime) -> Row:
    first = windows[0]
    declared = merge(Interval(w.started_at, w.ended_at or now) for w in windows)
    row = Row(
        product=first.product.name,
        location=first.location.name if first.location else "",
        declared=declared,
        product_id=first.product_id,
        location_id=first.location_id,
        declared_minutes=_minutes(declared),
    )
    source = measured_selectors.source_for(first.product_id, first.location_id)
    if source is None:
        row.problem = "No SLI source is configured for this product and location."
        return row
    step = definition.period_minutes
    start = _floor(declared[0].start - MARGIN, step)
    end = min(_floor(declared[-1].end + MARGIN, step) + timedelta(minutes=step), _floor(now, step))
    row.span = Interval(start, end)
    try:
        points = measured_selectors.period_counts(source, start=start, end=end, minutes=step)
    except SourceUnavailable as exc:
        row.problem = f"Measurement unavailable, declared windows used: {exc}"
        row.gaps = [Interval(start, end)]
        return row
    samples = sla_measured.samples_from_points(points, start=start, end=end, minutes=step)
    result = sla_measured.measured_downtime(samples, definition)
    row.measured = result.impacted
    row.measured_minutes = result.downtime_minutes
    row.request_uptime = sla_measured.request_weighted_uptime(samples)
    row.gaps = list(result.gaps)
    row.agree = _intersect(declared, row.measured)
    row.undeclared = _minus(row.measured, declared)
    row.unmeasured = _minus(_minus(declared, row.measured), row.gaps)
    return row


def _floor(moment: datetime, minutes: int) -> datetime:
    epoch = moment.replace(minute=0, second=0, microsecond=0)
    return epoch + timedelta(minutes=(moment.minute // minutes) * minutes)
