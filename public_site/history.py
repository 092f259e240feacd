"""Reads that build the public history: per-product history, the monthly archive, feeds.

Like the status and incident pages, each is built in a fixed number of queries, and only
public incidents on public products appear.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta, tzinfo
from typing import overload

from django.core.paginator import Page, Paginator
from django.core.validators import slug_re
from django.db.models import (
    Case,
    Count,
    Exists,
    F,
    IntegerField,
    OuterRef,
    Prefetch,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
    Window,
)
from django.db.models.functions import Coalesce, RowNumber
from django.http import Http404
from django.utils.http import urlencode
from django.utils.translation import gettext as _
from django.utils.translation import pgettext

from core.text import CONTROL_CHARS
from incidents import daily, uptime
from incidents.history_counts import history_month_counts, history_product_total
from incidents.models import (
    ImpactWindow,
    Incident,
    IncidentUpdate,
    Product,
)
from incidents.selectors import (
    LEVEL_SEVERITY,
    incident_durations,
    incidents_public,
    incidents_touching,
    products_public,
)
from postmortems.follow import Commitment, commitments_open_for_product
from public_site.locations import LocationStatus, location_statuses, locations_catalogue
from public_site.pages import (
    FEED_SIZE,
    HISTORY_PRODUCT_PAGE_SIZE,
    PRODUCT_UPTIME_PERIODS,
    UPTIME_BAR_DAYS,
    UPTIME_BAR_DAYS_NARROW,
    day_bars,
    display_zone,
    incident_refs,
    level_label,
    open_incident,
    timeline_prefetches,
    today_local,
    uptime_weights,
    window_span,
    windows_between,
)

# --- Product history ------------------------------------------------------------------------


@dataclass(frozen=True)
class PastIncident:
    incident: Incident
    duration: timedelta
    ongoing: bool
    level: str
    products: tuple[Product, ...] = ()
    anchor: str = ""  # on the monthly history, the first of its day: the day's link target

    @property
    def label(self) -> str:
        if self.incident.is_maintenance:
            return maintenance_label(self.incident)
        return level_label(self.level)


def maintenance_label(incident: Incident) -> str:
    """A maintenance says where it stands, not the level its windows will have: one that
    has not begun is "Scheduled", not "Under maintenance"."""
    if incident.status == Incident.Status.SCHEDULED:
        return str(pgettext("maintenance that has not begun", "Scheduled"))
    if incident.is_closed:
        return str(pgettext("maintenance that has ended", "Completed"))
    return level_label(uptime.UNDER_MAINTENANCE)


@dataclass(frozen=True)
class UptimePeriod:
    days: int
    uptime: uptime.Uptime


@dataclass(frozen=True)
class ProductPage:
    product: Product
    status: str
    days: tuple[daily.Bar, ...]
    uptime_periods: tuple[UptimePeriod, ...]
    incidents: tuple[PastIncident, ...]
    page: Page
    locations: tuple[LocationStatus, ...] = ()
    # Open public action items of its published reports, overdue ones included.
    commitments: tuple[Commitment, ...] = ()

    @property
    def uptime_narrow(self) -> uptime.Uptime:
        # The figure beside the 30 bars a phone shows (pages.UPTIME_BAR_DAYS_NARROW).
        return next(p.uptime for p in self.uptime_periods if p.days == UPTIME_BAR_DAYS_NARROW)

    @property
    def status_label(self) -> str:
        return level_label(self.status)


def _past_incident(incident: Incident, *, now: datetime) -> PastIncident:
    windows = list(incident.windows.all())  # prefetched and filtered by the caller
    durations = incident_durations(incident=incident, windows=windows, now=now)
    products: dict[int, Product] = {}
    for w in windows:
        products.setdefault(w.product_id, w.product)
    duration, ongoing = durations.total, durations.ongoing if windows else incident.resolved_at is None
    begins, ends = incident.scheduled_for, incident.scheduled_until
    if incident.status == Incident.Status.SCHEDULED and begins and ends:
        # Not begun: its planned length, not "0 min so far".
        duration, ongoing = ends - begins, False
    return PastIncident(
        incident=incident,
        duration=duration,
        ongoing=ongoing,
        # A maintenance always shows its clock, labelled by where it stands (`label`).
        level=uptime.UNDER_MAINTENANCE if incident.is_maintenance else uptime.worst(w.level for w in windows),
        products=tuple(sorted(products.values(), key=lambda p: (p.position, p.name))),
    )


class _Counted:
    """A query set whose length is known without counting it (for Paginator)."""

    ordered = True

    def __init__(self, queryset: QuerySet[Incident], total: int) -> None:
        self.queryset, self.total = queryset, total

    def count(self) -> int:
        return self.total

    def __len__(self) -> int:
        return self.total

    def __iter__(self) -> Iterator[Incident]:
        return iter(self.queryset)

    @overload
    def __getitem__(self, index: int) -> Incident: ...
    @overload
    def __getitem__(self, index: slice) -> list[Incident]: ...
    def __getitem__(self, index: int | slice) -> Incident | list[Incident]:
        return self.queryset[index] if isinstance(index, int) else list(self.queryset[index])


def product_page(*, slug: str, now: datetime, page_number: str | int | None = 1) -> ProductPage:
    """A product's status (overall and per location), uptime for 30/90/365 days and its
    incidents, newest first."""
    try:
        product = products_public().get(slug=slug)
    except Product.DoesNotExist:
        raise Http404("No such product.") from None
    tz = display_zone()
    weights = uptime_weights()
    longest = max(PRODUCT_UPTIME_PERIODS)
    days = uptime.display_days(last=today_local(now), count=longest, tz=tz)
    windows = windows_between(since=days[0].start, now=now, products=[product])
    spans = [window_span(w) for w in windows]
    bar_days = days[-UPTIME_BAR_DAYS:]
    statuses = uptime.day_statuses(spans, days=bar_days, now=now, weights=weights)
    periods = tuple(
        UptimePeriod(
            days=n,
            uptime=uptime.uptime(spans, start=days[-n].start, end=days[-1].end, now=now, weights=weights),
        )
        for n in PRODUCT_UPTIME_PERIODS
    )

    history = (
        incidents_touching(incidents_public(), product=product)
        .prefetch_related(
            Prefetch(
                "windows",
                queryset=ImpactWindow.objects.filter(product=product)
                .select_related("product", "location")
                .order_by("started_at", "id"),
            )
        )
        .order_by("-started_at", "-id")
    )
    # Counted from the maintained month counts: Paginator would count the whole history.
    page: Page[Incident] = Paginator(
        _Counted(history, history_product_total(product)), HISTORY_PRODUCT_PAGE_SIZE
    ).get_page(page_number)
    return ProductPage(
        product=product,
        status=uptime.current_level(spans, now=now),
        days=day_bars(statuses, incident_refs(windows)),
        uptime_periods=periods,
        incidents=tuple(_past_incident(i, now=now) for i in page.object_list),
        page=page,
        locations=location_statuses(windows=windows, locations=locations_catalogue(), now=now),
        commitments=tuple(commitments_open_for_product(product=product, now=now)),
    )


# --- Recent incidents on the status page -----------------------------------------------------


# At most this many incidents under each day of "Recent incidents": the worst first (their
# level on public products), then the newest; the rest are counted and linked to the day
# in the monthly history (docs/adr/0026-bounded-recent-incidents.md).
RECENT_PER_DAY = 3


@dataclass(frozen=True)
class RecentDay:
    """One entry of the "Recent incidents" list, newest first: a day (display zone) with
    its incidents, or a run of quiet days from `first` to `date`, said in one line ("No
    incidents reported, 3-13 Nov") instead of a heading and a line per day."""

    first: date  # its oldest day: `date` itself unless this is a run of quiet days
    date: date  # its newest day
    incidents: tuple[PastIncident, ...]  # those shown, newest first
    total: int = 0  # the day's incidents, shown or not

    @property
    def is_run(self) -> bool:
        return self.first != self.date

    @property
    def more(self) -> int:
        """How many of the day's incidents are not listed here."""
        return max(0, self.total - len(self.incidents))

    @property
    def history_anchor(self) -> str:
        """The id of the day's first incident on the monthly history page."""
        return day_anchor(self.date)


def day_anchor(day: date) -> str:
    return f"day-{day:%Y-%m-%d}"


def _severity() -> Coalesce:
    """An incident's worst level on public products as a number (LEVEL_SEVERITY): one
    probe of its windows through their incident index."""
    rank = Case(
        *(When(level=level, then=Value(n)) for level, n in LEVEL_SEVERITY.items()),
        default=Value(0),
        output_field=IntegerField(),
    )
    worst = (
        ImpactWindow.objects.filter(incident=OuterRef("pk"), product__is_public=True)
        .annotate(rank=rank)
        .order_by("-rank")
        .values("rank")[:1]
    )
    return Coalesce(Subquery(worst), Value(0), output_field=IntegerField())


def recent_incidents(*, now: datetime, days: int, per_day: int = RECENT_PER_DAY) -> tuple[RecentDay, ...]:
    """The last `days` days, today first, each with at most `per_day` of the public
    incidents (and maintenance) that started that day, the worst then the newest, listed
    newest first, and the day's count; consecutive quiet days make one entry. Two queries
    whatever the history: one reads the days' incidents on the started_at index, numbers
    them per day in SQL (a window function) and returns only those shown with the day's
    count; the other their windows."""
    tz = display_zone()
    count = max(1, days)
    span = uptime.display_days(last=today_local(now), count=count, tz=tz)
    # The day an incident started, as the index of its local day in `span` (the days'
    # bounds come from the zone, so this holds across a change of UTC offset).
    day_of = Case(
        *(When(started_at__gte=d.start, then=Value(i)) for i, d in reversed(list(enumerate(span)))),
        default=Value(0),
        output_field=IntegerField(),
    )
    ranked = (
        incidents_public()
        # Upcoming maintenance has not happened yet: it is listed under "Scheduled".
        .filter(started_at__gte=span[0].start, started_at__lte=now)
        .annotate(day=day_of, severity=_severity())
        .annotate(
            place=Window(
                RowNumber(),
                partition_by=[F("day")],
                order_by=[F("severity").desc(), F("started_at").desc(), F("id").desc()],
            ),
            day_total=Window(Count("id"), partition_by=[F("day")]),
        )
        .filter(place__lte=max(1, per_day))
        .prefetch_related(
            Prefetch(
                "windows",
                queryset=ImpactWindow.objects.filter(product__is_public=True)
                .select_related("product", "location")
                .order_by("started_at", "id"),
            )
        )
        .order_by("-started_at", "-id")
    )
    by_day: dict[date, list[PastIncident]] = defaultdict(list)
    totals: dict[date, int] = {}
    for incident in ranked:
        day = span[incident.day].date
        by_day[day].append(_past_incident(incident, now=now))
        totals[day] = incident.day_total
    entries: list[RecentDay] = []
    for d in reversed(span):
        found = tuple(by_day.get(d.date, ()))
        if not found and entries and not entries[-1].incidents:
            entries[-1] = replace(entries[-1], first=d.date)  # one day older, still quiet
        else:
            entries.append(RecentDay(date=d.date, incidents=found, first=d.date, total=totals.get(d.date, 0)))
    return tuple(entries)


# --- History archive by month ---------------------------------------------------------------


@dataclass(frozen=True)
class MonthCount:
    month: date  # first day of the month
    count: int


@dataclass(frozen=True)
class HistoryYear:
    year: int
    months: tuple[MonthCount, ...]


@dataclass(frozen=True)
class HistoryFilter:
    """The history's product filter and text search (`history_filter` parses them)."""

    product: Product | None = None
    text: str = ""

    @property
    def active(self) -> bool:
        return self.product is not None or bool(self.text)

    @property
    def query_suffix(self) -> str:
        """What a month link adds to keep this filter: '&product=gmail&q=spam', or ''."""
        pairs = [("product", self.product.slug)] if self.product is not None else []
        pairs += [("q", self.text)] if self.text else []
        return "&" + urlencode(pairs) if pairs else ""


class HistoryFilterError(ValueError):
    """A filter value the page refuses, with the message it shows."""


# Longer searches are refused: a title or a sentence is shorter, and a bound keeps the
# scan cheap. The scan itself covers one month of public incidents (`history_page`).
SEARCH_MAX_LENGTH = 100


def history_filter(*, product: str | None, text: str | None) -> HistoryFilter:
    """The filter from the form's raw values. Raises HistoryFilterError with a message
    for a search too long or with control characters, or a product not on the page."""
    words = " ".join((text or "").split())  # runs of spaces and line breaks are one space
    if len(words) > SEARCH_MAX_LENGTH:
        raise HistoryFilterError(
            _("Search for at most %(max)d characters (this has %(length)d).")
            % {"max": SEARCH_MAX_LENGTH, "length": len(words)}
        )
    if CONTROL_CHARS.search(words):
        raise HistoryFilterError(_("Control characters are not allowed in a search."))
    chosen = None
    if product:
        chosen = products_public().filter(slug=product).first() if slug_re.fullmatch(product) else None
        if chosen is None:
            raise HistoryFilterError(
                _("There is no product “%(product)s” on this page. Choose one from the list.")
                % {"product": product[:100]}
            )
    return HistoryFilter(product=chosen, text=words)


@dataclass(frozen=True)
class HistoryPage:
    month: date
    previous_month: date
    next_month: date | None
    incidents: tuple[PastIncident, ...]
    years: tuple[HistoryYear, ...]
    products: tuple[Product, ...] = ()  # what the filter offers
    filter: HistoryFilter = HistoryFilter()
    month_total: int = 0  # the month's incidents before the filter (counted only under one)


def month_start(day: date) -> date:
    return day.replace(day=1)


def add_months(month: date, n: int) -> date:
    index = month.year * 12 + (month.month - 1) + n
    return date(index // 12, index % 12 + 1, 1)


def parse_month(value: str | None, *, now: datetime) -> date:
    """'2009-09' -> date(2009, 9, 1); empty -> the current month in the display zone."""
    if not value:
        return month_start(today_local(now))
    try:
        year_text, month_text = value.split("-")
        if len(year_text) != 4 or len(month_text) != 2:
            raise ValueError(value)
        month = date(int(year_text), int(month_text), 1)
    except ValueError:
        raise Http404("The month must look like 2009-09.") from None
    if month.year < 1970 or month > add_months(month_start(today_local(now)), 1200):
        raise Http404("No such month.")
    return month


def _filtered(incidents: QuerySet[Incident], flt: HistoryFilter) -> QuerySet[Incident]:
    if flt.product is not None:
        incidents = incidents_touching(incidents, product=flt.product)
    if flt.text:
        # A plain case-insensitive scan, bounded by the month (its started_at index) and
        # the search's length: titles, summaries and the text of every public update.
        said = IncidentUpdate.objects.filter(incident=OuterRef("pk"), body__icontains=flt.text)
        incidents = incidents.filter(
            Q(title__icontains=flt.text) | Q(summary__icontains=flt.text) | Q(Exists(said))
        )
    return incidents


def history_page(*, month: date, now: datetime, flt: HistoryFilter | None = None) -> HistoryPage:
    """Public incidents that started in `month` (display zone) and pass the filter, and
    the months that have any."""
    flt = flt or HistoryFilter()
    tz = display_zone()
    start = uptime.local_midnight(month, tz)
    end = uptime.local_midnight(add_months(month, 1), tz)
    in_month = incidents_public().filter(started_at__gte=start, started_at__lt=end)
    incidents = (
        _filtered(in_month, flt)
        .prefetch_related(
            Prefetch(
                "windows",
                queryset=ImpactWindow.objects.filter(product__is_public=True)
                .select_related("product", "location")
                .order_by("started_at", "id"),
            )
        )
        .order_by("-started_at", "-id")
    )
    current = month_start(today_local(now))
    return HistoryPage(
        month=month,
        previous_month=add_months(month, -1),
        next_month=add_months(month, 1) if month < current else None,
        incidents=_anchored(tuple(_past_incident(i, now=now) for i in incidents), tz=tz),
        years=_history_years(),
        products=tuple(products_public()),
        filter=flt,
        month_total=in_month.count() if flt.active else 0,
    )


def _anchored(items: tuple[PastIncident, ...], *, tz: tzinfo) -> tuple[PastIncident, ...]:
    """The first incident listed for each day gets the day's anchor, where "N more
    incidents" on the status page leads (`RecentDay.history_anchor`)."""
    seen: set[date] = set()
    out = []
    for item in items:
        day = uptime.local_date(item.incident.started_at, tz)
        out.append(item if day in seen else replace(item, anchor=day_anchor(day)))
        seen.add(day)
    return tuple(out)


def _history_years() -> tuple[HistoryYear, ...]:
    """Every month with public incidents, newest first: the maintained counts, one row a
    month (incidents.history_counts), not a count of the history."""
    by_year: dict[int, list[MonthCount]] = defaultdict(list)
    for month, count in history_month_counts():
        by_year[month.year].append(MonthCount(month=month, count=count))
    return tuple(HistoryYear(year=y, months=tuple(by_year[y])) for y in sorted(by_year, reverse=True))


# --- Feeds ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class FeedEntry:
    incident: Incident
    latest_update: IncidentUpdate | None
    products: tuple[Product, ...]

    @property
    def published_at(self) -> datetime:
        """When readers could first know of it: an incident's start, but a maintenance
        planned ahead is announced before it starts. Never after the row was written, so
        never in the future (a feed date in the future breaks readers' ordering)."""
        return min(self.incident.started_at, self.incident.created_at)

    @property
    def updated_at(self) -> datetime:
        """Its newest timeline entry, at the time shown or the time posted, whichever is
        earlier: a maintenance's opening entry is shown at its planned start but was
        posted when it was announced. A corrected entry counts at its correction, so feed
        readers fetch the new words. Never before `published_at`, never in the future."""
        updates = self.incident.updates.all()  # prefetched
        posted = [min(u.display_at, u.created_at) for u in updates]
        edited = [u.edited_at for u in updates if u.edited_at is not None]
        return max([self.published_at, *posted, *edited])


def feed_entries(*, limit: int = FEED_SIZE, product: Product | None = None) -> list[FeedEntry]:
    """The newest public incidents (of one product, if given) with their latest update:
    one entry each. Three queries."""
    queryset = incidents_public()
    if product is not None:
        queryset = incidents_touching(queryset, product=product)
    incidents: QuerySet[Incident] = queryset.prefetch_related(*timeline_prefetches()).order_by(
        "-started_at", "-id"
    )[:limit]
    entries = []
    for incident in incidents:
        item = open_incident(incident)
        entries.append(FeedEntry(incident=incident, latest_update=item.latest_update, products=item.products))
    return entries
