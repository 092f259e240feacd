"""What the staff insights page draws: a chart and a table per panel, and each table's CSV.

The table type and CSV writer are in `insights.tables`; the public uptime report's
drawing is in `insights.uptime_present` (re-exported here for the public site and API).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import ROUND_DOWN, Decimal

from django.utils import timezone

from core.timezones import display_zone
from incidents import uptime
from insights import charts, metrics
from insights.metrics import NO_VALUE
from insights.selectors import InsightsPage
from insights.tables import Table, duration_text, iso, minutes_of, weighted_text

# Re-exported: the public site and the API draw the uptime report through this module.
from insights.tables import csv_text as csv_text
from insights.uptime_present import uptime_chart as uptime_chart
from insights.uptime_present import uptime_floor as uptime_floor
from insights.uptime_present import uptime_json as uptime_json
from insights.uptime_present import uptime_table as uptime_table

LEVEL_LABELS = {
    uptime.MAJOR_OUTAGE: "Major outage",
    uptime.PARTIAL_OUTAGE: "Partial outage",
    uptime.DEGRADED_PERFORMANCE: "Degraded performance",
    metrics.NO_IMPACT: "No product impact",
}
LEVEL_CSS = {
    uptime.MAJOR_OUTAGE: "s-major",
    uptime.PARTIAL_OUTAGE: "s-partial",
    uptime.DEGRADED_PERFORMANCE: "s-degraded",
    metrics.NO_IMPACT: "s-none",
}

CHARTS = ("levels", "downtime", "response", "incidents", "action-items", "credits")


def levels_table(page: InsightsPage) -> Table:
    headers = ("Period", "Major", "Partial", "Degraded", "No impact", "Maint.")
    rows = tuple(
        (s.period.label, *(str(s.level_count(lv)) for lv in metrics.LEVEL_ORDER), str(s.maintenance))
        for s in page.summaries
    )
    return Table(
        name="levels",
        caption="Incidents by worst impact level, per period (by the start of impact)",
        headers=headers,
        rows=rows,
        csv_headers=("period", "period_start", *metrics.LEVEL_ORDER, "incidents", "maintenance"),
        csv_rows=tuple(
            (
                s.period.label,
                iso(s.period.start),
                *(str(s.level_count(lv)) for lv in metrics.LEVEL_ORDER),
                str(s.incidents),
                str(s.maintenance),
            )
            for s in page.summaries
        ),
    )


def levels_chart(page: InsightsPage) -> charts.BarChart:
    total = sum(s.incidents for s in page.summaries)
    return charts.bar_chart(
        id="chart-levels",
        title=f"Incidents by level, {page.scope.label}",
        description=(
            f"Stacked bars: {total} incidents over {len(page.periods)} periods, "
            "each by the worst impact level of its windows. The table below has the counts."
        ),
        categories=metrics.axis_labels([s.period for s in page.summaries])[0],
        sub_labels=metrics.axis_labels([s.period for s in page.summaries])[1],
        series=[
            charts.Series(
                name=LEVEL_LABELS[lv],
                css=LEVEL_CSS[lv],
                values=tuple(s.level_count(lv) for s in page.summaries),
            )
            for lv in metrics.LEVEL_ORDER
        ],
        integers=True,
        stacked=True,
        y_label="incidents",
    )


def downtime_table(page: InsightsPage) -> Table:
    return Table(
        name="downtime",
        caption=(
            "Downtime and uptime per period (display weights; each product counts the same). "
            f"Whole range: {page.total.uptime.percent} % uptime."
        ),
        headers=("Period", "Total", "Weighted", "Uptime"),
        rows=tuple(
            (
                s.period.label,
                duration_text(s.downtime.total),
                weighted_text(s.downtime.weighted_minutes),
                f"{s.downtime.uptime.percent}\N{NO-BREAK SPACE}%",
            )
            for s in page.summaries
        ),
        csv_headers=(
            "period",
            "period_start",
            "total_downtime_minutes",
            "weighted_downtime_minutes",
            "product_minutes",
            "uptime_percent",
        ),
        csv_rows=tuple(
            (
                s.period.label,
                iso(s.period.start),
                minutes_of(s.downtime.total),
                str(s.downtime.weighted_minutes.quantize(Decimal("0.01"))),
                str(s.downtime.uptime.period_minutes.quantize(Decimal("0.01"))),
                str(s.downtime.uptime.percent),
            )
            for s in page.summaries
        ),
    )


def _hours(minutes: Decimal) -> Decimal:
    return (minutes / 60).quantize(Decimal("0.01"), rounding=ROUND_DOWN)


def downtime_chart(page: InsightsPage) -> charts.BarChart:
    return charts.bar_chart(
        id="chart-downtime",
        title=f"Downtime per period, {page.scope.label}",
        description=(
            "Paired bars per period, in hours: total downtime (unweighted) and weighted downtime "
            "(major outage in full, partial outage at its weight). The table below has the figures "
            "and the uptime."
        ),
        categories=metrics.axis_labels([s.period for s in page.summaries])[0],
        sub_labels=metrics.axis_labels([s.period for s in page.summaries])[1],
        series=[
            charts.Series(
                name="Total",
                css="s-total",
                values=tuple(_hours(uptime.minutes(s.downtime.total)) for s in page.summaries),
            ),
            charts.Series(
                name="Weighted",
                css="s-weighted",
                values=tuple(_hours(s.downtime.weighted_minutes) for s in page.summaries),
            ),
        ],
        y_label="hours",
        value_text=lambda v: f"{charts.number_text(float(v))} h",
    )


def response_table(page: InsightsPage) -> Table:
    rows = []
    csv_rows = []
    for key, label, dist in page.response.items():
        median = page.behind.get(dist.median_incident_id) if dist.median_incident_id is not None else None
        p90 = page.behind.get(dist.p90_incident_id) if dist.p90_incident_id is not None else None
        rows.append(
            (
                label,
                str(dist.count),
                duration_text(dist.median),
                duration_text(dist.p90),
                duration_text(dist.max),
                median.title if median else NO_VALUE,
                p90.title if p90 else NO_VALUE,
            )
        )
        csv_rows.append(
            (
                key,
                str(dist.count),
                minutes_of(dist.median),
                minutes_of(dist.p90),
                minutes_of(dist.max),
                median.public_id if median else "",
                p90.public_id if p90 else "",
            )
        )
    for summary in page.summaries:
        if summary.response is None:  # not read for the page, which does not show them
            continue
        for key, _label, dist in summary.response.items():
            csv_rows.append(
                (
                    f"{key}@{summary.period.label}",
                    str(dist.count),
                    minutes_of(dist.median),
                    minutes_of(dist.p90),
                    minutes_of(dist.max),
                    "",
                    "",
                )
            )
    return Table(
        name="response",
        caption="Response times over the range: median and 90th percentile (nearest rank)",
        headers=("Measure", "Incidents", "Median", "p90", "Longest", "Median incident", "p90 incident"),
        rows=tuple(rows),
        csv_headers=(
            "measure",
            "incidents",
            "median_minutes",
            "p90_minutes",
            "max_minutes",
            "median_incident",
            "p90_incident",
        ),
        csv_rows=tuple(csv_rows),
    )


def response_chart(page: InsightsPage) -> charts.StripChart:
    names = page.behind
    rows = [
        charts.StripInput(
            label=f"{label} (n = {dist.count}"
            + (f", {metrics.STRIP_POINTS} drawn by rank)" if dist.count > metrics.STRIP_POINTS else ")"),
            points=tuple(
                (value, names[incident_id].title if incident_id in names else "")
                for value, incident_id in dist.drawn()
            ),
            median=dist.median,
            p90=dist.p90,
        )
        for _key, label, dist in page.response.items()
    ]
    return charts.strip_chart(
        id="chart-response",
        title=f"Response time distributions, {page.scope.label}",
        description=(
            "One dot per incident on a logarithmic time axis from one minute up, one row per "
            "measure, with the median and the 90th percentile marked. The table below has the "
            "figures and the incidents behind them."
        ),
        rows=rows,
        value_text=duration_text,
    )


_INCIDENT_HEADERS = (
    "Incident",
    "Impact start",
    "Level",
    "Duration",
    "Weighted downtime",
    "To detect",
    "To first update",
    "To resolve",
    "Cadence",
)
_INCIDENT_CSV_HEADERS = (
    "incident",
    "title",
    "kind",
    "public",
    "started_at",
    "detected_at",
    "resolved_at",
    "level",
    "duration_minutes",
    "weighted_downtime_minutes",
    "time_to_detect_minutes",
    "time_to_first_update_minutes",
    "time_to_resolve_minutes",
    "update_cadence_minutes",
    "updates",
)


def _local(value: datetime) -> str:
    """Staff read insights in the display zone (the console's footer names it)."""
    local = timezone.localtime(value, display_zone())
    return f"{local:%Y-%m-%d %H:%M} {local.tzname()}"


def _incident_cells(r: metrics.IncidentRow) -> tuple[str, ...]:
    return (
        r.facts.title,
        _local(r.facts.started_at),
        LEVEL_LABELS.get(r.level, r.level) if not r.facts.is_maintenance else "Maintenance",
        duration_text(r.duration) + (" (ongoing)" if r.ongoing and not r.facts.is_maintenance else ""),
        weighted_text(r.weighted_downtime_minutes),
        duration_text(r.time_to_detect),
        duration_text(r.time_to_first_update),
        duration_text(r.time_to_resolve) if not r.ongoing else "open",
        duration_text(r.update_cadence),
    )


def _incident_csv_cells(r: metrics.IncidentRow) -> tuple[str, ...]:
    return (
        r.facts.public_id,
        r.facts.title,
        "maintenance" if r.facts.is_maintenance else "incident",
        "yes" if r.facts.is_public else "no",
        iso(r.facts.started_at),
        iso(r.facts.detected_at),
        iso(r.facts.resolved_at),
        r.level,
        minutes_of(r.duration),
        str(r.weighted_downtime_minutes.quantize(Decimal("0.01"))),
        minutes_of(r.time_to_detect),
        minutes_of(r.time_to_first_update),
        minutes_of(r.time_to_resolve),
        minutes_of(r.update_cadence),
        str(r.facts.update_count),
    )


def incidents_table(page: InsightsPage, *, limit: int | None = None) -> Table:
    if limit is None:
        if page.rows is None:
            raise ValueError("every incident was not read: build the page with every_row=True")
        listed = page.rows
    else:
        listed = page.listed[:limit]
    cut = limit is not None and page.incident_count > len(listed)
    return Table(
        name="incidents",
        caption=(
            f"The incidents behind the figures, newest first ({page.incident_count} in the range"
            + (f"; the first {len(listed)} listed, all in the CSV)" if cut else ")")
        ),
        headers=_INCIDENT_HEADERS,
        rows=tuple(_incident_cells(r) for r in listed),
        links=tuple(f"/incidents/{r.facts.public_id}/" for r in listed),
        csv_headers=_INCIDENT_CSV_HEADERS,
        # The HTML lists the first rows only; the CSV (no limit) has every incident.
        csv_rows=() if limit is not None else tuple(_incident_csv_cells(r) for r in listed),
    )


def action_items_table(page: InsightsPage) -> Table:
    return Table(
        name="action-items",
        caption="Action items opened and closed in each period, and overdue at its end",
        headers=("Period", "Opened", "Closed", "Overdue at end"),
        rows=tuple((a.period.label, str(a.opened), str(a.closed), str(a.overdue)) for a in page.action_items),
        csv_headers=("period", "period_start", "opened", "closed", "overdue_at_end"),
        csv_rows=tuple(
            (a.period.label, iso(a.period.start), str(a.opened), str(a.closed), str(a.overdue))
            for a in page.action_items
        ),
    )


def action_items_chart(page: InsightsPage) -> charts.BarChart:
    items = page.action_items
    return charts.bar_chart(
        id="chart-action-items",
        title=f"Action items over time, {page.scope.label}",
        description=(
            "Three bars per period: action items opened, closed, and overdue at the end of the "
            "period. The table below has the counts."
        ),
        categories=metrics.axis_labels([a.period for a in items])[0],
        sub_labels=metrics.axis_labels([a.period for a in items])[1],
        series=[
            charts.Series(name="Opened", css="s-opened", values=tuple(a.opened for a in items)),
            charts.Series(name="Closed", css="s-closed", values=tuple(a.closed for a in items)),
            charts.Series(name="Overdue", css="s-overdue", values=tuple(a.overdue for a in items)),
        ],
        integers=True,
        y_label="items",
    )


def credits_table(page: InsightsPage) -> Table:
    return Table(
        name="credits",
        caption="SLA credit notices per period: sent (issued) and not yet sent",
        headers=("Period", "Issued", "Days", "% of bill", "Amount", "Not sent"),
        rows=tuple(
            (
                c.period.label,
                str(c.issued),
                str(c.days.normalize()),
                str(c.percent_notices),
                c.amount_text(),
                str(c.pending),
            )
            for c in page.credits
        ),
        csv_headers=(
            "period",
            "issued_notices",
            "days_of_service",
            "percent_of_bill_notices",
            "amounts",
            "pending_notices",
        ),
        csv_rows=tuple(
            (
                c.period.label,
                str(c.issued),
                str(c.days),
                str(c.percent_notices),
                ";".join(f"{cur} {amount}" for cur, amount in c.amounts),
                str(c.pending),
            )
            for c in page.credits
        ),
    )


def credits_chart(page: InsightsPage) -> charts.BarChart:
    items = page.credits
    return charts.bar_chart(
        id="chart-credits",
        title=f"SLA credit notices per period, {page.scope.label}",
        description=(
            "Stacked bars per period: notices sent (issued) and notices computed but not yet sent. "
            "The table below has the days of service and the amounts."
        ),
        categories=metrics.axis_labels([c.period for c in items])[0],
        sub_labels=metrics.axis_labels([c.period for c in items])[1],
        series=[
            charts.Series(name="Issued", css="s-issued", values=tuple(c.issued for c in items)),
            charts.Series(name="Not yet sent", css="s-pending", values=tuple(c.pending for c in items)),
        ],
        integers=True,
        stacked=True,
        y_label="notices",
    )


@dataclass(frozen=True)
class Panel:
    name: str
    title: str
    chart: charts.BarChart | charts.StripChart | None
    table: Table
    kind: str  # "bar", "strip" or "table"


def insights_panels(page: InsightsPage) -> tuple[Panel, ...]:
    return (
        Panel("levels", "Incidents by level", levels_chart(page), levels_table(page), "bar"),
        Panel("downtime", "Downtime and uptime", downtime_chart(page), downtime_table(page), "bar"),
        Panel(
            "response",
            "Detection, updates and resolution",
            response_chart(page),
            response_table(page),
            "strip",
        ),
        Panel("incidents", "The incidents behind them", None, incidents_table(page, limit=50), "table"),
        Panel("action-items", "Action items", action_items_chart(page), action_items_table(page), "bar"),
        Panel("credits", "SLA credits", credits_chart(page), credits_table(page), "bar"),
    )


def insights_table(page: InsightsPage, name: str) -> Table:
    builders = {
        "levels": levels_table,
        "downtime": downtime_table,
        "response": response_table,
        "incidents": incidents_table,
        "action-items": action_items_table,
        "credits": credits_table,
    }
    return builders[name](page)
