"""The insights maths, table-driven and without a database."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest

from incidents import uptime
from insights import charts, metrics

PACIFIC = ZoneInfo("US/Pacific")
WEIGHTS = uptime.Weights()
NOW = datetime(2026, 11, 29, 20, 0, tzinfo=UTC)


def t(day: int, hour: int = 0, minute: int = 0, month: int = 10) -> datetime:
    return datetime(2026, month, day, hour, minute, tzinfo=UTC)


def facts(**kw: object) -> metrics.IncidentFacts:
    base: dict[str, object] = {
        "incident_id": 1,
        "public_id": "abc",
        "title": "Writes failing",
        "is_maintenance": False,
        "is_public": True,
        "started_at": t(8, 11),
        "declared_at": t(8, 12),
    }
    base.update(kw)
    return metrics.IncidentFacts(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("n", "percent", "index"),
    [
        (1, 50, 0),
        (1, 90, 0),
        (2, 50, 0),
        (2, 90, 1),
        (4, 50, 1),
        (5, 50, 2),
        (10, 90, 8),
        (11, 90, 9),
        (100, 90, 89),
    ],
)
def test_it_takes_the_nearest_rank(n: int, percent: int, index: int) -> None:
    assert metrics.nearest_rank_index(n, percent) == index


def test_it_names_the_incident_behind_the_median_and_p90() -> None:
    minutes = [50, 4, 4, 10, 4, 4, 4, 30]
    dist = metrics.distribution((timedelta(minutes=m), i) for i, m in enumerate(minutes))
    assert dist.count == 8
    assert dist.median == timedelta(minutes=4)  # rank 4 of 4,4,4,4,4,10,30,50
    assert dist.p90 == timedelta(minutes=50)  # rank ceil(7.2) = 8
    assert dist.p90_incident_id == 0
    assert dist.max == timedelta(minutes=50)


def test_an_empty_distribution_has_no_figures() -> None:
    dist = metrics.distribution([(None, 1), (None, 2)])
    assert (dist.count, dist.median, dist.p90, dist.median_incident_id) == (0, None, None, None)


def test_it_measures_the_cloud_storage_incident() -> None:
    # 8 Oct 04:00-16:30 PDT in the region, 9 Oct 04:05-09:46 PDT in one zone: 18 h 11 min.
    spans = (
        uptime.Span(uptime.PARTIAL_OUTAGE, t(8, 11), t(8, 23, 30), incident_id=1),
        uptime.Span(uptime.PARTIAL_OUTAGE, t(9, 11, 5), t(9, 16, 46), incident_id=1),
    )
    row = metrics.incident_row(
        facts(
            detected_at=t(8, 11, 50),
            resolved_at=t(9, 16, 46),
            first_update_at=t(8, 11, 50),
            first_posted_at=t(8, 11, 50),
            last_update_at=t(9, 16, 46),
            update_count=7,
            spans=spans,
        ),
        now=NOW,
        weights=WEIGHTS,
    )
    assert row.duration == timedelta(hours=18, minutes=11)
    assert row.weighted_downtime_minutes == Decimal("327.3")  # 1091 x 0.3
    assert row.time_to_detect == timedelta(minutes=50)
    assert row.time_to_first_update == timedelta(0)
    assert row.time_to_resolve == timedelta(hours=29, minutes=46)
    assert row.update_cadence == timedelta(minutes=1736) / 6
    assert row.level == uptime.PARTIAL_OUTAGE


def test_without_a_detection_time_it_has_no_time_to_detect_and_counts_from_declaration() -> None:
    row = metrics.incident_row(
        facts(detected_at=None, first_update_at=t(8, 12, 30), first_posted_at=t(8, 12, 30), update_count=1),
        now=NOW,
        weights=WEIGHTS,
    )
    assert row.time_to_detect is None
    assert row.time_to_first_update == timedelta(minutes=30)  # from filing at 12:00
    assert row.update_cadence is None  # one update has no interval
    assert row.level == metrics.NO_IMPACT


def test_an_update_posted_before_detection_counts_as_zero() -> None:
    row = metrics.incident_row(
        facts(
            detected_at=t(8, 11, 30),
            first_update_at=t(8, 11, 10),
            first_posted_at=t(8, 11, 10),
            update_count=1,
        ),
        now=NOW,
        weights=WEIGHTS,
    )
    assert row.time_to_first_update == timedelta(0)


def test_a_backdated_first_update_counts_from_its_posting_time() -> None:
    # Posted at 12:10, shown at 11:50 (the detection): the public heard 20 minutes later.
    row = metrics.incident_row(
        facts(
            detected_at=t(8, 11, 50),
            first_update_at=t(8, 11, 50),
            first_posted_at=t(8, 12, 10),
            update_count=1,
        ),
        now=NOW,
        weights=WEIGHTS,
    )
    assert row.time_to_first_update == timedelta(minutes=20)


def test_an_open_incident_has_no_time_to_resolve_and_runs_to_now() -> None:
    now = t(8, 13)
    spans = (uptime.Span(uptime.MAJOR_OUTAGE, t(8, 11), None, incident_id=1),)
    row = metrics.incident_row(facts(detected_at=t(8, 11, 5), spans=spans), now=now, weights=WEIGHTS)
    assert row.ongoing
    assert row.time_to_resolve is None
    assert row.duration == timedelta(hours=2)
    assert row.weighted_downtime_minutes == 120


def test_a_staff_only_incident_has_no_public_update() -> None:
    row = metrics.incident_row(
        facts(is_public=False, first_update_at=t(8, 12), last_update_at=t(8, 13), update_count=2),
        now=NOW,
        weights=WEIGHTS,
    )
    assert row.time_to_first_update is None
    assert row.update_cadence is None


def test_maintenance_is_counted_apart_and_never_in_the_distributions_or_downtime() -> None:
    maintenance = metrics.incident_row(
        facts(
            incident_id=2,
            is_maintenance=True,
            detected_at=t(8, 11),
            resolved_at=t(8, 13),
            first_update_at=t(8, 11),
            spans=(uptime.Span(uptime.UNDER_MAINTENANCE, t(8, 11), t(8, 13), incident_id=2),),
        ),
        now=NOW,
        weights=WEIGHTS,
    )
    incident = metrics.incident_row(facts(detected_at=t(8, 11, 4)), now=NOW, weights=WEIGHTS)
    assert maintenance.weighted_downtime_minutes == 0
    assert maintenance.time_to_resolve is None
    period = metrics.periods(last=date(2026, 10, 1), count=1, granularity=metrics.MONTH, tz=PACIFIC)[0]
    spans = list(maintenance.facts.spans)
    summary = metrics.period_summary(
        period,
        rows=[maintenance, incident],
        downtime=metrics.product_downtime(
            spans, start=period.start, end=period.end, now=NOW, weights=WEIGHTS
        ),
        now=NOW,
    )
    assert (summary.incidents, summary.maintenance) == (1, 1)
    assert summary.response is not None
    assert summary.response.detect.count == 1
    assert summary.response.resolve.count == 0
    assert summary.downtime.weighted_minutes == 0
    assert summary.downtime.uptime.percent == Decimal("100.00")


def test_total_downtime_is_unweighted_and_a_shared_minute_counts_once() -> None:
    spans = [
        uptime.Span(uptime.MAJOR_OUTAGE, t(8, 10), t(8, 11)),
        uptime.Span(uptime.PARTIAL_OUTAGE, t(8, 10, 30), t(8, 12)),  # 30 min under the major
        uptime.Span(uptime.DEGRADED_PERFORMANCE, t(8, 12), t(8, 14)),  # weight 0: not downtime
    ]
    down = metrics.product_downtime(spans, start=t(1), end=t(1, month=11), now=NOW, weights=WEIGHTS)
    assert down.total == timedelta(hours=2)
    assert down.weighted_minutes == Decimal(60) + Decimal(60) * Decimal("0.3")
    assert down.uptime == uptime.uptime(spans, start=t(1), end=t(1, month=11), now=NOW, weights=WEIGHTS)


def test_combined_products_weigh_the_same_and_one_product_keeps_its_figure() -> None:
    start, end = t(1), t(1, month=11)
    one = metrics.product_downtime(
        [uptime.Span(uptime.MAJOR_OUTAGE, t(8, 10), t(8, 11))], start=start, end=end, now=NOW, weights=WEIGHTS
    )
    none = metrics.product_downtime([], start=start, end=end, now=NOW, weights=WEIGHTS)
    assert metrics.combined([one]).uptime == one.uptime
    both = metrics.combined([one, none])
    assert both.weighted_minutes == 60
    assert both.uptime.period_minutes == 2 * one.uptime.period_minutes
    assert both.uptime.percent > one.uptime.percent


def test_periods_are_calendar_months_and_quarters_in_the_display_zone() -> None:
    months = metrics.periods(last=date(2026, 11, 29), count=12, granularity=metrics.MONTH, tz=PACIFIC)
    assert months[0].label == "2025-12" and months[-1].label == "2026-11"
    november = months[-1]
    # 1 Nov 2026 is the DST change: the month is an hour longer than 30 days.
    assert november.end - november.start == timedelta(days=30, hours=1)
    assert november.start == datetime(2026, 11, 1, 7, 0, tzinfo=UTC)
    quarters = metrics.periods(last=date(2026, 11, 29), count=8, granularity=metrics.QUARTER, tz=PACIFIC)
    assert [q.label for q in quarters[-2:]] == ["2026 Q3", "2026 Q4"]
    assert (quarters[-1].first_day, quarters[-1].months) == (date(2026, 10, 1), 3)
    labels, years = metrics.axis_labels(quarters)
    assert labels[-1] == "Q4" and years[0] == "2025" and years[4] == "2026"


def test_the_bar_chart_scales_counts_to_whole_steps_and_keeps_the_floor() -> None:
    chart = charts.bar_chart(
        id="c",
        title="t",
        description="d",
        categories=["a", "b"],
        series=[charts.Series("n", "s", (3, 1))],
        integers=True,
    )
    assert [tick.label for tick in chart.y_ticks] == ["0", "1", "2", "3", "4"]
    uptime_chart = charts.bar_chart(
        id="u",
        title="t",
        description="d",
        categories=["a", "b"],
        series=[charts.Series("u", "s", (Decimal("100.00"), Decimal("98.50")))],
        y_min=98.0,
        y_max=100.0,
    )
    full, low = uptime_chart.bars
    assert full.y == uptime_chart.plot_top
    assert low.height == pytest.approx((uptime_chart.plot_bottom - uptime_chart.plot_top) / 4, abs=0.2)


def test_the_strip_chart_puts_values_under_a_minute_on_the_left_edge() -> None:
    chart = charts.strip_chart(
        id="s",
        title="t",
        description="d",
        rows=[
            charts.StripInput(
                "x",
                ((timedelta(0), "a"), (timedelta(hours=1), "b")),
                median=timedelta(0),
                p90=timedelta(hours=1),
            )
        ],
        value_text=metrics.format_hours,
    )
    first, second = chart.rows[0].dots
    assert first.x == chart.plot_left
    assert second.x == chart.x_ticks[-1].pos  # the axis ends at the next tick, 1 h
    assert [m.label for m in chart.rows[0].markers] == ["median 0 min", "p90 1 h"]
