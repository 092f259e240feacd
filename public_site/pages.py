"""Reads that build the public pages: the status page and one incident (history.py: the rest).

Each page is built in a fixed number of queries whatever the number of products and
incidents: the windows of a date range come in one query and are grouped in Python,
timelines are prefetched. Visibility is decided here and only here for these pages:
public incidents (`incidents_public`), public products, published reports, public
action items. `internal_notes`, draft reports and staff-only products never leave this
module.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Prefetch

from core.timezones import display_zone
from incidents import daily, intervals, uptime
from incidents.models import (
    ImpactWindow,
    Incident,
    IncidentReport,
    IncidentUpdate,
    Location,
    Product,
    ProductGroup,
)
from incidents.selectors import (
    INDICATOR_LEVEL,
    LEVEL_IMPACT,
    PRODUCT_STATUS_LABELS,
    IncidentDurations,
    PageStatus,
    incident_durations,
    incident_get_for_user,
    incident_impact_now,
    incident_updates,
    incident_windows_public,
    incidents_public,
    products_public,
    status_summary,
    window_interval,
    windows_counted_between,
)
from postmortems.follow import Commitment, commitments_for_report

UPTIME_BAR_DAYS = 90
# A phone draws only the last 30 bars (status.css), and the figure beside them then
# counts those 30 days: the figure always matches the bars a visitor sees.
UPTIME_BAR_DAYS_NARROW = 30
# Marks drawn in one day of the grid; the rest are "+N" (the product page lists them).
GRID_MARKS = 3
PRODUCT_UPTIME_PERIODS = (30, 90, 365)
HISTORY_PRODUCT_PAGE_SIZE = 20
FEED_SIZE = 50


def uptime_weights() -> uptime.Weights:
    return uptime.Weights.of(
        major=settings.UPTIME_WEIGHT_MAJOR,
        partial=settings.UPTIME_WEIGHT_PARTIAL,
        degraded=settings.UPTIME_WEIGHT_DEGRADED,
    )


def level_label(level: str) -> str:
    # Rendered in the language active now (the page cache renders each language apart).
    return str(PRODUCT_STATUS_LABELS.get(level, level))


# --- Shared pieces ------------------------------------------------------------------------


def windows_between(
    *, since: datetime, now: datetime, products: Iterable[Product] | None = None
) -> list[ImpactWindow]:
    """One query: counted windows (`incidents.selectors.windows_counted`: no draft's) on
    public products that overlap [since, now].

    A window on a public product belongs to an incident in `incidents_public()` exactly
    when it counts, so the cheap join on the incident is the same rule. Windows
    scheduled to start after `now` (maintenance) have not happened.
    """
    queryset = (
        windows_counted_between(since=since, until=now)
        .filter(product__is_public=True)
        # Fetched by id, not joined: a join hashes the whole incident table.
        .prefetch_related(Prefetch("incident", queryset=Incident.objects.only("id", "public_id", "title")))
        .only("id", "product_id", "location_id", "level", "started_at", "ended_at", "incident_id")
        .order_by("started_at", "id")
    )
    if products is not None:
        queryset = queryset.filter(product__in=[p.pk for p in products])
    return list(queryset)


def window_span(window: ImpactWindow) -> uptime.Span:
    return uptime.Span(
        level=window.level, start=window.started_at, end=window.ended_at, incident_id=window.incident_id
    )


IncidentRef = daily.IncidentName  # what a day names of an incident: its public id and title


def day_bars(statuses: Sequence[uptime.DayStatus], refs: dict[int, IncidentRef]) -> tuple[daily.Bar, ...]:
    """A product page's bars from its day statuses, as the status page reads them."""
    out = []
    for s in statuses:
        named = [i for i in s.incidents if i.incident_id in refs]
        if not named:
            out.append(daily.quiet_bar(s.day.date))
            continue
        impact = dict(s.impact)
        worst = refs[named[0].incident_id]
        durations = tuple(impact.get(level, timedelta(0)) for level in daily.LEVEL_FIELDS)
        out.append(daily.Bar(s.day.date, s.level, durations, worst.public_id, worst.title, len(named)))
    return tuple(out)


def incident_refs(windows: Iterable[ImpactWindow]) -> dict[int, IncidentRef]:
    return {
        w.incident_id: IncidentRef(public_id=w.incident.public_id, title=w.incident.title) for w in windows
    }


def today_local(now: datetime) -> date:
    return uptime.local_date(now, display_zone())


@dataclass(frozen=True)
class AffectedProduct:
    """One product an incident touches, with its own locations: empty when one of its
    windows names none (all locations), so products never share each other's places."""

    product: Product
    locations: tuple[Location, ...]


def affected_products(windows: Iterable[ImpactWindow]) -> tuple[AffectedProduct, ...]:
    products: dict[int, Product] = {}
    everywhere: set[int] = set()
    located: dict[int, dict[int, Location]] = defaultdict(dict)
    for w in windows:
        products.setdefault(w.product_id, w.product)
        if w.location is None:
            everywhere.add(w.product_id)
        else:
            located[w.product_id].setdefault(w.location.pk, w.location)
    return tuple(
        AffectedProduct(
            product=p,
            locations=()
            if p.pk in everywhere
            else tuple(sorted(located[p.pk].values(), key=lambda loc: loc.name)),
        )
        for p in sorted(products.values(), key=lambda p: (p.position, p.name))
    )


@dataclass(frozen=True)
class Headline:
    """An incident's headline impact: the worst it reached, as a product level, so the
    badge speaks the windows' words (never "Major impact", Statuspage's word, beside
    windows that are all partial outage). Its recorded impact (the worst, or staff's
    correction upwards) and its windows' levels both count, so the badge is never milder
    than a window shown beside it."""

    level: str

    @classmethod
    def of(cls, incident: Incident, windows: Iterable[ImpactWindow]) -> Headline:
        recorded = INDICATOR_LEVEL.get(incident.impact, uptime.OPERATIONAL)
        return cls(level=uptime.worst([recorded, *(w.level for w in windows)]))

    @property
    def impact(self) -> str:
        # The badge and card colours, keyed by impact.
        return LEVEL_IMPACT[self.level]

    @property
    def label(self) -> str:
        return level_label(self.level)

    @property
    def is_operational(self) -> bool:
        return self.level == uptime.OPERATIONAL


def impact_periods(windows: Iterable[ImpactWindow], *, now: datetime) -> int:
    """How many separate stretches of time the windows cover, whatever their product or
    place: a level change closes one window and opens the next at the same minute, and
    products hit at the same time are hit together, so either is one stretch, not two.
    The same union the total duration counts ("covered by any of them once")."""
    return len(intervals.merge([window_interval(w, now=now) for w in windows]))


# --- The status page ("/") ----------------------------------------------------------------


@dataclass(frozen=True)
class ProductRow:
    product: Product
    status: str
    days: tuple[daily.Bar, ...]  # the uptime bars, oldest first
    grid: tuple[daily.Bar, ...]  # the last STATUS_GRID_DAYS days, oldest first, with their marks
    # Before `uptime`, whose name would hide the module's in the annotations below it.
    uptime_narrow: uptime.Uptime  # over the UPTIME_BAR_DAYS_NARROW days a phone shows
    uptime: uptime.Uptime

    @property
    def status_label(self) -> str:
        return level_label(self.status)


@dataclass(frozen=True)
class ProductBlock:
    group: ProductGroup | None
    rows: tuple[ProductRow, ...]


@dataclass(frozen=True)
class OpenIncident:
    incident: Incident
    latest_update: IncidentUpdate | None
    affected: tuple[AffectedProduct, ...]
    headline: Headline

    @property
    def products(self) -> tuple[Product, ...]:
        return tuple(a.product for a in self.affected)


@dataclass(frozen=True)
class StatusPage:
    now: datetime
    banner: PageStatus
    blocks: tuple[ProductBlock, ...]
    grid_days: tuple[uptime.Day, ...]
    bar_days: int
    incidents: tuple[OpenIncident, ...]
    maintenance_active: tuple[OpenIncident, ...]
    maintenance_upcoming: tuple[OpenIncident, ...]

    @property
    def banner_level(self) -> str:
        return self.banner.level

    @property
    def rows(self) -> list[ProductRow]:
        return [row for block in self.blocks for row in block.rows]


def open_incident(incident: Incident) -> OpenIncident:
    updates = list(incident.updates.all())  # prefetched, newest first
    windows = list(incident.windows.all())  # prefetched, public products only
    return OpenIncident(
        incident=incident,
        latest_update=updates[0] if updates else None,
        affected=affected_products(windows),
        headline=Headline.of(incident, windows),
    )


def timeline_prefetches() -> list[Prefetch]:
    return [
        Prefetch("updates", queryset=IncidentUpdate.objects.order_by("-display_at", "-id")),
        Prefetch(
            "windows",
            queryset=ImpactWindow.objects.filter(product__is_public=True)
            .select_related("product", "location")
            .order_by("started_at", "id"),
        ),
    ]


def totals_uptime(
    days: Sequence[uptime.Day], totals: Sequence[timedelta], now: datetime, weights: uptime.Weights
) -> uptime.Uptime:
    """The uptime over consecutive days from their time at each level (`LEVEL_FIELDS`
    order; the stored days count each minute once, at its worst level)."""
    return uptime.uptime_of_durations(
        dict(zip(daily.LEVEL_FIELDS, totals, strict=True)),
        start=days[0].start,
        end=min(days[-1].end, now),
        weights=weights,
    )


def _blocks(rows: list[ProductRow]) -> tuple[ProductBlock, ...]:
    # Grouped in Python: the database's NULL ordering differs (SQLite first, PostgreSQL
    # last), and ungrouped products should come after the groups on both.
    groups: dict[int, list[ProductRow]] = defaultdict(list)
    group_objects: dict[int, ProductGroup] = {}
    ungrouped: list[ProductRow] = []
    for row in rows:
        group = row.product.group
        if group is None:
            ungrouped.append(row)
        else:
            group_objects[group.pk] = group
            groups[group.pk].append(row)
    ordered = sorted(group_objects.values(), key=lambda g: (g.position, g.name))
    blocks = [ProductBlock(group=g, rows=tuple(groups[g.pk])) for g in ordered]
    if ungrouped:
        blocks.append(ProductBlock(group=None, rows=tuple(ungrouped)))
    return tuple(blocks)


def status_page(*, now: datetime) -> StatusPage:
    """Everything `/` shows, in a fixed number of queries whatever the history: products,
    their days (`incidents.daily.page_days`: the stored days of the range as bars, the
    windows not over yet), open incidents and their timelines."""
    weights, grid_count = uptime_weights(), max(1, settings.STATUS_GRID_DAYS)
    day_count = max(UPTIME_BAR_DAYS, grid_count)
    last = today_local(now)
    products = list(products_public())
    wide, narrow = (last - timedelta(days=n - 1) for n in (UPTIME_BAR_DAYS, UPTIME_BAR_DAYS_NARROW))
    summary = daily.page_days(
        first=last - timedelta(days=day_count - 1),
        last=last,
        now=now,
        products=[p.pk for p in products],
        marks_from=last - timedelta(days=grid_count - 1),
        marks=GRID_MARKS,
        totals_from=(wide, narrow),
    )
    days = summary.days
    quiet_bars = tuple(daily.quiet_bar(d.date) for d in days)
    rows = []
    quiet: ProductRow | None = None  # products without impact share the same days and figures
    for product in products:
        mine = summary.bars.get(product.pk)
        if mine is None and quiet is not None and product.pk not in summary.levels:
            rows.append(replace(quiet, product=product))
            continue
        bars = quiet_bars if mine is None else tuple(mine.get(b.date, b) for b in quiet_bars)
        rows.append(
            ProductRow(
                product=product,
                status=summary.level(product.pk),
                days=bars[-UPTIME_BAR_DAYS:],
                grid=bars[-grid_count:],
                uptime=totals_uptime(days[-UPTIME_BAR_DAYS:], summary.total(product.pk, wide), now, weights),
                uptime_narrow=totals_uptime(
                    days[-UPTIME_BAR_DAYS_NARROW:], summary.total(product.pk, narrow), now, weights
                ),
            )
        )
        if mine is None and product.pk not in summary.levels:
            quiet = rows[-1]

    open_items = [
        open_incident(i)
        # The open statuses by name, not "not closed": an IN on the status index reads the
        # few open incidents, where NOT IN would walk the whole history.
        for i in incidents_public()
        .filter(status__in=[s for s in Incident.Status.values if s not in Incident.CLOSED_STATUSES])
        .prefetch_related(*timeline_prefetches())
        .order_by("-started_at", "-id")
    ]
    incidents = tuple(o for o in open_items if not o.incident.is_maintenance)
    maintenance = [o for o in open_items if o.incident.is_maintenance]
    active = tuple(o for o in maintenance if o.incident.status != Incident.Status.SCHEDULED)
    upcoming = tuple(
        sorted(
            (o for o in maintenance if o.incident.status == Incident.Status.SCHEDULED),
            key=lambda o: o.incident.scheduled_for or o.incident.started_at,
        )
    )
    banner = status_summary(
        now=now,
        products=products,
        statuses={row.product.pk: row.status for row in rows},
        unresolved_impacts=[
            incident_impact_now(incident=o.incident, windows=o.incident.windows.all(), now=now)
            for o in incidents
        ],
    ).banner
    return StatusPage(
        now=now,
        banner=banner,
        blocks=_blocks(rows),
        grid_days=days[-grid_count:],
        bar_days=UPTIME_BAR_DAYS,
        incidents=incidents,
        maintenance_active=active,
        maintenance_upcoming=upcoming,
    )


# --- One incident ---------------------------------------------------------------------------


@dataclass(frozen=True)
class WindowRow:
    window: ImpactWindow
    duration: timedelta
    ongoing: bool

    @property
    def label(self) -> str:
        return level_label(self.window.level)


@dataclass(frozen=True)
class AffectedRow:
    affected: AffectedProduct
    duration: timedelta


@dataclass(frozen=True)
class IncidentPage:
    incident: Incident
    windows: tuple[WindowRow, ...]
    # Separate stretches of impact (`impact_periods`): what "came in N periods" counts.
    periods: int
    headline: Headline
    durations: IncidentDurations
    updates: tuple[IncidentUpdate, ...]
    report: IncidentReport | None
    # The report's public action items with their follow-through (postmortems.follow).
    commitments: tuple[Commitment, ...]
    recurrence_of: Incident | None
    recurrences: tuple[Incident, ...]
    # A staff member looking at an incident the public cannot see.
    is_preview: bool

    @property
    def products(self) -> list[Product]:
        return [pd.product for pd in self.durations.per_product]

    @property
    def affected(self) -> list[AffectedRow]:
        places = {a.product.pk: a for a in affected_products(w.window for w in self.windows)}
        return [
            AffectedRow(affected=places[pd.product.pk], duration=pd.duration)
            for pd in self.durations.per_product
            if pd.product.pk in places
        ]


def incident_page(*, public_id: str, user: Any, now: datetime) -> IncidentPage:
    """The incident page, through the one access gate. Public windows only, for everyone."""
    incident = incident_get_for_user(public_id=public_id, user=user)
    windows = incident_windows_public(incident=incident)
    updates = tuple(incident_updates(incident=incident))
    report = IncidentReport.objects.filter(incident=incident, status=IncidentReport.Status.PUBLISHED).first()
    commitments = tuple(commitments_for_report(incident=incident, report=report, now=now))
    recurrence_of = None
    if incident.recurrence_of_id is not None:
        recurrence_of = incidents_public().filter(pk=incident.recurrence_of_id).first()
    recurrences = tuple(incidents_public().filter(recurrence_of=incident).order_by("started_at", "id"))
    is_preview = (
        bool(getattr(user, "is_staff", False)) and not incidents_public().filter(pk=incident.pk).exists()
    )
    return IncidentPage(
        incident=incident,
        windows=tuple(
            WindowRow(window=w, duration=window_interval(w, now=now).duration, ongoing=w.ended_at is None)
            for w in windows
        ),
        periods=impact_periods(windows, now=now),
        headline=Headline.of(incident, windows),
        durations=incident_durations(incident=incident, windows=windows, now=now),
        updates=updates,
        report=report,
        commitments=commitments,
        recurrence_of=recurrence_of,
        recurrences=recurrences,
        is_preview=is_preview,
    )
