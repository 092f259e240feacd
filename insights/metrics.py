"""Reliability metrics: pure arithmetic on incident facts. No ORM, no settings.

Computed from the same impact spans and `incidents.uptime` functions as the status page,
so a figure cannot disagree with the public page. The definitions (periods, time to
detect, first update, resolve, cadence, nearest-rank percentiles, downtime):
docs/adr/0005-insights-sql-path.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, tzinfo
from decimal import ROUND_DOWN, Decimal
from functools import cached_property

from incidents import intervals, uptime
from postmortems import durations

MONTH = "month"
QUARTER = "quarter"
GRANULARITIES = (MONTH, QUARTER)
NO_IMPACT = "none"  # an incident with no impact window in scope

_HUNDRED = Decimal(100)
NO_VALUE = "\N{EN DASH}"  # a table cell with no value


# --- Periods ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Period:
    """One calendar month or quarter in the display zone, as an absolute [start, end)."""

    first_day: date
    months: int  # 1 or 3
    start: datetime
    end: datetime

    @property
    def label(self) -> str:
        if self.months == 3:
            return f"{self.first_day.year} Q{(self.first_day.month - 1) // 3 + 1}"
        return f"{self.first_day:%Y-%m}"

    @property
    def short_label(self) -> str:
        if self.months == 3:
            return f"Q{(self.first_day.month - 1) // 3 + 1}"
        return f"{self.first_day:%b}"


def axis_labels(periods_: Sequence[Period]) -> tuple[list[str], list[str]]:
    """Short labels for a chart axis, and the year under the first period and each January."""
    labels = [p.short_label for p in periods_]
    years = [
        str(p.first_day.year) if i == 0 or p.first_day.month == 1 else "" for i, p in enumerate(periods_)
    ]
    return labels, years


def add_months(month: date, n: int) -> date:
    index = month.year * 12 + (month.month - 1) + n
    return date(index // 12, index % 12 + 1, 1)


def period_start(day: date, granularity: str) -> date:
    if granularity == QUARTER:
        return date(day.year, (day.month - 1) // 3 * 3 + 1, 1)
    return day.replace(day=1)


def periods(*, last: date, count: int, granularity: str, tz: tzinfo) -> tuple[Period, ...]:
    """`count` consecutive periods ending with the one containing `last`, oldest first."""
    if granularity not in GRANULARITIES:
        raise ValueError(f"unknown granularity {granularity!r}")
    if count < 1:
        raise ValueError("count must be at least 1")
    step = 3 if granularity == QUARTER else 1
    final = period_start(last, granularity)
    firsts = [add_months(final, -step * (count - 1 - i)) for i in range(count + 1)]
    bounds = [uptime.local_midnight(d, tz) for d in firsts]
    return tuple(
        Period(first_day=firsts[i], months=step, start=bounds[i], end=bounds[i + 1]) for i in range(count)
    )


def period_of(moment: datetime, periods_: Sequence[Period]) -> Period | None:
    for p in periods_:
        if p.start <= moment < p.end:
            return p
    return None


# --- Distributions --------------------------------------------------------------------------------


def nearest_rank_index(n: int, percent: int) -> int:
    """0-based index of the nearest-rank percentile of n ascending values."""
    if n < 1:
        raise ValueError("no values")
    rank = -(-percent * n // 100)  # ceil without floats
    return min(max(rank, 1), n) - 1


# Dots per strip-chart row at most: beyond this the SVG grows without showing more (dots
# overlap), so a long distribution is drawn by rank.
STRIP_POINTS = 120


def summary_ranks(n: int) -> frozenset[int]:
    """The ranks behind a distribution's figures: median, 90th percentile, longest."""
    if n < 1:
        return frozenset()
    return frozenset((nearest_rank_index(n, 50), nearest_rank_index(n, 90), n - 1))


def drawn_ranks(n: int, limit: int = STRIP_POINTS) -> tuple[int, ...]:
    """At most `limit` ranks of n, evenly spaced (first and last kept): the shape of the
    distribution, and its extremes, survive."""
    if n <= limit:
        return tuple(range(n))
    return tuple(round(i * (n - 1) / (limit - 1)) for i in range(limit))


@dataclass(frozen=True)
class Distribution:
    """Durations with the incident behind each, by rank: ascending by value, then by
    incident id (so ties are stable).

    `points` are (rank, value, incident id), ascending by rank: every rank of a complete
    distribution, or only the ranks a page shows (`shown`), which is all the database
    path reads. `count` is always the number of values.
    """

    count: int = 0
    points: tuple[tuple[int, timedelta, int], ...] = ()

    @cached_property
    def _by_rank(self) -> dict[int, tuple[timedelta, int]]:
        return {rank: (value, incident_id) for rank, value, incident_id in self.points}

    def _at(self, percent: int) -> tuple[timedelta, int] | None:
        if not self.count:
            return None
        return self._by_rank[nearest_rank_index(self.count, percent)]

    @property
    def median(self) -> timedelta | None:
        hit = self._at(50)
        return hit[0] if hit else None

    @property
    def p90(self) -> timedelta | None:
        hit = self._at(90)
        return hit[0] if hit else None

    @property
    def median_incident_id(self) -> int | None:
        hit = self._at(50)
        return hit[1] if hit else None

    @property
    def p90_incident_id(self) -> int | None:
        hit = self._at(90)
        return hit[1] if hit else None

    @property
    def max(self) -> timedelta | None:
        return self._by_rank[self.count - 1][0] if self.count else None

    def drawn(self, limit: int = STRIP_POINTS) -> list[tuple[timedelta, int]]:
        """The values a strip chart draws (`drawn_ranks`)."""
        return [self._by_rank[rank] for rank in drawn_ranks(self.count, limit)]

    def shown(self, *, drawn: int = STRIP_POINTS) -> Distribution:
        """Only the ranks behind the figures and, with `drawn`, the strip chart's."""
        keep = summary_ranks(self.count) | set(drawn_ranks(self.count, drawn) if drawn else ())
        return Distribution(count=self.count, points=tuple(p for p in self.points if p[0] in keep))

    @property
    def incident_ids(self) -> frozenset[int]:
        return frozenset(incident_id for _, _, incident_id in self.points)


def distribution(pairs: Iterable[tuple[timedelta | None, int]]) -> Distribution:
    """Every value, ranked; None is left out."""
    ordered = sorted((v, i) for v, i in pairs if v is not None)
    return Distribution(count=len(ordered), points=tuple((r, v, i) for r, (v, i) in enumerate(ordered)))


# --- One incident ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class IncidentFacts:
    """What the maths needs to know about one incident, read once from the database."""

    incident_id: int
    public_id: str
    title: str
    is_maintenance: bool
    is_public: bool
    started_at: datetime
    declared_at: datetime
    detected_at: datetime | None = None
    resolved_at: datetime | None = None
    first_update_at: datetime | None = None  # shown times (display_at): the cadence
    last_update_at: datetime | None = None
    # When the public first saw an entry: the earliest posting time (created_at), which
    # a backdated shown time does not move (docs/insights.md).
    first_posted_at: datetime | None = None
    update_count: int = 0
    spans: tuple[uptime.Span, ...] = ()  # its impact windows in scope


@dataclass(frozen=True)
class Named:
    """An incident behind a figure (a median, a dot on a strip chart), as the page names it."""

    public_id: str
    title: str


@dataclass(frozen=True)
class IncidentRow:
    facts: IncidentFacts
    level: str  # worst level among its spans in scope, NO_IMPACT without any
    time_to_detect: timedelta | None
    time_to_first_update: timedelta | None
    time_to_resolve: timedelta | None
    update_cadence: timedelta | None
    now: datetime
    weights: uptime.Weights

    @property
    def ongoing(self) -> bool:
        return self.facts.resolved_at is None

    # Computed when shown (the page lists 50 incidents; the counts and distributions above
    # need none of the interval maths), once per row.
    @cached_property
    def duration(self) -> timedelta:
        """The union of its windows: what its public page shows."""
        spans = self.facts.spans
        if len(spans) == 1:
            iv = spans[0].interval(now=self.now)
            return iv.duration if iv is not None else timedelta(0)
        return intervals.total(iv for s in spans if (iv := s.interval(now=self.now)) is not None)

    @cached_property
    def weighted_downtime_minutes(self) -> Decimal:
        spans = self.facts.spans
        if not spans or self.facts.is_maintenance:
            return Decimal(0)
        if len(spans) == 1:
            # One window: one level, nothing to merge (the same figure downtime_minutes gives).
            iv = spans[0].interval(now=self.now)
            if iv is None:
                return Decimal(0)
            return uptime.minutes(iv.duration) * self.weights.for_level(spans[0].level)
        start = min(s.start for s in spans)
        return uptime.downtime_minutes(spans, start=start, end=self.now, now=self.now, weights=self.weights)


def _non_negative(delta: timedelta) -> timedelta:
    return max(delta, timedelta(0))


def incident_row(facts: IncidentFacts, *, now: datetime, weights: uptime.Weights) -> IncidentRow:
    response = not facts.is_maintenance
    # Time to detect and to resolve are the report's own figures (postmortems.durations).
    milestones = durations.Milestones(
        impact_start=facts.started_at, detected_at=facts.detected_at, resolved_at=facts.resolved_at
    )
    detect = durations.time_to_detect(milestones) if response else None
    first_update = None
    if response and facts.is_public and facts.first_posted_at is not None:
        reference = facts.detected_at or facts.declared_at
        first_update = _non_negative(facts.first_posted_at - reference)
    resolve = durations.time_to_resolve(milestones) if response else None
    cadence = None
    if (
        response
        and facts.is_public
        and facts.update_count > 1
        and facts.first_update_at is not None
        and facts.last_update_at is not None
    ):
        cadence = _non_negative(facts.last_update_at - facts.first_update_at) / (facts.update_count - 1)
        cadence = timedelta(seconds=round(cadence.total_seconds()))
    return IncidentRow(
        facts=facts,
        level=uptime.worst(s.level for s in facts.spans) if facts.spans else NO_IMPACT,
        time_to_detect=detect,
        time_to_first_update=first_update,
        time_to_resolve=resolve,
        update_cadence=cadence,
        now=now,
        weights=weights,
    )


# --- Downtime and uptime over several products -----------------------------------------------------


@dataclass(frozen=True)
class Downtime:
    total: timedelta  # unweighted, at levels with a weight above zero
    weighted_minutes: Decimal
    uptime: uptime.Uptime


def product_downtime(
    spans: Sequence[uptime.Span], *, start: datetime, end: datetime, now: datetime, weights: uptime.Weights
) -> Downtime:
    """One product over [start, end): the status page's own uptime, plus the unweighted total."""
    horizon = min(end, now)
    per_level = uptime.exclusive_levels(spans, start=start, end=horizon, now=now) if horizon > start else {}
    return downtime_of_levels(
        {level: intervals.total(ivs) for level, ivs in per_level.items()},
        start=start,
        end=horizon,
        weights=weights,
    )


def downtime_of_levels(
    per_level: Mapping[str, timedelta], *, start: datetime, end: datetime, weights: uptime.Weights
) -> Downtime:
    """`product_downtime` from the time each level was the worst one over [start, end)
    (`end` already capped at now). The database path sums that time in SQL from the same
    windows; this keeps the arithmetic after it in one place."""
    # Every level, as `exclusive_levels` gives them: the sum is then the same Decimal to the
    # last digit (0 x 0.3 is Decimal("0.0"), not Decimal("0")).
    per_level = {level: per_level.get(level, timedelta(0)) for level in uptime.LEVELS_WORST_FIRST}
    result = uptime.uptime_of_durations(per_level, start=start, end=end, weights=weights)
    total = sum((length for level, length in per_level.items() if weights.for_level(level) > 0), timedelta(0))
    return Downtime(total=total, weighted_minutes=result.downtime_minutes, uptime=result)


def spans_by_period(
    spans: Iterable[uptime.Span], periods_: Sequence[Period]
) -> dict[Period, list[uptime.Span]]:
    """The spans overlapping each period, so that each period's maths sees only its own
    (the result is the same: `incidents.uptime` clips to the period anyway)."""
    out: dict[Period, list[uptime.Span]] = {p: [] for p in periods_}
    for span in spans:
        for p in periods_:
            if span.start < p.end and (span.end is None or span.end > p.start):
                out[p].append(span)
    return out


def combined(downtimes: Sequence[Downtime], *, places: int = 2) -> Downtime:
    """Several products as one figure: downtime and product-minutes add up."""
    period = sum((d.uptime.period_minutes for d in downtimes), Decimal(0))
    down = sum((d.weighted_minutes for d in downtimes), Decimal(0))
    total = sum((d.total for d in downtimes), timedelta(0))
    quantum = Decimal(1).scaleb(-places)
    if period == 0:
        percent = _HUNDRED.quantize(quantum)
    else:
        # Rounded down like `incidents.uptime.uptime`, so one product gives its figure exactly.
        percent = ((period - down) / period * _HUNDRED).quantize(quantum, rounding=ROUND_DOWN)
    return Downtime(
        total=total,
        weighted_minutes=down,
        uptime=uptime.Uptime(percent=percent, downtime_minutes=down, period_minutes=period),
    )


# --- A period's summary ---------------------------------------------------------------------------

LEVEL_ORDER = (
    uptime.MAJOR_OUTAGE,
    uptime.PARTIAL_OUTAGE,
    uptime.DEGRADED_PERFORMANCE,
    NO_IMPACT,
)


@dataclass(frozen=True)
class Response:
    detect: Distribution
    first_update: Distribution
    resolve: Distribution
    cadence: Distribution

    def items(self) -> tuple[tuple[str, str, Distribution], ...]:
        return (
            ("detect", "Time to detect", self.detect),
            ("first_update", "Time to first public update", self.first_update),
            ("resolve", "Time to resolve", self.resolve),
            ("cadence", "Update cadence", self.cadence),
        )

    def shown(self, *, drawn: int = STRIP_POINTS) -> Response:
        return Response(*(d.shown(drawn=drawn) for _, _, d in self.items()))


def response_times(rows: Iterable[IncidentRow]) -> Response:
    rows = [r for r in rows if not r.facts.is_maintenance]
    return Response(
        detect=distribution((r.time_to_detect, r.facts.incident_id) for r in rows),
        first_update=distribution((r.time_to_first_update, r.facts.incident_id) for r in rows),
        resolve=distribution((r.time_to_resolve, r.facts.incident_id) for r in rows),
        cadence=distribution((r.update_cadence, r.facts.incident_id) for r in rows),
    )


@dataclass(frozen=True)
class PeriodSummary:
    period: Period
    incidents: int
    maintenance: int
    by_level: tuple[tuple[str, int], ...]  # LEVEL_ORDER
    downtime: Downtime
    # The period's own distributions (figures only, no strip chart): only the response CSV
    # lists them, so the page leaves them out (None) unless asked.
    response: Response | None
    open_incidents: int = 0

    def level_count(self, level: str) -> int:
        return dict(self.by_level).get(level, 0)


def period_summary(
    period: Period,
    *,
    rows: Sequence[IncidentRow],
    downtime: Downtime,
    now: datetime,
    with_response: bool = True,
) -> PeriodSummary:
    """`rows`: the incidents (and maintenance) that started in `period`."""
    incidents = [r for r in rows if not r.facts.is_maintenance]
    counts = dict.fromkeys(LEVEL_ORDER, 0)
    for r in incidents:
        counts[r.level if r.level in counts else NO_IMPACT] += 1
    return PeriodSummary(
        period=period,
        incidents=len(incidents),
        maintenance=len(rows) - len(incidents),
        by_level=tuple(counts.items()),
        downtime=downtime,
        response=response_times(incidents).shown(drawn=0) if with_response else None,
        open_incidents=sum(1 for r in incidents if r.ongoing),
    )


# --- Action items and credits, per period ---------------------------------------------------------


@dataclass(frozen=True)
class ActionItemCounts:
    period: Period
    opened: int
    closed: int
    overdue: int  # open at the end of the period (or now) and past their due date


@dataclass(frozen=True)
class CreditTotals:
    period: Period
    issued: int = 0  # notices sent
    pending: int = 0  # computed, approved, queued or failed: not sent yet
    days: Decimal = Decimal(0)  # days of service, sent notices
    percent_notices: int = 0  # sent percent-of-bill notices
    amounts: tuple[tuple[str, Decimal], ...] = field(default=())  # (currency, money), sent

    def amount_text(self) -> str:
        return ", ".join(f"{amount:,.2f} {currency}" for currency, amount in self.amounts) or "0"


def format_hours(delta: timedelta | None) -> str:
    """A duration for tables: '18 h 11 min', or a dash for no value."""
    if delta is None:
        return NO_VALUE
    return intervals.format_duration(delta)
