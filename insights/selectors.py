"""Reads behind the insights pages and the public uptime report.

Each builder runs a fixed number of queries whatever the amount of history. The staff
page has two paths to the same figures:

- on PostgreSQL, the database does the heavy arithmetic (`insights.aggregates`): counts
  per period, the response-time ranks the page shows, every product's downtime per
  period and level, action items per period; only the newest incidents listed are read
  as rows. Nothing is precomputed, so nothing can be stale.
- on SQLite (the embedded default), and for the incidents CSV that lists every incident,
  the incidents of the range (their first/last update and update count aggregated by the
  database) and the range's windows are read, grouped in Python and handed to the pure
  maths in `insights.metrics`, which uses `incidents.uptime` for every minute of
  downtime: the same rules as the status page.

`tests/insights/test_fast_path.py` holds the two paths to the same figures, to the digit.
Action items and credit notices are aggregated by the database on both.

Staff insights see every incident (staff-only ones too); the public report sees only
public incidents on public products, exactly like the status page.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db import connection
from django.db.models import Count, Exists, Max, Min, OuterRef, Q, Subquery, Sum
from django.http import Http404

from core.timezones import display_zone
from credits.models import CreditNotice, CustomerEntitlement, NoticeState
from incidents import uptime
from incidents.models import ActionItem, ImpactWindow, Incident, Product, ProductGroup
from incidents.selectors import products_public
from insights import aggregates, metrics

ALL = "all"
MONTH_COUNT = 12
QUARTER_COUNT = 8
REPORT_MONTHS = 12
REPORT_DAYS = 90  # the status page's bars (public_site.pages.UPTIME_BAR_DAYS)
TABLE_ROWS = 50  # incidents listed on the page; the CSV has them all

_CENTS = Decimal(1).scaleb(-CreditNotice._meta.get_field("credit_amount").decimal_places)
_CLOSED_ITEMS = (ActionItem.Status.DONE, ActionItem.Status.WONT_DO)
_PENDING_NOTICES = (NoticeState.COMPUTED, NoticeState.APPROVED, NoticeState.QUEUED, NoticeState.FAILED)


def display_weights() -> uptime.Weights:
    """The status page's weights (public_site.pages.uptime_weights reads the same settings)."""
    return uptime.Weights.of(
        major=settings.UPTIME_WEIGHT_MAJOR,
        partial=settings.UPTIME_WEIGHT_PARTIAL,
        degraded=getattr(settings, "UPTIME_WEIGHT_DEGRADED", 0),
    )


def weighting_rule(weights: uptime.Weights) -> str:
    """The rule in words, with the configured weights."""
    parts = [f"major outage minutes x {weights.major.normalize()}"]
    parts.append(f"partial outage minutes x {weights.partial.normalize()}")
    if weights.degraded:
        parts.append(f"degraded performance minutes x {weights.degraded.normalize()}")
    ignored = "maintenance does" if weights.degraded else "degraded performance and maintenance do"
    return (
        f"Downtime = {' + '.join(parts)}; {ignored} not count. A minute covered by several "
        "windows counts once, at its worst level. Uptime = (minutes in the period - downtime) / "
        "minutes in the period, rounded down to 0.01 %."
    )


# --- Scope: everything, a group, or one product -------------------------------------------------


@dataclass(frozen=True)
class Scope:
    key: str
    label: str
    products: tuple[Product, ...]
    is_all: bool = False


@dataclass(frozen=True)
class ScopeChoices:
    groups: tuple[ProductGroup, ...]
    products: tuple[Product, ...]

    def options(self) -> list[tuple[str, str]]:
        out = [(ALL, "All products")]
        out += [(f"group:{g.pk}", f"Group: {g.name}") for g in self.groups]
        out += [
            (f"product:{p.slug}", p.name if p.is_public else f"{p.name} (staff only)") for p in self.products
        ]
        return out

    def resolve(self, key: str) -> Scope | None:
        if key == ALL:
            return Scope(key=ALL, label="All products", products=self.products, is_all=True)
        kind, _, value = key.partition(":")
        if kind == "product":
            found = [p for p in self.products if p.slug == value]
            return Scope(key=key, label=found[0].name, products=tuple(found)) if found else None
        if kind == "group":
            group = next((g for g in self.groups if str(g.pk) == value), None)
            if group is None:
                return None
            members = tuple(p for p in self.products if p.group_id == group.pk)
            return Scope(key=key, label=group.name, products=members)
        return None


def scope_choices() -> ScopeChoices:
    """Two queries: groups and every product (staff see staff-only products too)."""
    return ScopeChoices(
        groups=tuple(ProductGroup.objects.order_by("position", "name")),
        products=tuple(
            Product.objects.select_related("group").order_by("group__position", "position", "name")
        ),
    )


# --- Reading the range ----------------------------------------------------------------------------


def _window_filter(scope: Scope) -> Q:
    return Q() if scope.is_all else Q(product__in=[p.pk for p in scope.products])


def _incident_facts(
    *,
    scope: Scope,
    start: datetime,
    end: datetime,
    spans: dict[int, list[uptime.Span]] | None = None,
    newest: int | None = None,
) -> list[metrics.IncidentFacts]:
    """One query: incidents that started in [start, end) and touch the scope, newest first.
    `newest`: only that many incidents (no maintenance), and their spans read with
    `_windows_of` (one more query) instead of taken from `spans`."""
    queryset = Incident.objects.filter(started_at__gte=start, started_at__lt=end)
    if not scope.is_all:
        queryset = queryset.filter(
            Exists(ImpactWindow.objects.filter(_window_filter(scope), incident=OuterRef("pk")))
        )
    if newest is not None:
        # The newest first, then their updates: aggregating the updates of every incident
        # of the range to keep fifty costs as much as the rest of the page.
        ids = queryset.exclude(kind=Incident.Kind.MAINTENANCE).order_by("-started_at", "-id").values("pk")
        queryset = Incident.objects.filter(pk__in=Subquery(ids[:newest]))
    rows = list(
        queryset.annotate(
            first_update=Min("updates__display_at"),
            last_update=Max("updates__display_at"),
            update_count=Count("updates"),
        )
        .values_list(
            "id",
            "public_id",
            "title",
            "kind",
            "is_public",
            "started_at",
            "created_at",
            "detected_at",
            "resolved_at",
            "first_update",
            "last_update",
            "update_count",
        )
        .order_by("-started_at", "-id")
    )
    if newest is not None:
        spans = _windows_of(scope=scope, incident_ids=[row[0] for row in rows])
    assert spans is not None
    return [
        metrics.IncidentFacts(
            incident_id=pk,
            public_id=public_id,
            title=title,
            is_maintenance=kind == Incident.Kind.MAINTENANCE,
            is_public=is_public,
            started_at=started,
            declared_at=created,
            detected_at=detected,
            resolved_at=resolved,
            first_update_at=first,
            last_update_at=last,
            update_count=count,
            spans=tuple(spans.get(pk, ())),
        )
        for pk, public_id, title, kind, is_public, started, created, detected, resolved, first, last, count in rows
    ]


def _windows_of(*, scope: Scope, incident_ids: Sequence[int]) -> dict[int, list[uptime.Span]]:
    """One query: the windows in scope of the given incidents, by incident (in the order
    `_windows` gives them)."""
    rows = (
        ImpactWindow.objects.filter(_window_filter(scope), incident_id__in=list(incident_ids))
        .values_list("incident_id", "level", "started_at", "ended_at")
        .order_by("started_at", "id")
    )
    out: dict[int, list[uptime.Span]] = defaultdict(list)
    for incident_id, level, started, ended in rows:
        out[incident_id].append(uptime.Span(level=level, start=started, end=ended, incident_id=incident_id))
    return out


def _windows(
    *, scope: Scope, start: datetime, end: datetime
) -> tuple[dict[int, list[uptime.Span]], dict[int, list[uptime.Span]]]:
    """One query: windows in scope that overlap [start, end) or belong to an incident that
    started in it. Returns the spans by incident and by product."""
    overlap = Q(started_at__lt=end) & (Q(ended_at__isnull=True) | Q(ended_at__gt=start))
    started_inside = Q(incident__started_at__gte=start, incident__started_at__lt=end)
    rows = (
        ImpactWindow.objects.filter(_window_filter(scope))
        .filter(overlap | started_inside)
        .values_list("incident_id", "product_id", "level", "started_at", "ended_at")
        .order_by("started_at", "id")
    )
    by_incident: dict[int, list[uptime.Span]] = defaultdict(list)
    by_product: dict[int, list[uptime.Span]] = defaultdict(list)
    for incident_id, product_id, level, started, ended in rows:
        span = uptime.Span(level=level, start=started, end=ended, incident_id=incident_id)
        by_incident[incident_id].append(span)
        by_product[product_id].append(span)
    return by_incident, by_product


def _action_items(
    *, scope: Scope, periods: Sequence[metrics.Period], now: datetime, tz: ZoneInfo
) -> tuple[metrics.ActionItemCounts, ...]:
    """One aggregate query, three counts per period.

    Action items have no closing time of their own: a done or won't-do item is dated by
    its last change (`updated_at`), which is when it was closed unless it was edited later.
    """
    # Only items that can count in some period: still open, or created or changed since the
    # range began (closed before it, an item is neither opened, closed nor overdue in it).
    since = min(periods[0].start, now)
    queryset = ActionItem.objects.filter(
        Q(status__in=ActionItem.OPEN_STATUSES) | Q(updated_at__gte=since) | Q(created_at__gte=since)
    )
    if not scope.is_all:
        queryset = queryset.filter(
            Exists(ImpactWindow.objects.filter(_window_filter(scope), incident=OuterRef("incident_id")))
        )
    counts_by_name: dict[str, Any] = {}
    for i, p in enumerate(periods):
        moment = min(p.end, now)
        still_open = Q(status__in=ActionItem.OPEN_STATUSES) | Q(
            status__in=_CLOSED_ITEMS, updated_at__gte=moment
        )
        counts_by_name[f"opened_{i}"] = Count("id", filter=Q(created_at__gte=p.start, created_at__lt=p.end))
        counts_by_name[f"closed_{i}"] = Count(
            "id", filter=Q(status__in=_CLOSED_ITEMS, updated_at__gte=p.start, updated_at__lt=p.end)
        )
        counts_by_name[f"overdue_{i}"] = Count(
            "id",
            filter=Q(created_at__lt=moment, due_date__lt=uptime.local_date(moment, tz)) & still_open,
        )
    counts = queryset.aggregate(**counts_by_name)
    return tuple(
        metrics.ActionItemCounts(
            period=p,
            opened=counts[f"opened_{i}"] or 0,
            closed=counts[f"closed_{i}"] or 0,
            overdue=counts[f"overdue_{i}"] or 0,
        )
        for i, p in enumerate(periods)
    )


def _credits(*, scope: Scope, periods: Sequence[metrics.Period]) -> tuple[metrics.CreditTotals, ...]:
    """One grouped query. Notices are per customer and calendar month of the policy; a
    scope keeps the notices of customers entitled to one of its products."""
    months: dict[str, metrics.Period] = {}
    for p in periods:
        for k in range(p.months):
            months[f"{metrics.add_months(p.first_day, k):%Y-%m}"] = p
    queryset = CreditNotice.objects.filter(period__in=list(months)).exclude(state=NoticeState.CANCELLED)
    if not scope.is_all:
        queryset = queryset.filter(
            Exists(
                CustomerEntitlement.objects.filter(
                    customer=OuterRef("customer_id"), product__in=[p.pk for p in scope.products]
                )
            )
        )
    rows = (
        queryset.values("period", "state", "unit", "customer__currency")
        .annotate(n=Count("id"), credit=Sum("credit"), amount=Sum("credit_amount"))
        .order_by("period")
    )
    totals: dict[metrics.Period, dict[str, Any]] = {
        p: {"issued": 0, "pending": 0, "days": Decimal(0), "percent": 0, "amounts": defaultdict(Decimal)}
        for p in periods
    }
    for row in rows:
        entry = totals[months[row["period"]]]
        if row["state"] != NoticeState.SENT:
            entry["pending"] += row["n"]
            continue
        entry["issued"] += row["n"]
        if row["unit"] == CreditNotice.Unit.DAYS:
            entry["days"] += row["credit"] or Decimal(0)
        else:
            entry["percent"] += row["n"]
            if row["amount"] is not None:
                entry["amounts"][row["customer__currency"]] += row["amount"]
    return tuple(
        metrics.CreditTotals(
            period=p,
            issued=t["issued"],
            pending=t["pending"],
            days=t["days"],
            percent_notices=t["percent"],
            # Money at the column's scale on every database (SQLite's SUM drops it: "120").
            amounts=tuple(sorted((c, a.quantize(_CENTS)) for c, a in t["amounts"].items())),
        )
        for p, t in totals.items()
    )


# --- The staff insights page ----------------------------------------------------------------------


@dataclass(frozen=True)
class InsightsPage:
    scope: Scope
    granularity: str
    periods: tuple[metrics.Period, ...]
    summaries: tuple[metrics.PeriodSummary, ...]
    response: metrics.Response  # over the whole range: the ranks the page shows
    incident_count: int  # incidents of the range (maintenance apart)
    listed: tuple[metrics.IncidentRow, ...]  # the newest TABLE_ROWS incidents (no maintenance)
    behind: dict[int, metrics.Named]  # the incidents behind the response figures and dots
    action_items: tuple[metrics.ActionItemCounts, ...]
    credits: tuple[metrics.CreditTotals, ...]
    total: metrics.Downtime  # the whole range
    now: datetime
    weights: uptime.Weights
    # Every incident and maintenance of the range, newest first: read only when asked
    # for (the incidents CSV) and on the Python path; None on the database path.
    rows: tuple[metrics.IncidentRow, ...] | None = None

    @property
    def start(self) -> datetime:
        return self.periods[0].start

    @property
    def end(self) -> datetime:
        return self.periods[-1].end

    def incident(self, incident_id: int) -> metrics.IncidentRow | None:
        """One incident's row, if it was read (every row, or the newest listed)."""
        return next(
            (
                r
                for r in (self.rows if self.rows is not None else self.listed)
                if r.facts.incident_id == incident_id
            ),
            None,
        )


def _periods(granularity: str, last: date, tz: ZoneInfo) -> tuple[metrics.Period, ...]:
    count = QUARTER_COUNT if granularity == metrics.QUARTER else MONTH_COUNT
    return metrics.periods(last=last, count=count, granularity=granularity, tz=tz)


def insights_page(
    *,
    scope: Scope,
    granularity: str,
    last: date,
    now: datetime,
    every_row: bool = False,
    period_response: bool = False,
) -> InsightsPage:
    """Insights for `scope` over the 12 months (or 8 quarters) ending with the one holding `last`.

    On PostgreSQL the counts, distributions and downtime are worked out by the database
    (`insights.aggregates`): a fixed number of queries returning a few hundred rows,
    however long the history. `every_row` (the incidents CSV, which lists them all) and
    other databases (SQLite, the embedded default) take the Python path, which reads the
    range's incidents and windows and does the same maths in `insights.metrics`. Both
    give the same page; `tests/insights/test_fast_path.py` holds them to it.
    `period_response`: each period's own distributions too (the response CSV).
    """
    build = insights_page_python if every_row or connection.vendor != "postgresql" else insights_page_sql
    return build(scope=scope, granularity=granularity, last=last, now=now, period_response=period_response)


def _behind(response: metrics.Response, rows: Sequence[metrics.IncidentRow]) -> dict[int, metrics.Named]:
    ids = frozenset().union(*(d.incident_ids for _, _, d in response.items()))
    return {
        r.facts.incident_id: metrics.Named(public_id=r.facts.public_id, title=r.facts.title)
        for r in sorted(rows, key=lambda r: r.facts.incident_id)
        if r.facts.incident_id in ids
    }


def insights_page_python(
    *, scope: Scope, granularity: str, last: date, now: datetime, period_response: bool = False
) -> InsightsPage:
    """The page from every incident and window of the range, read into Python: the pure
    maths of `insights.metrics` and `incidents.uptime`, as on the status page."""
    tz = display_zone()
    weights = display_weights()
    periods = _periods(granularity, last, tz)
    start, end = periods[0].start, periods[-1].end
    by_incident, by_product = _windows(scope=scope, start=start, end=end)
    facts = _incident_facts(scope=scope, start=start, end=end, spans=by_incident)
    rows = [metrics.incident_row(f, now=now, weights=weights) for f in facts]

    in_period: dict[metrics.Period, list[metrics.IncidentRow]] = defaultdict(list)
    for row in rows:
        found = metrics.period_of(row.facts.started_at, periods)
        if found is not None:
            in_period[found].append(row)
    # Each product's downtime per period, from the spans of that period only. The whole
    # range is the sum of its periods: they partition it, and a minute of downtime lies in
    # exactly one of them (a test checks this against one uptime() over the range).
    per_period: dict[metrics.Period, list[metrics.Downtime]] = {p: [] for p in periods}
    for product in scope.products:
        buckets = metrics.spans_by_period(by_product.get(product.pk, []), periods)
        for p in periods:
            per_period[p].append(
                metrics.product_downtime(buckets[p], start=p.start, end=p.end, now=now, weights=weights)
            )
    summaries = [
        metrics.period_summary(
            p,
            rows=in_period[p],
            downtime=metrics.combined(per_period[p]),
            now=now,
            with_response=period_response,
        )
        for p in periods
    ]
    incidents = [r for r in rows if not r.facts.is_maintenance]
    response = metrics.response_times(incidents).shown()
    return InsightsPage(
        scope=scope,
        granularity=granularity,
        periods=periods,
        summaries=tuple(summaries),
        response=response,
        incident_count=len(incidents),
        listed=tuple(incidents[:TABLE_ROWS]),
        behind=_behind(response, incidents),
        action_items=_action_items(scope=scope, periods=periods, now=now, tz=tz),
        credits=_credits(scope=scope, periods=periods),
        total=metrics.combined([d for p in periods for d in per_period[p]]),
        now=now,
        weights=weights,
        rows=tuple(rows),
    )


def insights_page_sql(
    *, scope: Scope, granularity: str, last: date, now: datetime, period_response: bool = False
) -> InsightsPage:
    """The same page with the heavy arithmetic done by PostgreSQL (`insights.aggregates`):
    six queries whatever the size of the history, none of which returns more than a few
    hundred rows (the newest incidents listed, the ranks shown, a figure per product,
    period and level)."""
    tz = display_zone()
    weights = display_weights()
    periods = _periods(granularity, last, tz)
    products = None if scope.is_all else [p.pk for p in scope.products]
    figures = aggregates.incident_figures(products=products, periods=periods, per_period=period_response)
    durations = aggregates.downtime_by_level(products=products, periods=periods, now=now)
    per_period: dict[metrics.Period, list[metrics.Downtime]] = {p: [] for p in periods}
    for product in scope.products:
        for i, p in enumerate(periods, start=1):
            per_period[p].append(
                metrics.downtime_of_levels(
                    durations.get((product.pk, i), {}), start=p.start, end=min(p.end, now), weights=weights
                )
            )
    summaries = []
    for i, p in enumerate(periods, start=1):
        by_level = figures.by_level.get(i, dict.fromkeys(metrics.LEVEL_ORDER, 0))
        summaries.append(
            metrics.PeriodSummary(
                period=p,
                incidents=sum(by_level.values()),
                maintenance=figures.maintenance.get(i, 0),
                by_level=tuple(by_level.items()),
                downtime=metrics.combined(per_period[p]),
                response=figures.period_response[i] if figures.period_response else None,
                open_incidents=figures.open_incidents.get(i, 0),
            )
        )
    listed = [
        metrics.incident_row(f, now=now, weights=weights)
        for f in _incident_facts(scope=scope, start=periods[0].start, end=periods[-1].end, newest=TABLE_ROWS)
    ]
    return InsightsPage(
        scope=scope,
        granularity=granularity,
        periods=periods,
        summaries=tuple(summaries),
        response=figures.response,
        incident_count=sum(s.incidents for s in summaries),
        listed=tuple(listed),
        behind=figures.behind,
        action_items=aggregates.action_item_counts(products=products, periods=periods, now=now, tz=tz),
        credits=_credits(scope=scope, periods=periods),
        total=metrics.combined([d for p in periods for d in per_period[p]]),
        now=now,
        weights=weights,
    )


# --- The public uptime report ---------------------------------------------------------------------


@dataclass(frozen=True)
class UptimeMonth:
    period: metrics.Period
    downtime: metrics.Downtime
    incidents: int  # public incidents with impact on the product that month

    @property
    def is_partial(self) -> bool:
        """The current month: measured up to now only."""
        return self.downtime.uptime.period_minutes < uptime.minutes(self.period.end - self.period.start)


@dataclass(frozen=True)
class UptimeReport:
    product: Product
    months: tuple[UptimeMonth, ...]  # oldest first
    last_days: metrics.Downtime  # the status page's 90-day figure
    days: int
    weights: uptime.Weights
    now: datetime
    time_zone: str

    @property
    def rule(self) -> str:
        return weighting_rule(self.weights)

    @property
    def newest_first(self) -> tuple[UptimeMonth, ...]:
        return tuple(reversed(self.months))


def product_uptime_report(*, slug: str, now: datetime) -> UptimeReport:
    """Monthly uptime of one public product for the last 12 months (this one included,
    up to now) and over the status page's 90 days. Two queries."""
    try:
        product = products_public().get(slug=slug)
    except Product.DoesNotExist:
        raise Http404("No such product.") from None
    tz = display_zone()
    weights = display_weights()
    today = uptime.local_date(now, tz)
    months = metrics.periods(last=today, count=REPORT_MONTHS, granularity=metrics.MONTH, tz=tz)
    days = uptime.display_days(last=today, count=REPORT_DAYS, tz=tz)
    since = min(months[0].start, days[0].start)
    # The status page's rule (public_site.pages.windows_between): windows of public
    # incidents that have started by now.
    windows = list(
        ImpactWindow.objects.filter(product=product, incident__is_public=True, started_at__lte=now)
        .filter(Q(ended_at__isnull=True) | Q(ended_at__gt=since))
        .values_list("incident_id", "level", "started_at", "ended_at")
        .order_by("started_at", "id")
    )
    spans = [uptime.Span(level=lv, start=s, end=e, incident_id=i) for i, lv, s, e in windows]
    buckets = metrics.spans_by_period(spans, months)
    out = []
    for p in months:
        touching = {
            s.incident_id
            for s in buckets[p]
            if (iv := s.interval(now=now)) is not None and iv.clip(p.start, p.end) is not None
        }
        out.append(
            UptimeMonth(
                period=p,
                downtime=metrics.product_downtime(
                    buckets[p], start=p.start, end=p.end, now=now, weights=weights
                ),
                incidents=len(touching),
            )
        )
    recent = [s for s in spans if s.end is None or s.end > days[0].start]
    return UptimeReport(
        product=product,
        months=tuple(out),
        last_days=metrics.product_downtime(
            recent, start=days[0].start, end=days[-1].end, now=now, weights=weights
        ),
        days=REPORT_DAYS,
        weights=weights,
        now=now,
        time_zone=settings.DISPLAY_TIME_ZONE,
    )
