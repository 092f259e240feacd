"""Measured downtime for a customer's entitlements over a month (a read of the SLI
sources through Prometheus), and the downtime its policy's source then counts. See
docs/adr/0030-credits-from-measurements.md."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal

from credits import sla, sla_measured
from incidents.intervals import Interval, merge
from measurements import selectors as measured_selectors
from measurements.models import SliSource
from measurements.prometheus import SourceUnavailable


@dataclass
class MonthMeasurer:
    """Reads each SLI source once per month and definition."""

    period: sla.Period
    now: datetime
    relatives: dict[int, frozenset[int]]
    cache: dict[tuple[int, sla_measured.Definition, str], tuple[sla_measured.MeasuredResult, str]] = field(
        default_factory=dict
    )

    def one(
        self, product_id: int, location_id: int | None, definition: sla_measured.Definition, zone: str
    ) -> list[tuple[sla_measured.MeasuredResult, str]]:
        """The readings of every source measuring this entitlement: the location's own,
        its parents' and its children's (a zone down is the region's customers' too,
        as with declared windows), or all of them for the product everywhere."""
        sources = [
            s
            for s in measured_selectors.product_sources(product_id)
            if s.location_id is None
            or location_id is None
            or location_id in self.relatives.get(s.location_id, frozenset({s.location_id}))
        ]
        if not sources:
            return [(self._whole_gap(zone), "no SLI source")]
        readings = []
        for source in sources:
            key = (source.pk, definition, zone)
            if key not in self.cache:
                self.cache[key] = self._read(source, definition, zone)
            readings.append(self.cache[key])
        return readings

    def _whole_gap(self, zone: str) -> sla_measured.MeasuredResult:
        start, end = self.period.bounds(zone)
        end = min(end, self.now)
        return sla_measured.MeasuredResult(Decimal(0), (), (), (Interval(start, end),) if end > start else ())

    def _read(
        self, source: SliSource, definition: sla_measured.Definition, zone: str
    ) -> tuple[sla_measured.MeasuredResult, str]:
        start, end = self.period.bounds(zone)
        end = min(end, self.now)
        try:
            points = measured_selectors.period_counts(
                source, start=start, end=end, minutes=definition.period_minutes
            )
        except SourceUnavailable as exc:
            return self._whole_gap(zone), f"source unavailable ({exc})"[:200]
        samples = sla_measured.samples_from_points(
            points, start=start, end=end, minutes=definition.period_minutes
        )
        result = sla_measured.measured_downtime(samples, definition)
        return result, "gaps in the measurement" if result.gaps else ""

    def entitlements(
        self, keys: list[tuple[int, int | None]], definition: sla_measured.Definition, zone: str
    ) -> tuple[sla_measured.MeasuredResult | None, str]:
        """The union over the entitlements: a minute down anywhere the customer pays for
        is down; a gap in one source stays a gap (declared windows fill it). None when no
        entitlement could be measured at all."""
        results = [r for p, loc in keys for r in self.one(p, loc, definition, zone)]
        if all(r.gaps and not r.down and not r.degraded and _unread(note) for r, note in results):
            return None, "; ".join(sorted({note for _, note in results}))
        down = merge(iv for r, _ in results for iv in r.down)
        degraded = _minus(merge(iv for r, _ in results for iv in r.degraded), down)
        gaps = _minus(merge(iv for r, _ in results for iv in r.gaps), [*down, *degraded])
        minutes = sum((sla._minutes(iv.duration) for iv in down), Decimal(0))
        minutes += sum(
            (sla._minutes(iv.duration) * definition.degraded_weight for iv in degraded), Decimal(0)
        )
        notes = sorted({note for _, note in results if note})
        return sla_measured.MeasuredResult(minutes, tuple(down), tuple(degraded), tuple(gaps)), "; ".join(
            notes
        )


def _unread(note: str) -> bool:
    return note.startswith(("no SLI source", "source unavailable"))


def _minus(intervals: list[Interval], holes: list[Interval]) -> list[Interval]:
    holes = merge(holes)
    return merge(piece for iv in intervals for piece in sla_measured._minus(iv, holes))
