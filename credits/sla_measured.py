"""Downtime from measurements, the choice of downtime source, and policy versions.

Pure like `credits.sla`: no ORM, no settings, `Decimal` throughout, aware datetimes,
intervals half-open. Why the rules are what they are: docs/adr/0030-credits-from-measurements.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

from credits import sla
from incidents.intervals import Interval, merge

SOURCE_DECLARED = "declared"
SOURCE_MEASURED = "measured"
SOURCE_LARGER = "larger"


@dataclass(frozen=True)
class Definition:
    """How a policy turns an error-rate series into downtime.

    A period of `period_minutes` is down when its error rate (percent) is strictly above
    `down_above`, degraded (counted at `degraded_weight`) when strictly above
    `degraded_above`; a run of impacted periods shorter than `min_consecutive` is not
    downtime."""

    down_above: Decimal
    period_minutes: int = 5
    degraded_above: Decimal | None = None
    degraded_weight: Decimal = Decimal(0)
    min_consecutive: int = 1


@dataclass(frozen=True)
class PeriodSample:
    """One period's counts; `valid` None means no data for it (a gap)."""

    start: datetime
    end: datetime
    errors: Decimal | None
    valid: Decimal | None

    @property
    def error_percent(self) -> Decimal | None:
        if self.valid is None or self.errors is None:
            return None
        if self.valid == 0:
            return Decimal(0)
        return sla.HUNDRED * self.errors / self.valid


@dataclass(frozen=True)
class MeasuredResult:
    downtime_minutes: Decimal
    down: tuple[Interval, ...]  # counted at weight 1
    degraded: tuple[Interval, ...]  # counted at the degraded weight
    gaps: tuple[Interval, ...]  # no data: neither up nor down

    @property
    def impacted(self) -> list[Interval]:
        return merge([*self.down, *self.degraded])


def grid(start: datetime, end: datetime, minutes: int) -> list[tuple[datetime, datetime]]:
    """The periods [lo, hi) of `minutes` from `start`, the last one clipped to `end`."""
    step = timedelta(minutes=minutes)
    cells = []
    lo = start
    while lo < end:
        cells.append((lo, min(lo + step, end)))
        lo += step
    return cells


def samples_from_points(
    points: Mapping[datetime, tuple[Decimal, Decimal]], *, start: datetime, end: datetime, minutes: int
) -> list[PeriodSample]:
    """Periods on the grid from `start`; a point stamped at a period's end holds the
    (errors, valid) counts of that period, as a Prometheus range query with
    `increase(...[Nm])` at step N minutes returns them. A period without a point is a gap."""
    out = []
    for lo, hi in grid(start, end, minutes):
        errors, valid = points.get(hi, (None, None))
        out.append(PeriodSample(lo, hi, errors, valid))
    return out


def _weight(sample: PeriodSample, definition: Definition) -> Decimal | None:
    rate = sample.error_percent
    if rate is None:
        return None
    if rate > definition.down_above:
        return Decimal(1)
    if definition.degraded_above is not None and rate > definition.degraded_above:
        return definition.degraded_weight
    return Decimal(0)


def _runs(samples: Sequence[PeriodSample], weights: Sequence[Decimal | None]) -> list[list[int]]:
    """Indexes of consecutive impacted periods; a gap or an up period ends a run."""
    runs: list[list[int]] = []
    current: list[int] = []
    for index, weight in enumerate(weights):
        if weight:
            if current and samples[current[-1]].end != samples[index].start:
                runs.append(current)
                current = []
            current.append(index)
        elif current:
            runs.append(current)
            current = []
    if current:
        runs.append(current)
    return runs


def _minus(interval: Interval, holes: Sequence[Interval]) -> list[Interval]:
    pieces = [interval]
    for hole in holes:
        nxt = []
        for piece in pieces:
            if hole.end <= piece.start or hole.start >= piece.end:
                nxt.append(piece)
                continue
            if hole.start > piece.start:
                nxt.append(Interval(piece.start, hole.start))
            if hole.end < piece.end:
                nxt.append(Interval(hole.end, piece.end))
        pieces = nxt
    return pieces


def measured_downtime(
    samples: Sequence[PeriodSample], definition: Definition, *, maintenance: Iterable[Interval] = ()
) -> MeasuredResult:
    """Weighted downtime minutes of a series under `definition`, maintenance excluded."""
    weights = [_weight(s, definition) for s in samples]
    holes = merge(maintenance)
    down: list[Interval] = []
    degraded: list[Interval] = []
    for run in _runs(samples, weights):
        if len(run) < definition.min_consecutive:
            continue
        for index in run:
            target = down if weights[index] == 1 else degraded
            target.extend(_minus(Interval(samples[index].start, samples[index].end), holes))
    down, degraded = merge(down), merge(degraded)
    minutes = sum((sla._minutes(iv.duration) for iv in down), Decimal(0))
    minutes += sum((sla._minutes(iv.duration) * definition.degraded_weight for iv in degraded), Decimal(0))
    gaps = merge(Interval(s.start, s.end) for s, w in zip(samples, weights, strict=True) if w is None)
    return MeasuredResult(minutes, tuple(down), tuple(degraded), tuple(gaps))


def request_weighted_uptime(samples: Iterable[PeriodSample]) -> Decimal | None:
    """100 x (1 - errors / valid requests) over the periods with data; None without any."""
    errors = valid = Decimal(0)
    for sample in samples:
        if sample.valid is not None and sample.errors is not None:
            errors += sample.errors
            valid += sample.valid
    if valid == 0:
        return None
    return sla.HUNDRED * (valid - errors) / valid


@dataclass(frozen=True)
class SourcedDowntime:
    """Downtime under a policy's source, and the figures behind the choice."""

    source: str  # the one that counted: declared or measured
    downtime_minutes: Decimal
    declared_minutes: Decimal
    measured_minutes: Decimal | None  # None when there was no measurement at all
    gaps: tuple[Interval, ...] = field(default=())


def sourced_downtime(
    declared: Sequence[sla.Outage],
    measured: MeasuredResult | None,
    policy: sla.Policy,
    *,
    source: str,
    start: datetime,
    end: datetime,
    now: datetime | None = None,
) -> SourcedDowntime:
    """Downtime inside [start, end) from the policy's source. Where the measurement has
    gaps (or is missing), the declared windows are used for those stretches: missing
    data is never up or down by itself."""
    declared_minutes, _ = sla.weighted_downtime(declared, policy, start=start, end=end, now=now)
    if source == SOURCE_DECLARED or measured is None:
        gaps = (Interval(start, end),) if measured is None and source != SOURCE_DECLARED else ()
        return SourcedDowntime(SOURCE_DECLARED, declared_minutes, declared_minutes, None, gaps)
    measured_minutes = measured.downtime_minutes
    for gap in measured.gaps:
        lo, hi = max(gap.start, start), min(gap.end, end)
        if lo < hi:
            filled, _ = sla.weighted_downtime(declared, policy, start=lo, end=hi, now=now)
            measured_minutes += filled
    if source == SOURCE_LARGER and declared_minutes > measured_minutes:
        return SourcedDowntime(
            SOURCE_DECLARED, declared_minutes, declared_minutes, measured_minutes, measured.gaps
        )
    return SourcedDowntime(
        SOURCE_MEASURED, measured_minutes, declared_minutes, measured_minutes, measured.gaps
    )


def clip(result: MeasuredResult, start: datetime, end: datetime, degraded_weight: Decimal) -> MeasuredResult:
    """The part of a month's measurement inside [start, end): a version's days. Runs were
    judged on the whole series first, as declared stretches are before clipping."""

    def inside(intervals: Iterable[Interval]) -> tuple[Interval, ...]:
        return tuple(c for iv in intervals if (c := iv.clip(start, end)) is not None)

    down, degraded, gaps = inside(result.down), inside(result.degraded), inside(result.gaps)
    minutes = sum((sla._minutes(iv.duration) for iv in down), Decimal(0))
    minutes += sum((sla._minutes(iv.duration) * degraded_weight for iv in degraded), Decimal(0))
    return MeasuredResult(minutes, down, degraded, gaps)


@dataclass(frozen=True)
class Version:
    """A policy as it reads from `effective_from` (a day in the policy's time zone): its
    maths, where its downtime comes from, and how it reads a measurement."""

    effective_from: date
    policy: sla.Policy
    source: str = SOURCE_DECLARED
    definition: Definition | None = None


@dataclass(frozen=True)
class VersionPart:
    version: Version
    start: datetime
    end: datetime
    result: sla.SlaResult  # the version's maths on its own days
    share: Decimal  # its days' part of the month
    credit: Decimal  # result.credit x share
    sourced: SourcedDowntime | None = None  # under a measuring version


@dataclass(frozen=True)
class VersionedResult:
    period: sla.Period
    parts: tuple[VersionPart, ...]
    credit: Decimal  # the parts' sum, capped once for the month
    period_minutes: Decimal = Decimal(0)

    @property
    def spans_change(self) -> bool:
        return len(self.parts) > 1

    def as_result(self) -> sla.SlaResult:
        """The month as one result: the parts' downtime over the whole month, the month's
        uptime, the versioned credit (no single tier when the month spans a change)."""
        downtime = sum((p.result.downtime_minutes for p in self.parts), Decimal(0))
        uptime = sla.HUNDRED * (self.period_minutes - downtime) / self.period_minutes
        tier = self.parts[0].result.tier if len(self.parts) == 1 else None
        incidents = tuple(sorted({i for p in self.parts for i in p.result.incident_ids}))
        owed_or_down = self.credit > 0 or downtime > 0
        return sla.SlaResult(
            self.period,
            self.period_minutes,
            downtime,
            uptime,
            tier,
            self.credit,
            incidents if owed_or_down else (),
        )

    def source(self) -> tuple[str, Decimal | None, str]:
        """(the source that counted, measured minutes, "") over the parts: measured when
        any measuring part counted its measurement."""
        sourced = [p.sourced for p in self.parts if p.sourced is not None]
        if not sourced:
            return SOURCE_DECLARED, None, ""
        name = SOURCE_MEASURED if any(s.source == SOURCE_MEASURED for s in sourced) else SOURCE_DECLARED
        minutes = [s.measured_minutes for s in sourced if s.measured_minutes is not None]
        return name, (sum(minutes, Decimal(0)) if minutes else None), ""


def _day_start(day: date, time_zone: str) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=ZoneInfo(time_zone)).astimezone(ZoneInfo("UTC"))


def in_force(versions: Sequence[Version], period: sla.Period, time_zone: str) -> list[Version]:
    """The versions that rule some day of the month, oldest first. The oldest version
    rules everything before it too: a policy always has terms."""
    ordered = sorted(versions, key=lambda v: v.effective_from)
    start, end = period.bounds(time_zone)
    kept = []
    for index, version in enumerate(ordered):
        nxt = ordered[index + 1] if index + 1 < len(ordered) else None
        if nxt is not None and _day_start(nxt.effective_from, time_zone) <= start:
            continue  # superseded before the month began
        if index and _day_start(version.effective_from, time_zone) >= end:
            break
        kept.append(version)
    return kept


def _part_downtime(
    outages: Sequence[sla.Outage],
    version: Version,
    measured: MeasuredResult | None,
    *,
    start: datetime,
    end: datetime,
    now: datetime | None,
) -> tuple[Decimal, tuple[int, ...], SourcedDowntime | None]:
    downtime, incidents = sla.weighted_downtime(outages, version.policy, start=start, end=end, now=now)
    if version.source == SOURCE_DECLARED:
        return downtime, incidents, None
    weight = version.definition.degraded_weight if version.definition else Decimal(0)
    reading = clip(measured, start, end, weight) if measured is not None else None
    sourced = sourced_downtime(
        outages, reading, version.policy, source=version.source, start=start, end=end, now=now
    )
    return sourced.downtime_minutes, incidents, sourced


def compute_versioned(
    outages: Sequence[sla.Outage],
    versions: Sequence[Version],
    period: sla.Period,
    *,
    now: datetime | None = None,
    measured: Sequence[MeasuredResult | None] | None = None,
) -> VersionedResult:
    """A month computed with each policy version for its own days: each part's downtime
    (declared, or under a measuring version its measurement clipped to its days, gaps
    filled from the declared windows) and uptime on its days, its credit weighted by its
    share of the month, and the month's credit capped once (the cap of the version in
    force at the month's end), however many incidents and versions make it up.
    `measured` holds, per version in `versions`' order, the month's reading under that
    version's definition (None: nothing readable)."""
    if not versions:
        raise ValueError("no policy version")
    readings = dict(zip(versions, measured, strict=True)) if measured is not None else {}
    zone = versions[-1].policy.time_zone
    ordered = in_force(versions, period, zone)
    month_start, month_end = period.bounds(zone)
    month_minutes = sla._minutes(month_end - month_start)
    parts = []
    for index, version in enumerate(ordered):
        lo = month_start if index == 0 else max(month_start, _day_start(version.effective_from, zone))
        hi = month_end
        if index + 1 < len(ordered):
            hi = min(hi, _day_start(ordered[index + 1].effective_from, zone))
        if hi <= lo:
            continue
        span = sla._minutes(hi - lo)
        downtime, incidents, sourced = _part_downtime(
            outages, version, readings.get(version), start=lo, end=hi, now=now
        )
        uptime = sla.HUNDRED * (span - downtime) / span
        tier, credit = sla.credit_for(uptime, version.policy.tiers)
        result = sla.SlaResult(period, span, downtime, uptime, tier, credit, incidents)
        share = span / month_minutes
        parts.append(VersionPart(version, lo, hi, result, share, credit * share, sourced))
    total = sum((p.credit for p in parts), Decimal(0))
    cap = ordered[-1].policy.cap
    if cap is not None:
        total = min(total, cap)
    return VersionedResult(period, tuple(parts), total, month_minutes)
