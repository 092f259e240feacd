"""Reads behind the insights pages and the public uptime report.

Each builder runs a fixed number of queries whatever the amount of history. The staff page
has two paths to the same figures, SQL on PostgreSQL and Python elsewhere
(docs/adr/0005-insights-sql-path.md). Staff insights see every incident; the public
report sees only public incidents on public products, like the status page.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db import connection
from django.http import Http404

from core.timezones import display_zone
from incidents import uptime
from incidents.models import Product
from incidents.selectors import products_public, windows_counted_between
from insights import aggregates, history, metrics, scope_facts
from insights.scope import Scope
from insights.scope import scope_choices as scope_choices  # the views and tests read it here

MONTH_COUNT = 12
QUARTER_COUNT = 8
REPORT_MONTHS = 12
REPORT_DAYS = 90  # the status page's bars (public_site.pages.UPTIME_BAR_DAYS)
TABLE_ROWS = 50  # incidents listed on the page; the CSV has them all


def display_weights() -> uptime.Weights:
    """The status page's weights (public_site.pages.uptime_weights reads the same settings)."""
    return uptime.Weights.of(
        major=settings.UPTIME_WEIGHT_MAJOR,
        partial=settings.UPTIME_WEIGHT_PARTIAL,
        degraded=settings.UPTIME_WEIGHT_DEGRADED,
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
    by_incident, by_product = history.windows(scope=scope, start=start, end=end)
    facts = history.incident_facts(scope=scope, start=start, end=end, spans=by_incident)
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
        action_items=history.action_items(scope=scope, periods=periods, now=now, tz=tz),
        credits=history.credits(scope=scope, periods=periods),
        total=metrics.combined([d for p in periods for d in per_period[p]]),
        now=now,
        weights=weights,
        rows=tuple(rows),
    )


def facts_scope(scope: Scope) -> str:
    """The key of `scope` in the stored per-scope facts (`insights.scope_facts`)."""
    if scope.is_all:
        return scope_facts.ALL
    kind, _, _ = scope.key.partition(":")
    if kind == "group":
        return scope_facts.group_scope(int(scope.key.partition(":")[2]))
    return scope_facts.product_scope(scope.products[0].pk)


def insights_page_sql(
    *, scope: Scope, granularity: str, last: date, now: datetime, period_response: bool = False
) -> InsightsPage:
    """The same page from the stored per-scope facts (`insights.aggregates`): a fixed
    number of queries whatever the size of the history, none of which returns more than
    a few hundred rows (the month sums, the ranks shown, the newest incidents listed, a
    figure per product, month and level)."""
    tz = display_zone()
    weights = display_weights()
    periods = _periods(granularity, last, tz)
    products = None if scope.is_all else [p.pk for p in scope.products]
    figures = aggregates.incident_figures(
        scope=facts_scope(scope), periods=periods, per_period=period_response
    )
    durations = aggregates.downtime_by_level(products=products, periods=periods, now=now, tz=tz)
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
        for f in history.incident_facts(
            scope=scope, start=periods[0].start, end=periods[-1].end, newest=TABLE_ROWS
        )
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
        credits=history.credits(scope=scope, periods=periods),
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
    # The status page's rule (public_site.pages.windows_between): counted windows (no
    # draft's) that have started by now.
    windows = list(
        windows_counted_between(since=since, until=now)
        .filter(product=product)
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
