"""Display uptime and the daily grid: pure arithmetic, table-driven, no database."""

from __future__ import annotations

import itertools
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest

from incidents import uptime
from incidents.models import ImpactLevel
from incidents.uptime import (
    DEGRADED_PERFORMANCE,
    MAJOR_OUTAGE,
    OPERATIONAL,
    PARTIAL_OUTAGE,
    UNDER_MAINTENANCE,
    Span,
    Weights,
)
from tests.builders import utc

PACIFIC = ZoneInfo("US/Pacific")
W = Weights()  # 1 x major + 0.3 x partial, the Statuspage rule


START = utc(2026, 10, 1)
END = utc(2026, 10, 2)  # one day: 1440 minutes
NOW = utc(2026, 11, 29)


def test_it_uses_the_model_level_strings() -> None:
    assert set(uptime.SEVERITY) - {OPERATIONAL} == set(ImpactLevel.values)


@pytest.mark.parametrize(
    ("spans", "expected_minutes"),
    [
        ([], Decimal(0)),
        # 60 major minutes count in full.
        ([Span(MAJOR_OUTAGE, utc(2026, 10, 1, 10), utc(2026, 10, 1, 11))], Decimal(60)),
        # 60 partial minutes count 0.3 each.
        ([Span(PARTIAL_OUTAGE, utc(2026, 10, 1, 10), utc(2026, 10, 1, 11))], Decimal("18.0")),
        # Degraded performance and maintenance do not count.
        ([Span(DEGRADED_PERFORMANCE, utc(2026, 10, 1, 10), utc(2026, 10, 1, 11))], Decimal(0)),
        ([Span(UNDER_MAINTENANCE, utc(2026, 10, 1, 10), utc(2026, 10, 1, 11))], Decimal(0)),
        # Two overlapping major windows on one product: 10:00-12:00 is 120 minutes, once.
        (
            [
                Span(MAJOR_OUTAGE, utc(2026, 10, 1, 10), utc(2026, 10, 1, 11)),
                Span(MAJOR_OUTAGE, utc(2026, 10, 1, 10, 30), utc(2026, 10, 1, 12)),
            ],
            Decimal(120),
        ),
        # Major 10:00-11:00 inside partial 9:00-12:00: 60 major + 120 partial x 0.3.
        (
            [
                Span(PARTIAL_OUTAGE, utc(2026, 10, 1, 9), utc(2026, 10, 1, 12)),
                Span(MAJOR_OUTAGE, utc(2026, 10, 1, 10), utc(2026, 10, 1, 11)),
            ],
            Decimal(60) + Decimal(120) * Decimal("0.3"),
        ),
        # Windows outside the period are clipped away; one crossing its start is clipped.
        (
            [
                Span(MAJOR_OUTAGE, utc(2026, 9, 30, 10), utc(2026, 9, 30, 11)),
                Span(MAJOR_OUTAGE, utc(2026, 9, 30, 23, 30), utc(2026, 10, 1, 0, 30)),
            ],
            Decimal(30),
        ),
    ],
)
def test_it_weighs_downtime_and_counts_each_minute_once(spans: list[Span], expected_minutes: Decimal) -> None:
    assert uptime.downtime_minutes(spans, start=START, end=END, now=NOW, weights=W) == expected_minutes


def test_it_takes_the_weights_from_settings_values() -> None:
    spans = [Span(PARTIAL_OUTAGE, utc(2026, 10, 1, 10), utc(2026, 10, 1, 11))]
    half = Weights.of(major=1.0, partial=0.5)
    assert half.partial == Decimal("0.5")
    # Built from the float through str(): exactly 0.3, not 0.299999...
    assert Weights.of(major=1.0, partial=0.3).partial == Decimal("0.3")
    assert uptime.downtime_minutes(spans, start=START, end=END, now=NOW, weights=half) == Decimal(30)
    degraded_counts = Weights.of(major=1, partial=0.3, degraded=0.1)
    slow = [Span(DEGRADED_PERFORMANCE, utc(2026, 10, 1, 10), utc(2026, 10, 1, 11))]
    assert uptime.downtime_minutes(slow, start=START, end=END, now=NOW, weights=degraded_counts) == Decimal(6)


@pytest.mark.parametrize(
    ("spans", "percent"),
    [
        ([], Decimal("100.00")),
        # 144 major minutes of 1440 = 90% exactly.
        ([Span(MAJOR_OUTAGE, utc(2026, 10, 1, 0), utc(2026, 10, 1, 2, 24))], Decimal("90.00")),
        # One minute down in a day: 99.930555...% is shown rounded down.
        ([Span(MAJOR_OUTAGE, utc(2026, 10, 1, 5), utc(2026, 10, 1, 5, 1))], Decimal("99.93")),
    ],
)
def test_it_rounds_the_percentage_down_explicitly(spans: list[Span], percent: Decimal) -> None:
    result = uptime.uptime(spans, start=START, end=END, now=NOW, weights=W)
    assert result.percent == percent
    assert result.period_minutes == Decimal(1440)


def test_it_never_shows_100_percent_with_downtime() -> None:
    ninety_days = uptime.uptime(
        [Span(PARTIAL_OUTAGE, utc(2026, 10, 1, 5), utc(2026, 10, 1, 5, 1))],
        start=utc(2026, 9, 1),
        end=utc(2026, 11, 30),
        now=NOW,
        weights=W,
    )
    assert ninety_days.downtime_minutes == Decimal("0.3")
    assert ninety_days.percent == Decimal("99.99")
    assert not ninety_days.is_perfect


def test_it_counts_ongoing_windows_up_to_now_and_only_the_elapsed_period() -> None:
    now = utc(2026, 10, 1, 12)
    result = uptime.uptime(
        [Span(MAJOR_OUTAGE, utc(2026, 10, 1, 11), None)], start=START, end=END, now=now, weights=W
    )
    # 60 of the 720 minutes that have happened today.
    assert result.downtime_minutes == Decimal(60)
    assert result.period_minutes == Decimal(720)
    assert result.percent == Decimal("91.66")


def test_it_ignores_windows_that_have_not_started() -> None:
    now = utc(2026, 10, 1, 12)
    future = [Span(UNDER_MAINTENANCE, utc(2026, 10, 1, 20), utc(2026, 10, 1, 22))]
    assert uptime.current_level(future, now=now) == OPERATIONAL
    (day,) = uptime.day_statuses(
        future, days=uptime.display_days(last=date(2026, 10, 1), count=1, tz=UTC), now=now, weights=W
    )
    assert day.level == OPERATIONAL


@pytest.mark.parametrize(
    ("day", "hours"),
    [
        (date(2026, 3, 7), 24),
        (date(2026, 3, 8), 23),  # spring forward in US/Pacific
        (date(2026, 11, 1), 25),  # fall back
        (date(2026, 11, 2), 24),
    ],
)
def test_it_builds_display_days_of_23_24_and_25_hours(day: date, hours: int) -> None:
    (only,) = uptime.display_days(last=day, count=1, tz=PACIFIC)
    assert only.length == timedelta(hours=hours)
    assert only.start == datetime(day.year, day.month, day.day, tzinfo=PACIFIC).astimezone(UTC)


def test_it_makes_consecutive_days_without_gaps() -> None:
    days = uptime.display_days(last=date(2026, 11, 29), count=90, tz=PACIFIC)
    assert len(days) == 90
    assert days[0].date == date(2026, 9, 1)
    assert days[-1].date == date(2026, 11, 29)
    assert all(a.end == b.start for a, b in itertools.pairwise(days))


def test_it_puts_an_incident_crossing_midnight_in_the_display_zone_on_both_days() -> None:
    # 23:30 PDT on 14 Oct to 01:00 PDT on 15 Oct: in UTC all of it is on 15 Oct.
    span = Span(PARTIAL_OUTAGE, utc(2026, 10, 15, 6, 30), utc(2026, 10, 15, 8), incident_id=7)
    days = uptime.display_days(last=date(2026, 10, 16), count=3, tz=PACIFIC)
    before, after, next_day = uptime.day_statuses([span], days=days, now=NOW, weights=W)
    assert (before.day.date, before.level) == (date(2026, 10, 14), PARTIAL_OUTAGE)
    assert before.impact == ((PARTIAL_OUTAGE, timedelta(minutes=30)),)
    assert before.downtime_minutes == Decimal(30) * Decimal("0.3")
    assert (after.day.date, after.level) == (date(2026, 10, 15), PARTIAL_OUTAGE)
    assert after.impact == ((PARTIAL_OUTAGE, timedelta(minutes=60)),)
    assert [i.incident_id for i in before.incidents] == [7]
    assert [i.incident_id for i in after.incidents] == [7]
    assert next_day.is_operational and next_day.incidents == ()
    # The same span in a UTC grid is on one day only.
    utc_days = uptime.display_days(last=date(2026, 10, 16), count=3, tz=UTC)
    assert [d.level for d in uptime.day_statuses([span], days=utc_days, now=NOW, weights=W)] == [
        OPERATIONAL,
        PARTIAL_OUTAGE,
        OPERATIONAL,
    ]


def test_it_shows_the_worst_level_of_the_day_and_its_incidents_worst_first() -> None:
    spans = [
        Span(DEGRADED_PERFORMANCE, utc(2026, 10, 1, 1), utc(2026, 10, 1, 2), incident_id=1),
        Span(MAJOR_OUTAGE, utc(2026, 10, 1, 5), utc(2026, 10, 1, 6), incident_id=2),
        Span(PARTIAL_OUTAGE, utc(2026, 10, 1, 5, 30), utc(2026, 10, 1, 7), incident_id=3),
    ]
    (day,) = uptime.day_statuses(
        spans, days=uptime.display_days(last=date(2026, 10, 1), count=1, tz=UTC), now=NOW, weights=W
    )
    assert day.level == MAJOR_OUTAGE
    assert [(i.incident_id, i.level) for i in day.incidents] == [
        (2, MAJOR_OUTAGE),
        (3, PARTIAL_OUTAGE),
        (1, DEGRADED_PERFORMANCE),
    ]
    assert day.worst_incident_id == 2
    # The partial window's first 30 minutes are major minutes already: 60 major + 60 partial.
    assert day.impact == (
        (MAJOR_OUTAGE, timedelta(minutes=60)),
        (PARTIAL_OUTAGE, timedelta(minutes=60)),
        (DEGRADED_PERFORMANCE, timedelta(minutes=60)),
    )
    assert day.downtime_minutes == Decimal(60) + Decimal(60) * Decimal("0.3")


@pytest.mark.parametrize(
    ("spans", "level"),
    [
        ([], OPERATIONAL),
        ([Span(PARTIAL_OUTAGE, utc(2026, 11, 28), utc(2026, 11, 28, 1))], OPERATIONAL),  # ended
        ([Span(PARTIAL_OUTAGE, utc(2026, 11, 28), None)], PARTIAL_OUTAGE),  # open
        (
            [
                Span(DEGRADED_PERFORMANCE, utc(2026, 11, 28), None),
                Span(MAJOR_OUTAGE, utc(2026, 11, 28, 23), None),
                Span(UNDER_MAINTENANCE, utc(2026, 11, 28), None),
            ],
            MAJOR_OUTAGE,
        ),
        ([Span(MAJOR_OUTAGE, utc(2026, 11, 28), NOW)], OPERATIONAL),  # half-open: ends exactly now
        ([Span(UNDER_MAINTENANCE, utc(2026, 11, 28), None)], UNDER_MAINTENANCE),
    ],
)
def test_it_rolls_up_the_current_level(spans: list[Span], level: str) -> None:
    assert uptime.current_level(spans, now=NOW) == level


def test_it_refuses_unknown_levels() -> None:
    with pytest.raises(ValueError, match="unknown impact level"):
        Span("on_fire", START, END)
