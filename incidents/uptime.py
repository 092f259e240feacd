"""Display uptime and the daily status grid: pure arithmetic (Decimal), no ORM, no settings.

Days are calendar days in the display zone; each minute counts once, at the worst level
covering it; downtime weighs major, partial (and degraded) minutes, never maintenance;
the percentage rounds down; nothing after `now` counts. Intervals are half-open.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from decimal import ROUND_DOWN, Decimal

from incidents import intervals
from incidents.intervals import Interval

# The level strings of `incidents.models.ImpactLevel`, repeated here so that this module
# needs no Django (a test checks that they stay equal).
OPERATIONAL = "operational"
UNDER_MAINTENANCE = "under_maintenance"
DEGRADED_PERFORMANCE = "degraded_performance"
PARTIAL_OUTAGE = "partial_outage"
MAJOR_OUTAGE = "major_outage"

SEVERITY: dict[str, int] = {
    OPERATIONAL: 0,
    UNDER_MAINTENANCE: 1,
    DEGRADED_PERFORMANCE: 2,
    PARTIAL_OUTAGE: 3,
    MAJOR_OUTAGE: 4,
}
# Worst first: the order in which minutes are handed out to levels.
LEVELS_WORST_FIRST: tuple[str, ...] = (MAJOR_OUTAGE, PARTIAL_OUTAGE, DEGRADED_PERFORMANCE, UNDER_MAINTENANCE)

_MINUTE = Decimal(60)
_HUNDRED = Decimal(100)


def worst(levels: Iterable[str]) -> str:
    return max(levels, key=SEVERITY.__getitem__, default=OPERATIONAL)


@dataclass(frozen=True)
class Span:
    """One impact window as the maths sees it. `end` None means still ongoing."""

    level: str
    start: datetime
    end: datetime | None = None
    incident_id: int | None = None

    def __post_init__(self) -> None:
        if self.level not in SEVERITY or self.level == OPERATIONAL:
            raise ValueError(f"unknown impact level {self.level!r}")

    def interval(self, *, now: datetime) -> Interval | None:
        """The part of the span that has happened by `now`, or None if none has."""
        end = now if self.end is None else min(self.end, now)
        if end <= self.start:
            return None
        return Interval(self.start, end)


@dataclass(frozen=True)
class Weights:
    """How much one minute at each level counts as downtime."""

    major: Decimal = Decimal(1)
    partial: Decimal = Decimal("0.3")
    degraded: Decimal = Decimal(0)

    @classmethod
    def of(
        cls,
        *,
        major: float | str | Decimal,
        partial: float | str | Decimal,
        degraded: float | str | Decimal = 0,
    ) -> Weights:
        # Through str(): Decimal(0.3) would carry the binary float's error into the maths.
        return cls(major=Decimal(str(major)), partial=Decimal(str(partial)), degraded=Decimal(str(degraded)))

    def for_level(self, level: str) -> Decimal:
        return {
            MAJOR_OUTAGE: self.major,
            PARTIAL_OUTAGE: self.partial,
            DEGRADED_PERFORMANCE: self.degraded,
        }.get(level, Decimal(0))


@dataclass(frozen=True)
class Day:
    """One calendar day in the display zone, as an absolute [start, end) in UTC."""

    date: date
    start: datetime
    end: datetime

    @property
    def length(self) -> timedelta:
        return self.end - self.start


def local_midnight(day: date, tz: tzinfo) -> datetime:
    """Midnight at the start of `day` in `tz`, in UTC."""
    return datetime.combine(day, time.min, tzinfo=tz).astimezone(UTC)


def local_date(moment: datetime, tz: tzinfo) -> date:
    return moment.astimezone(tz).date()


def display_days(*, last: date, count: int, tz: tzinfo) -> tuple[Day, ...]:
    """`count` consecutive days ending with `last`, oldest first."""
    if count < 1:
        raise ValueError("count must be at least 1")
    first = last - timedelta(days=count - 1)
    dates = [first + timedelta(days=i) for i in range(count + 1)]
    midnights = [local_midnight(d, tz) for d in dates]
    return tuple(Day(date=dates[i], start=midnights[i], end=midnights[i + 1]) for i in range(count))


def minutes(delta: timedelta) -> Decimal:
    return Decimal(int(delta.total_seconds())) / _MINUTE


def exclusive_levels(
    spans: Iterable[Span], *, start: datetime, end: datetime, now: datetime
) -> dict[str, list[Interval]]:
    """Per level, the merged stretches of [start, end) where that level is the worst one.

    The result's intervals never overlap across levels: a minute belongs to the worst
    level covering it, so weighting cannot count it twice.
    """
    happened = [(s.level, iv) for s in spans if (iv := s.interval(now=now)) is not None]
    taken: list[Interval] = []
    result: dict[str, list[Interval]] = {}
    for level in LEVELS_WORST_FIRST:
        mine = intervals.clip_all((iv for lv, iv in happened if lv == level), start, end)
        own = intervals.subtract(mine, taken)
        result[level] = intervals.merge(own)
        taken = intervals.merge([*taken, *own])
    return result


def downtime_minutes(
    spans: Iterable[Span], *, start: datetime, end: datetime, now: datetime, weights: Weights
) -> Decimal:
    """Weighted downtime in [start, end), in minutes (exact, not rounded)."""
    per_level = exclusive_levels(spans, start=start, end=end, now=now)
    return sum(
        (minutes(intervals.total(ivs)) * weights.for_level(level) for level, ivs in per_level.items()),
        Decimal(0),
    )


@dataclass(frozen=True)
class Uptime:
    percent: Decimal
    downtime_minutes: Decimal
    period_minutes: Decimal

    @property
    def is_perfect(self) -> bool:
        return self.downtime_minutes == 0


def uptime(
    spans: Iterable[Span],
    *,
    start: datetime,
    end: datetime,
    now: datetime,
    weights: Weights,
    places: int = 2,
) -> Uptime:
    """Uptime over [start, min(end, now)), as a percentage rounded down to `places`.

    Rounded down, not half-up: 99.996% must not be shown as 100.00% when there was
    downtime, and a product just under a threshold must not appear above it.
    """
    end = min(end, now)
    if end <= start:
        return uptime_of_levels({}, start=start, end=end, weights=weights, places=places)
    per_level = exclusive_levels(spans, start=start, end=end, now=now)
    return uptime_of_levels(per_level, start=start, end=end, weights=weights, places=places)


def uptime_of_levels(
    per_level: Mapping[str, Sequence[Interval]],
    *,
    start: datetime,
    end: datetime,
    weights: Weights,
    places: int = 2,
) -> Uptime:
    """`uptime` for stretches `exclusive_levels` has already worked out over [start, end)
    (`end` already capped at now): a caller that also needs the stretches themselves
    (the insights' unweighted downtime) computes them once."""
    return uptime_of_durations(
        {level: intervals.total(ivs) for level, ivs in per_level.items()},
        start=start,
        end=end,
        weights=weights,
        places=places,
    )


def uptime_of_durations(
    per_level: Mapping[str, timedelta],
    *,
    start: datetime,
    end: datetime,
    weights: Weights,
    places: int = 2,
) -> Uptime:
    """`uptime` from the time each level was the worst one over [start, end) (`end` already
    capped at now): what `exclusive_levels` gives, summed, or what the insights' PostgreSQL
    path sums in the database from the same windows. Each level's time is truncated to
    whole seconds before it is weighted, as everywhere else (`minutes`)."""
    period = minutes(max(end - start, timedelta(0)))
    quantum = Decimal(1).scaleb(-places)
    if period == 0:
        return Uptime(percent=_HUNDRED.quantize(quantum), downtime_minutes=Decimal(0), period_minutes=period)
    weighted = sum(
        (minutes(length) * weights.for_level(level) for level, length in per_level.items()),
        Decimal(0),
    )
    down = min(weighted, period)
    percent = ((period - down) / period * _HUNDRED).quantize(quantum, rounding=ROUND_DOWN)
    return Uptime(percent=percent, downtime_minutes=down, period_minutes=period)


@dataclass(frozen=True)
class DayIncident:
    """An incident behind a day's status, with the worst level it had that day."""

    incident_id: int
    level: str


@dataclass(frozen=True)
class DayStatus:
    day: Day
    level: str
    downtime_minutes: Decimal
    # Time spent at each level that day (worst level wins a shared minute), worst first.
    impact: tuple[tuple[str, timedelta], ...] = ()
    # Worst first, then by first impact that day.
    incidents: tuple[DayIncident, ...] = field(default=())

    @property
    def is_operational(self) -> bool:
        return self.level == OPERATIONAL

    @property
    def worst_incident_id(self) -> int | None:
        return self.incidents[0].incident_id if self.incidents else None


def day_statuses(
    spans: Sequence[Span], *, days: Sequence[Day], now: datetime, weights: Weights
) -> tuple[DayStatus, ...]:
    """The status of each day: worst level that day, weighted downtime, incidents behind it."""
    happened = [(s, iv) for s in spans if (iv := s.interval(now=now)) is not None]
    result = []
    for day in days:
        today = [(s, clipped) for s, iv in happened if (clipped := iv.clip(day.start, day.end)) is not None]
        if not today:
            result.append(DayStatus(day=day, level=OPERATIONAL, downtime_minutes=Decimal(0)))
            continue
        day_spans = [s for s, _ in today]
        per_level = exclusive_levels(day_spans, start=day.start, end=day.end, now=now)
        impact = tuple(
            (level, intervals.total(per_level[level])) for level in LEVELS_WORST_FIRST if per_level[level]
        )
        by_incident: dict[int, tuple[str, datetime]] = {}
        for s, clipped in today:
            if s.incident_id is None:
                continue
            level, first = by_incident.get(s.incident_id, (OPERATIONAL, clipped.start))
            by_incident[s.incident_id] = (worst([level, s.level]), min(first, clipped.start))
        incidents = sorted(by_incident.items(), key=lambda item: (-SEVERITY[item[1][0]], item[1][1], item[0]))
        result.append(
            DayStatus(
                day=day,
                level=worst(s.level for s in day_spans),
                downtime_minutes=weighted_minutes(impact, weights),
                impact=impact,
                incidents=tuple(DayIncident(incident_id=i, level=lv) for i, (lv, _) in incidents),
            )
        )
    return tuple(result)


def weighted_minutes(impact: Iterable[tuple[str, timedelta]], weights: Weights) -> Decimal:
    """A day's downtime from the time each level was the worst one (`DayStatus.impact`)."""
    return sum((minutes(delta) * weights.for_level(level) for level, delta in impact), Decimal(0))


def current_level(spans: Iterable[Span], *, now: datetime) -> str:
    """The rollup: the worst level among spans open at `now` (started, not yet ended)."""
    return worst(s.level for s in spans if s.start <= now and (s.end is None or s.end > now))
