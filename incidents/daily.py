"""Each product's days in the display zone (the status page's bars, grid, uptime and
current level), read from a maintained summary instead of every window of the range.

`ProductDay` rows (and their `ProductDayIncident`s) hold what the closed windows of
published incidents did to a product on a day, whole (as if every window had ended). `refresh` recounts the days a write
touched; it is called from `incidents.services._common.impact_changed`, the one place
every write that changes counted impact goes through. `rebuild` recounts everything
(the migration that creates the table, `manage.py rebuild_product_days`).
`product_days` reads a range: the stored rows, and the days that windows still open or
ending after now touch, worked out at that moment from the windows of those days.
Design: docs/adr/0014-per-day-summary.md.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, tzinfo
from decimal import Decimal
from itertools import groupby
from typing import Any

from django.conf import settings
from django.db.models import Min, Q, Subquery

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


# --- Reading it ----------------------------------------------------------------------------


@dataclass(frozen=True)
class IncidentName:
    public_id: str
    title: str


@dataclass(frozen=True)
class ProductDays:
    """What `product_days` read: each product's impacted days, its level now, and the
    incidents those days name."""

    days: tuple[uptime.Day, ...]
    impacted: dict[int, dict[date, uptime.DayStatus]]
    levels: dict[int, str]
    names: dict[int, IncidentName]

    def statuses(self, product_id: int) -> tuple[uptime.DayStatus, ...]:
        """Every day of the range, oldest first, operational where nothing happened."""
        mine = self.impacted.get(product_id, {})
        return tuple(
            mine.get(day.date)
            or uptime.DayStatus(day=day, level=uptime.OPERATIONAL, downtime_minutes=Decimal(0))
            for day in self.days
        )

    def level(self, product_id: int) -> str:
        return self.levels.get(product_id, uptime.OPERATIONAL)


def product_days(
    *, first: date, last: date, now: datetime, weights: uptime.Weights, products: Collection[int]
) -> ProductDays:
    """The days `first` to `last` (display zone) of these products, and their levels now,
    as `uptime.day_statuses` and `uptime.current_level` give them from every window.

    Two queries whatever the history: the stored days of the range with their incidents,
    and the windows not over yet with those of the days they touch (through the index
    on `ended_at`, never a scan of the history).
    """
    tz = display_zone()
    days = uptime.display_days(last=last, count=(last - first).days + 1, tz=tz)
    wanted = set(products)
    impacted: dict[int, dict[date, uptime.DayStatus]] = defaultdict(dict)
    names: dict[int, IncidentName] = {}
    for (product_id, day), rows in groupby(_stored_days(first, last, wanted), key=lambda row: row[:2]):
        status = _stored_status(day_of(day, tz), list(rows), weights=weights, names=names)
        impacted[product_id][day] = status
    windows = _windows_not_over(now=now, since=days[0].start)
    # Filtered on the product here, not in SQL: a product condition would tempt the
    # planner into the (product, started_at) index, a scan of each product's history.
    spans: dict[int, list[Span]] = defaultdict(list)
    for row in windows:
        if row[0] in wanted:
            spans[row[0]].append(_span(row))
            names[row[4]] = IncidentName(public_id=row[5], title=row[6])
    levels = {}
    for product_id, mine in spans.items():
        live = [s for s in mine if s.end is None or s.end > now]
        if live:
            levels[product_id] = uptime.current_level(live, now=now)
            _recount_live(impacted[product_id], mine, live, days=days, now=now, tz=tz, weights=weights)
    return ProductDays(
        days=days,
        impacted=dict(impacted),
        levels={p: lv for p, lv in levels.items() if lv != uptime.OPERATIONAL},
        names=names,
    )


def _stored_days(first: date, last: date, products: Collection[int]) -> Iterable[Sequence[Any]]:
    rows = ProductDayIncident.objects.filter(
        product_day__zone=settings.DISPLAY_TIME_ZONE,
        product_day__day__range=(first, last),
        product_day__product_id__in=products,
    ).order_by("product_day__product_id", "product_day__day", "rank")
    return rows.values_list(
        "product_day__product_id",
        "product_day__day",
        "product_day__level",
        *(f"product_day__{level}" for level in LEVEL_FIELDS),
        "incident_id",
        "level",
        "incident__public_id",
        "incident__title",
    )


def _stored_status(
    day: uptime.Day, rows: Sequence[Sequence[Any]], *, weights: uptime.Weights, names: dict[int, IncidentName]
) -> uptime.DayStatus:
    durations = rows[0][3 : 3 + len(LEVEL_FIELDS)]
    impact = tuple((level, delta) for level, delta in zip(LEVEL_FIELDS, durations, strict=True) if delta)
    incidents = []
    for row in rows:
        incident_id, level, public_id, title = row[-4:]
        incidents.append(uptime.DayIncident(incident_id=incident_id, level=level))
        names[incident_id] = IncidentName(public_id=public_id, title=title)
    return uptime.DayStatus(
        day=day,
        level=rows[0][2],
        downtime_minutes=uptime.weighted_minutes(impact, weights),
        impact=impact,
        incidents=tuple(incidents),
    )


def _windows_not_over(*, now: datetime, since: datetime) -> Iterable[Sequence[Any]]:
    """Counted windows open or ending after `now`, and with them every window of the days
    they touch (since the earliest one began, within the range): what `_recount_live`
    needs, in one query on `window_ended`."""
    counted = ImpactWindow.objects.filter(counted_window())
    not_over = Q(ended_at__isnull=True) | Q(ended_at__gt=now)
    # Every counted window's incident is public: grouping by that makes one group.
    earliest = counted.filter(not_over).order_by().values("incident__is_public").annotate(m=Min("started_at"))
    touching = Q(ended_at__gt=since) & Q(ended_at__gt=Subquery(earliest.values("m")) - _DAY_MARGIN)
    # In no order: the model's (started_at) would have the planner walk that index.
    rows = counted.filter(not_over | touching).order_by()
    return rows.values_list(*_SPAN_FIELDS, "incident__public_id", "incident__title")


def _recount_live(
    impacted: dict[date, uptime.DayStatus],
    spans: Sequence[Span],
    live: Sequence[Span],
    *,
    days: Sequence[uptime.Day],
    now: datetime,
    tz: tzinfo,
    weights: uptime.Weights,
) -> None:
    """Work out at `now` one product's days that a window not yet over touches, from the
    day it began: an open window is in no stored row, and a stored row counts a window
    that ends later whole."""
    first, last = days[0].date, min(days[-1].date, uptime.local_date(now, tz))
    start = max(first, min(uptime.local_date(s.start, tz) for s in live))
    dates = {start + timedelta(days=n) for n in range((last - start).days + 1)}
    for day in dates:
        impacted.pop(day, None)
    impacted.update(statuses_on(spans, dates, tz=tz, now=now, weights=weights))
