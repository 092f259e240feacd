"""Each product's days in the display zone (the status page's bars, grid, uptime and
current level), read from a maintained summary instead of every window of the range.

`ProductDay` rows (and their `ProductDayIncident`s) hold what the closed windows of
published incidents did to a product on a day, whole (as if every window had ended).
`refresh` recounts the days a write touched; it is called from `incidents.services._common.impact_changed`, the one place
every write that changes counted impact goes through. `rebuild` recounts everything
(the migration that creates the table, `manage.py rebuild_product_days`).
`page_days` reads a range as the status page draws it: one row a stored day (its level
and time at each level), on the grid's few days its worst incident, count and first few
incidents (all in SQL), and the days that windows still open or ending after now touch,
worked out at that moment from the windows of those days.
Design: docs/adr/0014-per-day-summary.md.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, tzinfo
from itertools import groupby
from typing import Any, NamedTuple

from django.conf import settings
from django.db.models import Count, Min, OuterRef, Q, Subquery, Sum

from core.timezones import display_zone
from incidents import uptime
from incidents.models import ImpactWindow, ProductDay, ProductDayIncident
from incidents.selectors import counted_window

ONE_DAY = timedelta(days=1)
# A ProductDay has one duration field per level, named after the level.
LEVEL_FIELDS = uptime.LEVELS_WORST_FIRST
# The "now" of a stored day: its windows have all ended, every minute of them counts.
_AFTER_EVERYTHING = datetime.max.replace(tzinfo=UTC)
# Storing durations, not weighted minutes: the weights apply when the page reads them.
_UNWEIGHTED = uptime.Weights()
_SPAN_FIELDS = ("product_id", "level", "started_at", "ended_at", "incident_id")
# A local day begins at most a day and an hour (a DST change) before any moment in it.
_DAY_MARGIN = timedelta(days=2)

Span = uptime.Span


@dataclass(frozen=True)
class Models:
    """The models the summary is kept in and counted from: the migration that fills the
    tables passes its historical ones."""

    day: Any = ProductDay
    day_incident: Any = ProductDayIncident
    window: Any = ImpactWindow


def day_of(day: date, tz: tzinfo) -> uptime.Day:
    return uptime.Day(
        date=day, start=uptime.local_midnight(day, tz), end=uptime.local_midnight(day + ONE_DAY, tz)
    )


def dates_touched(start: datetime, end: datetime, tz: tzinfo) -> Iterator[date]:
    """The local dates from `start`'s to `end`'s, both included."""
    day, last = uptime.local_date(start, tz), uptime.local_date(end, tz)
    while day <= last:
        yield day
        day += ONE_DAY


def statuses_on(
    spans: Iterable[Span], dates: Collection[date], *, tz: tzinfo, now: datetime, weights: uptime.Weights
) -> dict[date, uptime.DayStatus]:
    """`uptime.day_statuses` of the impacted days among `dates`, each day given only the
    spans that touch it: linear in the spans, where handing every day every span would
    cost spans x days on a long history."""
    by_day: dict[date, list[Span]] = defaultdict(list)
    for span in spans:
        happened = span.interval(now=now)
        if happened is None:
            continue
        for day in dates_touched(happened.start, happened.end, tz):
            if day in dates:
                by_day[day].append(span)
    result = {}
    for day, day_spans in by_day.items():
        (status,) = uptime.day_statuses(day_spans, days=[day_of(day, tz)], now=now, weights=weights)
        if not status.is_operational:
            result[day] = status
    return result


def _span(row: Sequence[Any]) -> Span:
    return Span(level=row[1], start=row[2], end=row[3], incident_id=row[4])


# --- Keeping the summary -----------------------------------------------------------------


def refresh(
    *, products: Collection[int], spans: Iterable[tuple[datetime, datetime | None]], now: datetime
) -> None:
    """Recount these products on every day the spans touch (an open span runs to `now`).

    Runs in the write's transaction after `impact_changed` has updated the products'
    rows, which holds their locks until commit: two writes on one product recount one
    after the other, the second seeing the first's windows.
    """
    tz = display_zone()
    dates = {day for start, end in spans for day in dates_touched(start, max(start, end or now), tz)}
    if products and dates:
        recount(Models(), products=products, dates=dates, tz=tz, zone=settings.DISPLAY_TIME_ZONE)


def recount(
    models: Models, *, products: Collection[int], dates: Collection[date], tz: tzinfo, zone: str
) -> None:
    """Replace the rows of these products on these dates."""
    low, high = day_of(min(dates), tz).start, day_of(max(dates), tz).end
    windows = models.window.objects.filter(
        counted_window(),
        product_id__in=products,
        ended_at__isnull=False,
        ended_at__gt=low,
        started_at__lt=high,
    )
    spans: dict[int, list[Span]] = defaultdict(list)
    for row in windows.values_list(*_SPAN_FIELDS):
        spans[row[0]].append(_span(row))
    counted = [
        (product_id, status)
        for product_id in products
        for status in statuses_on(
            spans[product_id], dates, tz=tz, now=_AFTER_EVERYTHING, weights=_UNWEIGHTED
        ).values()
    ]
    stale = {"zone": zone, "product_id__in": products, "day__in": dates}
    models.day_incident.objects.filter(**{f"product_day__{k}": v for k, v in stale.items()}).delete()
    models.day.objects.filter(**stale).delete()
    _store(models, zone=zone, counted=counted)


def _store(models: Models, *, zone: str, counted: Sequence[tuple[int, uptime.DayStatus]]) -> int:
    rows = models.day.objects.bulk_create(
        [
            models.day(
                product_id=product_id,
                zone=zone,
                day=status.day.date,
                level=status.level,
                **{level: dict(status.impact).get(level, timedelta(0)) for level in LEVEL_FIELDS},
            )
            for product_id, status in counted
        ]
    )
    models.day_incident.objects.bulk_create(
        [
            models.day_incident(product_day_id=row.pk, incident_id=i.incident_id, level=i.level, rank=rank)
            for row, (_, status) in zip(rows, counted, strict=True)
            for rank, i in enumerate(status.incidents)
        ]
    )
    return len(rows)


def rebuild(
    models: Models,
    *,
    tz: tzinfo,
    zone: str,
    batch: int = 5000,
    progress: Callable[[int, int], object] | None = None,
) -> int:
    """Recount every product on every day, in `zone`; returns the days written.
    `progress(products done, days written)` is told after each product."""
    models.day_incident.objects.all().delete()
    models.day.objects.all().delete()
    windows = (
        models.window.objects.filter(counted_window(), ended_at__isnull=False)
        .order_by("product_id", "started_at")
        .values_list(*_SPAN_FIELDS)
    )
    pending: list[tuple[int, uptime.DayStatus]] = []
    written = 0
    by_product = groupby(windows.iterator(chunk_size=batch), key=lambda row: row[0])
    for done, (product_id, rows) in enumerate(by_product, start=1):
        spans = [_span(row) for row in rows]
        dates = {day for s in spans if s.end is not None for day in dates_touched(s.start, s.end, tz)}
        statuses = statuses_on(spans, dates, tz=tz, now=_AFTER_EVERYTHING, weights=_UNWEIGHTED)
        pending += [(product_id, status) for status in statuses.values()]
        if len(pending) >= batch:
            written += _store(models, zone=zone, counted=pending)
            pending = []
        if progress is not None:
            progress(done, written + len(pending))
    return written + _store(models, zone=zone, counted=pending)


# --- Reading it: the status page's bars, plain rows, no per-day objects ---------------------


@dataclass(frozen=True)
class IncidentName:
    public_id: str
    title: str


def _windows_not_over(*, now: datetime, since: datetime) -> Iterable[Sequence[Any]]:
    """Counted windows open or ending after `now`, and with them every window of the days
    they touch (since the earliest one began, within the range): what `_live_days`
    needs, in one query on `window_ended`."""
    counted = ImpactWindow.objects.filter(counted_window())
    not_over = Q(ended_at__isnull=True) | Q(ended_at__gt=now)
    # Every counted window's incident is public: grouping by that makes one group.
    earliest = counted.filter(not_over).order_by().values("incident__is_public").annotate(m=Min("started_at"))
    touching = Q(ended_at__gt=since) & Q(ended_at__gt=Subquery(earliest.values("m")) - _DAY_MARGIN)
    # In no order: the model's (started_at) would have the planner walk that index.
    rows = counted.filter(not_over | touching).order_by()
    return rows.values_list(*_SPAN_FIELDS, "incident__public_id", "incident__title")


def _live_days(
    spans: Sequence[Span],
    live: Sequence[Span],
    *,
    days: Sequence[uptime.Day],
    now: datetime,
    tz: tzinfo,
    weights: uptime.Weights,
) -> tuple[set[date], dict[date, uptime.DayStatus]]:
    """Work out at `now` one product's days that a window not yet over touches, from the
    day it began: an open window is in no stored row, and a stored row counts a window
    that ends later whole. The dates recounted (their stored rows no longer hold) and
    the impacted ones among them."""
    first, last = days[0].date, min(days[-1].date, uptime.local_date(now, tz))
    start = max(first, min(uptime.local_date(s.start, tz) for s in live))
    dates = {start + timedelta(days=n) for n in range((last - start).days + 1)}
    return dates, statuses_on(spans, dates, tz=tz, now=now, weights=weights)


class Mark(NamedTuple):
    """An incident marked on a day of the grid, at the worst level it had that day."""

    level: str
    public_id: str
    title: str


class Bar(NamedTuple):
    """One day of one product as the status page draws it (a bar, a grid cell), built
    straight from a stored row: its level, the time at each level (`LEVEL_FIELDS`
    order; empty on a stored day of `/`, whose uptime comes from `PageDays.totals`), and
    where the page names them (the grid's days, a product page) its worst
    incident, how many incidents and the first few of them. A quiet day is operational
    and has no incident; an impacted day of `/` outside the grid names none either
    (`incident_count` 0): its bar says its level only."""

    date: date
    level: str
    durations: tuple[timedelta, ...]
    public_id: str
    title: str
    incident_count: int
    marks: Sequence[Mark] = ()

    @property
    def impact(self) -> tuple[tuple[str, timedelta], ...]:
        """The time at each level that day, worst first, as `DayStatus.impact` (none where
        the durations were not read: a stored day of `/`, see `PageDays.totals`)."""
        if not self.durations:
            return ()
        return tuple((level, d) for level, d in zip(LEVEL_FIELDS, self.durations, strict=True) if d)

    @property
    def impacted(self) -> bool:
        return self.level != uptime.OPERATIONAL

    @property
    def worst_incident(self) -> IncidentName | None:
        return IncidentName(public_id=self.public_id, title=self.title) if self.incident_count else None


_NO_TIME = (timedelta(0),) * len(LEVEL_FIELDS)


def quiet_bar(day: date) -> Bar:
    return Bar(
        date=day, level=uptime.OPERATIONAL, durations=_NO_TIME, public_id="", title="", incident_count=0
    )


@dataclass(frozen=True)
class PageDays:
    """What `page_days` read: each product's impacted days as bars, its level now, and
    its time at each level (`LEVEL_FIELDS` order) from each date of `totals_from` to the
    last day (for the uptime figures; the bars of `/` carry no durations)."""

    days: tuple[uptime.Day, ...]
    bars: dict[int, dict[date, Bar]]
    levels: dict[int, str]
    totals: dict[tuple[int, date], tuple[timedelta, ...]]

    def level(self, product_id: int) -> str:
        return self.levels.get(product_id, uptime.OPERATIONAL)

    def total(self, product_id: int, since: date) -> tuple[timedelta, ...]:
        return self.totals.get((product_id, since), _NO_TIME)


def page_days(
    *,
    first: date,
    last: date,
    now: datetime,
    products: Collection[int],
    marks_from: date,
    marks: int,
    totals_from: Collection[date] = (),
) -> PageDays:
    """The days `first` to `last` (display zone) of these products as `uptime.day_statuses`
    gives them from every window, and their levels now: each impacted day one `Bar`. The
    days before `marks_from` are drawn by their level alone (the bars of `/`): read from
    the stored days without incident or durations; from `marks_from` on (the grid) with
    the worst incident, the count and the first `marks` incidents. The time at each
    level is summed in SQL (`PageDays.totals`). Four queries whatever the history: the
    stored days of the range, the grid days' incidents, the windows not over yet with
    those of the days they touch (through the index on `ended_at`, never a scan of the
    history), and the sums."""
    tz = display_zone()
    days = uptime.display_days(last=last, count=(last - first).days + 1, tz=tz)
    wanted = set(products)
    bars: dict[int, dict[date, Bar]] = defaultdict(dict)
    mine: dict[date, Bar] = {}
    product = None
    for product_id, day, level in _stored_days(first, last, wanted):  # in product order
        if product_id != product:
            product, mine = product_id, bars[product_id]
        mine[day] = Bar(day, level, (), "", "", 0)
    _name_grid_days(bars, wanted, marks_from=marks_from, last=last, marks=marks)
    live = _live_bars(bars, wanted, days=days, now=now, tz=tz, marks_from=marks_from, marks=marks)
    return PageDays(
        days=days,
        bars={p: mine for p, mine in bars.items() if mine},
        levels={p: lv for p, lv in live.levels.items() if lv != uptime.OPERATIONAL},
        totals=_totals(live, wanted, since=totals_from, last=last),
    )


def _name_grid_days(
    bars: dict[int, dict[date, Bar]], products: Collection[int], *, marks_from: date, last: date, marks: int
) -> None:
    """Give the stored days from `marks_from` their worst incident, count and first marks."""
    for row in _grid_incidents(marks_from, last, products, marks=marks):
        bar = bars[row[0]].get(row[1])
        if bar is None:  # a day recounted between the two reads: the next render has it
            continue
        if row[2] == 0:  # rank 0: the day's worst incident, its first row
            bar = bar._replace(public_id=row[3], title=row[4], incident_count=row[5], marks=[])
            bars[row[0]][row[1]] = bar
        bar.marks.append(Mark(row[6], row[3], row[4]))  # type: ignore[attr-defined]


def _live_bars(
    bars: dict[int, dict[date, Bar]],
    products: Collection[int],
    *,
    days: Sequence[uptime.Day],
    now: datetime,
    tz: tzinfo,
    marks_from: date,
    marks: int,
) -> _Live:
    """Redo in `bars` the days that windows not over yet touch (worked out at `now` from
    their windows: a stored row counts a window that ends later whole, an open one is in
    no row); returns the products' levels now and what was redone."""
    names: dict[int, IncidentName] = {}
    spans: dict[int, list[Span]] = defaultdict(list)
    for row in _windows_not_over(now=now, since=days[0].start):
        if row[0] in products:
            spans[row[0]].append(_span(row))
            names[row[4]] = IncidentName(public_id=row[5], title=row[6])
    result = _Live(levels={}, redone={}, impact=[])
    for product_id, mine in spans.items():
        live = [s for s in mine if s.end is None or s.end > now]
        if not live:
            continue
        result.levels[product_id] = uptime.current_level(live, now=now)
        dates, statuses = _live_days(mine, live, days=days, now=now, tz=tz, weights=_UNWEIGHTED)
        if dates:
            result.redone[product_id] = (min(dates), max(dates))
        for day in dates:
            bars[product_id].pop(day, None)
        for day, status in statuses.items():
            if status.incidents:  # as a stored day: drawn quiet without an incident
                bars[product_id][day] = _live_bar(status, names, marks=marks if day >= marks_from else 0)
                result.impact.append((product_id, day, bars[product_id][day].durations))
    return result


@dataclass(frozen=True)
class _Live:
    levels: dict[int, str]  # the products' levels now
    redone: dict[int, tuple[date, date]]  # the days worked out from windows, first and last
    impact: list[tuple[int, date, tuple[timedelta, ...]]]  # their impacted days' durations


def _totals(
    live: _Live, products: Collection[int], *, since: Collection[date], last: date
) -> dict[tuple[int, date], tuple[timedelta, ...]]:
    """Each product's time at each level from each date of `since` to `last`: the stored
    days summed in SQL (one row a product), those redone from windows left out and their
    worked-out durations added."""
    if not since:
        return {}
    redone = Q()
    for product_id, (low, high) in live.redone.items():
        redone |= Q(product_id=product_id, day__range=(low, high))
    sums = {
        f"{level}_{n}": Sum(level, filter=Q(day__gte=first), default=timedelta(0))
        for n, first in enumerate(since)
        for level in LEVEL_FIELDS
    }
    rows = (
        ProductDay.objects.filter(
            zone=settings.DISPLAY_TIME_ZONE, day__range=(min(since), last), product_id__in=products
        )
        .exclude(redone)
        .order_by()
        .values("product_id")
        .annotate(**sums)
        .values_list("product_id", *sums)
    )
    width = len(LEVEL_FIELDS)
    totals: dict[tuple[int, date], tuple[timedelta, ...]] = {}
    for product_id, *columns in rows:
        for n, first in enumerate(since):
            totals[product_id, first] = tuple(columns[n * width : (n + 1) * width])
    for product_id, day, durations in live.impact:
        for first in since:
            if day >= first:
                had = totals.get((product_id, first), _NO_TIME)
                totals[product_id, first] = tuple(a + b for a, b in zip(had, durations, strict=True))
    return totals


def _stored_days(first: date, last: date, products: Collection[int]) -> Iterable[Sequence[Any]]:
    """One row per impacted day of the range: product, day, level, by product then day;
    one table, no join, no durations (`_totals` sums them)."""
    rows = ProductDay.objects.filter(
        zone=settings.DISPLAY_TIME_ZONE, day__range=(first, last), product_id__in=products
    ).order_by("product_id", "day")
    return rows.values_list("product_id", "day", "level")


def _grid_incidents(
    first: date, last: date, products: Collection[int], *, marks: int
) -> Iterable[Sequence[Any]]:
    """The first `marks` incidents of each impacted day from `first` to `last` (the grid's
    few days), worst first, with the day's count of incidents on each row."""
    count = (
        ProductDayIncident.objects.filter(product_day=OuterRef("product_day"))
        .order_by()
        .values("product_day")
        .annotate(n=Count("id"))
        .values("n")
    )
    rows = ProductDayIncident.objects.filter(
        rank__lt=marks,
        product_day__zone=settings.DISPLAY_TIME_ZONE,
        product_day__day__range=(first, last),
        product_day__product_id__in=products,
    ).order_by("product_day__product_id", "product_day__day", "rank")
    return rows.annotate(n=Subquery(count)).values_list(
        "product_day__product_id",
        "product_day__day",
        "rank",
        "incident__public_id",
        "incident__title",
        "n",
        "level",
    )


def _live_bar(status: uptime.DayStatus, names: dict[int, IncidentName], *, marks: int) -> Bar:
    impact = dict(status.impact)
    worst = names[status.incidents[0].incident_id]
    return Bar(
        date=status.day.date,
        level=status.level,
        durations=tuple(impact.get(level, timedelta(0)) for level in LEVEL_FIELDS),
        public_id=worst.public_id,
        title=worst.title,
        incident_count=len(status.incidents),
        marks=tuple(
            Mark(i.level, names[i.incident_id].public_id, names[i.incident_id].title)
            for i in status.incidents[:marks]
        ),
    )
