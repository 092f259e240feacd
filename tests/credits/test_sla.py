"""The SLA arithmetic, table-driven and without a database."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal as D

import pytest

from credits import sla

MAJOR, PARTIAL, DEGRADED, MAINT = (
    "major_outage",
    "partial_outage",
    "degraded_performance",
    "under_maintenance",
)

WORKSPACE = sla.Policy(
    target=D("99.9"),
    time_zone="US/Pacific",
    weights=((MAJOR, D(1)), (PARTIAL, D(1)), (DEGRADED, D(0)), (MAINT, D(0))),
    tiers=(sla.Tier(D("99.9"), D(3)), sla.Tier(D("99.0"), D(7)), sla.Tier(D("95.0"), D(15))),
    unit=sla.UNIT_DAYS,
    min_downtime_minutes=0,
    exclude_maintenance=True,
)


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)  # type: ignore[misc,arg-type]


def policy(**kw: object) -> sla.Policy:
    fields = {f: getattr(WORKSPACE, f) for f in WORKSPACE.__dataclass_fields__}
    fields.update(kw)
    return sla.Policy(**fields)  # type: ignore[arg-type]


def out(
    start: datetime, end: datetime | None, level: str = MAJOR, *, maint: bool = False, inc: int | None = 1
) -> sla.Outage:
    return sla.Outage(start=start, end=end, level=level, maintenance=maint, incident_id=inc)


@pytest.mark.parametrize(
    "period, tz, minutes",
    [
        ("2009-09", "US/Pacific", 30 * 1440),
        ("2026-03", "US/Pacific", 31 * 1440 - 60),  # spring forward: an hour shorter
        ("2026-11", "US/Pacific", 30 * 1440 + 60),  # fall back: an hour longer
        ("2026-10", "US/Pacific", 31 * 1440),
        ("2026-03", "UTC", 31 * 1440),
        ("2026-03", "Europe/Berlin", 31 * 1440 - 60),
        ("2024-02", "UTC", 29 * 1440),  # leap year
        ("2026-12", "US/Pacific", 31 * 1440),  # year rollover
    ],
)
def test_it_measures_calendar_months_in_the_policy_time_zone(period: str, tz: str, minutes: int) -> None:
    assert sla.Period.parse(period).minutes(tz) == D(minutes)


def test_it_puts_month_bounds_at_local_midnight() -> None:
    start, end = sla.Period.parse("2009-09").bounds("US/Pacific")
    assert start == utc(2009, 9, 1, 7, 0)
    assert end == utc(2009, 10, 1, 7, 0)


@pytest.mark.parametrize("text", ["2009-9", "09-2009", "2009-13", "2009-00", "", "2009-09-01", "abcd-ef"])
def test_it_refuses_malformed_periods(text: str) -> None:
    with pytest.raises(ValueError):
        sla.Period.parse(text)


GMAIL_2009 = [out(utc(2009, 9, 1, 19, 45), utc(2009, 9, 1, 21, 15))]

CASES = [
    # (name, outages, policy, period, downtime minutes, uptime truncated to 2 places, credit)
    ("gmail 2009: 90 min major", GMAIL_2009, WORKSPACE, "2009-09", D(90), D("99.79"), D(3)),
    ("no impact", [], WORKSPACE, "2009-09", D(0), D("100.00"), D(0)),
    (
        "exactly 99.9% earns nothing (43.2 min of 43200)",
        [out(utc(2009, 9, 10, 0, 0), datetime(2009, 9, 10, 0, 43, 12, tzinfo=UTC))],
        WORKSPACE,
        "2009-09",
        D("43.2"),
        D("99.90"),
        D(0),
    ),
    (
        "one second more crosses the line",
        [out(utc(2009, 9, 10, 0, 0), datetime(2009, 9, 10, 0, 43, 13, tzinfo=UTC))],
        WORKSPACE,
        "2009-09",
        D("43.2") + D(1) / D(60),
        D("99.89"),
        D(3),
    ),
    (
        "overlapping windows count each minute once",
        [
            out(utc(2009, 9, 1, 19, 45), utc(2009, 9, 1, 21, 0), inc=1),
            out(utc(2009, 9, 1, 20, 30), utc(2009, 9, 1, 21, 15), inc=2),
            out(utc(2009, 9, 1, 20, 0), utc(2009, 9, 1, 20, 10), PARTIAL, inc=3),
        ],
        WORKSPACE,
        "2009-09",
        D(90),
        D("99.79"),
        D(3),
    ),
    (
        "windows clipped to the month (local midnight, US/Pacific)",
        [
            out(utc(2009, 9, 1, 6, 0), utc(2009, 9, 1, 8, 0)),
            out(utc(2009, 10, 1, 6, 0), utc(2009, 10, 1, 8, 0)),
        ],
        WORKSPACE,
        "2009-09",
        D(120),
        D("99.72"),
        D(3),
    ),
    (
        "maintenance excluded when the policy says",
        [out(utc(2009, 9, 5, 0, 0), utc(2009, 9, 5, 10, 0), MAJOR, maint=True)],
        WORKSPACE,
        "2009-09",
        D(0),
        D("100.00"),
        D(0),
    ),
    (
        "maintenance counted when the policy says",
        [out(utc(2009, 9, 5, 0, 0), utc(2009, 9, 5, 10, 0), MAJOR, maint=True)],
        policy(exclude_maintenance=False),
        "2009-09",
        D(600),
        D("98.61"),
        D(7),
    ),
    (
        "blips under the minimum are dropped, longer outages kept whole",
        [
            out(utc(2009, 9, 2, 0, 0), utc(2009, 9, 2, 0, 9)),
            out(utc(2009, 9, 3, 0, 0), utc(2009, 9, 3, 0, 50)),
        ],
        policy(min_downtime_minutes=10),
        "2009-09",
        D(50),
        D("99.88"),
        D(3),
    ),
    (
        "two touching blips form one countable stretch",
        [
            out(utc(2009, 9, 2, 0, 0), utc(2009, 9, 2, 0, 6)),
            out(utc(2009, 9, 2, 0, 6), utc(2009, 9, 2, 0, 12), PARTIAL),
        ],
        policy(min_downtime_minutes=10),
        "2009-09",
        D(12),
        D("99.97"),
        D(0),
    ),
    (
        "the minimum looks at the whole stretch across the month boundary",
        [out(utc(2009, 10, 1, 6, 55), utc(2009, 10, 1, 7, 20))],
        policy(min_downtime_minutes=10),
        "2009-09",
        D(5),
        D("99.98"),
        D(0),
    ),
    (
        "weights: partial outage counts 0.3, degraded 0",
        [
            out(utc(2009, 9, 2, 0, 0), utc(2009, 9, 2, 10, 0), PARTIAL),
            out(utc(2009, 9, 3, 0, 0), utc(2009, 9, 3, 10, 0), DEGRADED),
        ],
        policy(weights=((MAJOR, D(1)), (PARTIAL, D("0.3")), (DEGRADED, D(0)))),
        "2009-09",
        D(180),
        D("99.58"),
        D(3),
    ),
    (
        "overlap of levels weighs as the heaviest",
        [
            out(utc(2009, 9, 2, 0, 0), utc(2009, 9, 2, 2, 0), PARTIAL),
            out(utc(2009, 9, 2, 1, 0), utc(2009, 9, 2, 1, 30), MAJOR),
        ],
        policy(weights=((MAJOR, D(1)), (PARTIAL, D("0.5")))),
        "2009-09",
        D(30) + D(45),  # 30 major + 90 partial at 0.5
        D("99.82"),
        D(3),
    ),
    (
        "below 99.0 gives 7 days",
        [out(utc(2009, 9, 2, 0, 0), utc(2009, 9, 2, 8, 0))],
        WORKSPACE,
        "2009-09",
        D(480),
        D("98.88"),
        D(7),
    ),
    (
        "below 95.0 gives 15 days",
        [out(utc(2009, 9, 2, 0, 0), utc(2009, 9, 5, 0, 0))],
        WORKSPACE,
        "2009-09",
        D(4320),
        D("90.00"),
        D(15),
    ),
    (
        "cap limits the credit",
        [out(utc(2009, 9, 2, 0, 0), utc(2009, 9, 5, 0, 0))],
        policy(cap=D(10)),
        "2009-09",
        D(4320),
        D("90.00"),
        D(10),
    ),
    (
        "DST month: the same 90 min weigh against 44580 min in March 2026",
        [out(utc(2026, 3, 10, 0, 0), utc(2026, 3, 10, 1, 30))],
        WORKSPACE,
        "2026-03",
        D(90),
        D("99.79"),
        D(3),
    ),
    (
        "Cloud Storage 2026-10: region day then zone recurrence, 18 h 11 min",
        [
            out(utc(2026, 10, 8, 11, 0), utc(2026, 10, 8, 23, 30), PARTIAL, inc=7),
            out(utc(2026, 10, 9, 11, 5), utc(2026, 10, 9, 16, 46), PARTIAL, inc=7),
        ],
        WORKSPACE,
        "2026-10",
        D(1091),
        D("97.55"),
        D(7),
    ),
]


@pytest.mark.parametrize(
    "name, outages, pol, period, downtime, uptime, credit", CASES, ids=[c[0] for c in CASES]
)
def test_it_computes_sla_outcomes(
    name: str, outages: list[sla.Outage], pol: sla.Policy, period: str, downtime: D, uptime: D, credit: D
) -> None:
    result = sla.compute(outages, pol, sla.Period.parse(period))
    assert result.downtime_minutes == downtime
    assert sla.truncate_percent(result.uptime_percent, 2) == uptime
    assert result.credit == credit
    assert result.owed is (credit > 0)


def test_it_reports_exactly_the_incidents_that_counted() -> None:
    outages = [
        out(utc(2009, 9, 2, 0, 0), utc(2009, 9, 2, 0, 5), inc=1),  # blip
        out(utc(2009, 9, 3, 0, 0), utc(2009, 9, 3, 1, 0), inc=2),
        out(utc(2009, 9, 4, 0, 0), utc(2009, 9, 4, 1, 0), DEGRADED, inc=3),  # weight 0
        out(utc(2009, 8, 4, 0, 0), utc(2009, 8, 4, 1, 0), inc=4),  # another month
        out(utc(2009, 9, 5, 0, 0), utc(2009, 9, 5, 1, 0), maint=True, inc=5),  # excluded
    ]
    result = sla.compute(outages, policy(min_downtime_minutes=10), sla.Period.parse("2009-09"))
    assert result.incident_ids == (2,)
    assert result.downtime_minutes == D(60)


def test_it_counts_an_ongoing_window_until_now_or_the_month_end() -> None:
    ongoing = [out(utc(2009, 9, 30, 12, 0), None)]
    period = sla.Period.parse("2009-09")
    until_now = sla.compute(ongoing, WORKSPACE, period, now=utc(2009, 9, 30, 13, 0))
    assert until_now.downtime_minutes == D(60)
    whole = sla.compute(ongoing, WORKSPACE, period, now=utc(2009, 11, 1))
    assert whole.downtime_minutes == D(19 * 60)  # to local midnight, 07:00 UTC on 1 Oct


@pytest.mark.parametrize(
    "uptime, credit",
    [
        (D("100"), D(0)),
        (D("99.9"), D(0)),
        (D("99.8999999999"), D(3)),
        (D("99.0"), D(3)),
        (D("98.99"), D(7)),
        (D("95.0"), D(7)),
        (D("94.9999"), D(15)),
        (D("0"), D(15)),
    ],
)
def test_it_uses_strict_less_than_bands(uptime: D, credit: D) -> None:
    _, got = sla.credit_for(uptime, WORKSPACE.tiers)
    assert got == credit


@pytest.mark.parametrize(
    "credit, bill, amount",
    [
        (D(10), D("1000.00"), D("100.00")),
        (D(25), D("333.33"), D("83.33")),
        (D(50), D("0.05"), D("0.03")),
        (D(10), None, None),
    ],
)
def test_it_rounds_money_half_up_to_cents(credit: D, bill: D | None, amount: D | None) -> None:
    assert sla.credit_amount(credit, sla.UNIT_PERCENT, bill) == amount
    assert sla.credit_amount(credit, sla.UNIT_DAYS, bill) is None


def test_it_never_shows_an_uptime_higher_than_measured() -> None:
    # 99.89999...% must not be displayed as 99.90% next to a "< 99.9%" credit.
    assert sla.truncate_percent(D("99.899999")) == D("99.8999")
    assert sla.truncate_percent(D("99.899999"), 2) == D("99.89")
