"""What the per-day summary is checked against: the computation from every window that the
status page did before it (`uptime.day_statuses`, `uptime.uptime`, `uptime.current_level`
over the counted windows of the range), and a snapshot of the stored rows."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Q

from core.timezones import display_zone
from incidents import daily, services, uptime
from incidents.models import ImpactWindow, Incident, Product, ProductDay
from incidents.selectors import windows_counted
from public_site.pages import totals_uptime

WEIGHTS = uptime.Weights()
DAYS = 90


@dataclass(frozen=True)
class Reference:
    statuses: dict[int, tuple[uptime.DayStatus, ...]]
    levels: dict[int, str]
    uptimes: dict[tuple[int, int], uptime.Uptime]  # (product, last n days)


def reference(*, now: datetime, last: date, count: int = DAYS) -> Reference:
    """The old status page's arithmetic, from every counted window of the range."""
    tz = display_zone()
    days = uptime.display_days(last=last, count=count, tz=tz)
    windows = windows_counted().filter(
        Q(ended_at__isnull=True) | Q(ended_at__gt=days[0].start), started_at__lte=now
    )
    spans: dict[int, list[uptime.Span]] = defaultdict(list)
    for w in windows:
        spans[w.product_id].append(
            uptime.Span(level=w.level, start=w.started_at, end=w.ended_at, incident_id=w.incident_id)
        )
    products = list(Product.objects.values_list("pk", flat=True))
    statuses, levels, uptimes = {}, {}, {}
    for pk in products:
        mine = spans.get(pk, [])
        statuses[pk] = uptime.day_statuses(mine, days=days, now=now, weights=WEIGHTS)
        levels[pk] = uptime.current_level(mine, now=now)
        for n in (count, 30):
            uptimes[pk, n] = uptime.uptime(
                mine, start=days[-n].start, end=days[-1].end, now=now, weights=WEIGHTS
            )
    return Reference(statuses=statuses, levels=levels, uptimes=uptimes)


GRID_DAYS, MARKS = 14, 3


def assert_same_as_reference(*, now: datetime, count: int = DAYS) -> None:
    """The status page's read at `now` (`daily.page_days`, one row a stored day) gives
    exactly what every window gives: each impacted day's level; on the grid's days its
    worst incident, count and first incidents worst first (the bars of `/` before them
    name none); each product's level now and its uptime over the range and its last 30
    days."""
    last = uptime.local_date(now, display_zone())
    ref = reference(now=now, last=last, count=count)
    marks_from = last - timedelta(days=GRID_DAYS - 1)
    since = {n: last - timedelta(days=n - 1) for n in (count, 30)}
    page = daily.page_days(
        first=last - timedelta(days=count - 1),
        last=last,
        now=now,
        products=list(ref.statuses),
        marks_from=marks_from,
        marks=MARKS,
        totals_from=list(since.values()),
    )
    public = dict(Incident.objects.values_list("pk", "public_id"))
    for pk, expected in ref.statuses.items():
        bars = page.bars.get(pk, {})
        assert set(bars) == {s.day.date for s in expected if s.incidents}, pk
        for status in expected:
            if not status.incidents:
                continue
            bar = bars[status.day.date]
            assert bar.level == status.level, (pk, status.day.date)
            if status.day.date < marks_from and not bar.durations:
                assert (bar.public_id, bar.incident_count, bar.marks) == ("", 0, ()), (pk, status.day.date)
                continue
            ids = [public[i.incident_id] for i in status.incidents]
            assert (bar.public_id, bar.incident_count) == (ids[0], len(ids)), (pk, status.day.date)
            assert bar.impact in ((), status.impact), (pk, status.day.date)
            marks = [m.public_id for m in bar.marks]
            assert marks == (ids[:MARKS] if status.day.date >= marks_from else []), (pk, status.day.date)
        assert page.level(pk) == ref.levels[pk], pk
        for n in (count, 30):
            got = totals_uptime(page.days[-n:], page.total(pk, since[n]), now, WEIGHTS)
            assert got == ref.uptimes[pk, n], (pk, n)


def stored() -> list[tuple[Any, ...]]:
    """Every stored day with its incidents, in a stable order (ids of rows aside)."""
    return sorted(
        (
            d.product_id,
            d.zone,
            d.day,
            d.level,
            d.major_outage,
            d.partial_outage,
            d.degraded_performance,
            d.under_maintenance,
            tuple(d.incidents.order_by("rank").values_list("incident_id", "level", "rank")),
        )
        for d in ProductDay.objects.all()
    )


def assert_fresh() -> None:
    """What the writes kept equals a recount of everything from scratch."""
    kept = stored()
    daily.rebuild(daily.Models(), tz=display_zone(), zone=settings.DISPLAY_TIME_ZONE)
    assert kept == stored()


def scheduled(product: Product, start: datetime, end: datetime) -> None:
    services.incident_open(
        title="Planned work",
        kind=Incident.Kind.MAINTENANCE,
        impact=Incident.Impact.NONE,
        scheduled_for=start,
        scheduled_until=end,
        windows=[
            services.WindowSpec(
                product=product, level=ImpactWindow.Level.UNDER_MAINTENANCE, started_at=start, ended_at=end
            )
        ],
    )
