"""The public uptime report of one product drawn: its table (and CSV), chart and JSON."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal

from insights import charts, metrics
from insights.selectors import UptimeReport
from insights.tables import Table, duration_text, iso, minutes_of, weighted_text


def uptime_table(report: UptimeReport) -> Table:
    months = report.newest_first
    return Table(
        name="uptime",
        caption=f"{report.product.name}: monthly uptime, newest first (this month up to now)",
        headers=("Month", "Uptime", "Weighted", "Total", "Incidents"),
        rows=tuple(
            (
                m.period.label,
                f"{m.downtime.uptime.percent}\N{NO-BREAK SPACE}%",
                weighted_text(m.downtime.weighted_minutes),
                duration_text(m.downtime.total),
                str(m.incidents),
            )
            for m in months
        ),
        csv_headers=(
            "month",
            "period_start",
            "period_end",
            "measured_minutes",
            "weighted_downtime_minutes",
            "total_downtime_minutes",
            "uptime_percent",
            "incidents",
            "complete",
        ),
        csv_rows=tuple(
            (
                m.period.label,
                iso(m.period.start),
                iso(m.period.end),
                str(m.downtime.uptime.period_minutes.quantize(Decimal("0.01"))),
                str(m.downtime.weighted_minutes.quantize(Decimal("0.01"))),
                minutes_of(m.downtime.total),
                str(m.downtime.uptime.percent),
                str(m.incidents),
                "no" if m.is_partial else "yes",
            )
            for m in months
        ),
    )


def uptime_floor(percents: Sequence[Decimal]) -> float:
    """Where the uptime axis starts: 99 % unless a month fell below it (then the whole
    percent below, or a multiple of 5 under 95 %), so every bar stays readable."""
    lowest = min(percents, default=Decimal(100))
    if lowest >= 99:
        return 99.0
    floor = int(lowest)
    if lowest < 95:
        floor -= floor % 5
    return float(floor)


def uptime_chart(report: UptimeReport) -> charts.BarChart:
    percents = [m.downtime.uptime.percent for m in report.months]
    floor = uptime_floor(percents)
    return charts.bar_chart(
        id="chart-uptime",
        title=f"{report.product.name}: monthly uptime, last {len(report.months)} months",
        description=(
            f"One bar per month, oldest first; the axis runs from {charts.number_text(floor)} % to 100 %. "
            "The table below has each month's uptime and downtime."
        ),
        categories=metrics.axis_labels([m.period for m in report.months])[0],
        sub_labels=metrics.axis_labels([m.period for m in report.months])[1],
        series=[charts.Series(name="Uptime", css="s-uptime", values=tuple(percents))],
        y_min=floor,
        y_max=100.0,
        y_label="%",
        value_text=lambda v: charts.number_text(float(v)),
    )


def uptime_json(report: UptimeReport) -> dict[str, object]:
    return {
        "product": {"id": report.product.public_id, "slug": report.product.slug, "name": report.product.name},
        "time_zone": report.time_zone,
        "weights": {
            "major_outage": str(report.weights.major),
            "partial_outage": str(report.weights.partial),
            "degraded_performance": str(report.weights.degraded),
            "under_maintenance": "0",
        },
        "rule": report.rule,
        "last_90_days": {
            "days": report.days,
            "uptime_percent": str(report.last_days.uptime.percent),
            "weighted_downtime_minutes": str(report.last_days.weighted_minutes.quantize(Decimal("0.01"))),
            "total_downtime_minutes": minutes_of(report.last_days.total),
        },
        "months": [
            {
                "month": m.period.label,
                "start": iso(m.period.start),
                "end": iso(m.period.end),
                "complete": not m.is_partial,
                "measured_minutes": str(m.downtime.uptime.period_minutes.quantize(Decimal("0.01"))),
                "weighted_downtime_minutes": str(m.downtime.weighted_minutes.quantize(Decimal("0.01"))),
                "total_downtime_minutes": minutes_of(m.downtime.total),
                "uptime_percent": str(m.downtime.uptime.percent),
                "incidents": m.incidents,
            }
            for m in report.newest_first
        ],
    }
