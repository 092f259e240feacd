"""Downtime from an error-rate series, the downtime source, policy versions and the
monthly cap: hand-computed expectations, no database."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from decimal import Decimal as D

from credits import sla
from credits import sla_measured as m
from incidents.intervals import Interval

MAJOR = "major_outage"


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)  # type: ignore[arg-type,misc]


def policy(tiers: tuple[tuple[str, str], ...], cap: str | None = None) -> sla.Policy:
    return sla.Policy(
        target=D("99.9"),
        time_zone="UTC",
        weights=((MAJOR, D(1)),),
        tiers=tuple(sla.Tier(D(b), D(c)) for b, c in tiers),
        unit=sla.UNIT_PERCENT,
        cap=D(cap) if cap is not None else None,
    )


def series(rates: list[str | None], start: datetime) -> list[m.PeriodSample]:
    """Five-minute periods of 1000 valid requests each with the given error percent."""
    out = []
    for index, rate in enumerate(rates):
        lo = start + timedelta(minutes=5 * index)
        errors = None if rate is None else D(rate) * 10
        out.append(m.PeriodSample(lo, lo + timedelta(minutes=5), errors, None if rate is None else D(1000)))
    return out


DEFINITION = m.Definition(down_above=D(5), degraded_above=D(1), degraded_weight=D("0.5"), min_consecutive=2)
# 00:00..01:00: up, lone down (dropped: < 2 periods), up, down, down, degraded, gap,
# down, down, up, down (under maintenance), down.
RATES: list[str | None] = ["0", "10", "0", "10", "10", "2", None, "10", "10", "0", "10", "10"]
START = utc(2026, 3, 1, 0, 0)


def test_downtime_from_error_rates_by_period() -> None:
    maintenance = [Interval(utc(2026, 3, 1, 0, 50), utc(2026, 3, 1, 0, 55))]
    result = m.measured_downtime(series(RATES, START), DEFINITION, maintenance=maintenance)
    # 00:15-00:25 down (10) + 00:25-00:30 degraded (5 x 0.5) + 00:35-00:45 down (10)
    # + 00:55-01:00 down (5; 00:50-00:55 is maintenance) = 27.5
    assert result.downtime_minutes == D("27.5")
    assert result.down == (
        Interval(utc(2026, 3, 1, 0, 15), utc(2026, 3, 1, 0, 25)),
        Interval(utc(2026, 3, 1, 0, 35), utc(2026, 3, 1, 0, 45)),
        Interval(utc(2026, 3, 1, 0, 55), utc(2026, 3, 1, 1, 0)),
    )
    assert result.degraded == (Interval(utc(2026, 3, 1, 0, 25), utc(2026, 3, 1, 0, 30)),)
    assert result.gaps == (Interval(utc(2026, 3, 1, 0, 30), utc(2026, 3, 1, 0, 35)),)


def test_threshold_is_strict_and_minimum_of_one_keeps_a_lone_period() -> None:
    result = m.measured_downtime(series(["5", "5.1", "0"], START), m.Definition(down_above=D(5)))
    assert result.downtime_minutes == D(5)  # exactly 5 % is not above 5 %


def test_request_weighted_uptime() -> None:
    # 11 periods with data, 1000 requests each: errors 0+100+0+100+100+20+100+100+0+100+100 = 720
    assert m.request_weighted_uptime(series(RATES, START)) == D(100) * (D(11000) - D(720)) / D(11000)
    assert m.request_weighted_uptime(series([None], START)) is None


def test_gaps_are_filled_from_declared_windows_and_larger_picks_the_longer() -> None:
    p = policy((("99.9", "10"),))
    declared = [sla.Outage(utc(2026, 3, 1, 0, 25), utc(2026, 3, 1, 0, 40), MAJOR)]
    measured = m.measured_downtime(series(RATES, START), DEFINITION)
    # 32.5 measured (00:50-00:55 counts without maintenance) + 5 declared in the gap.
    start, end = START, START + timedelta(hours=1)
    got = m.sourced_downtime(declared, measured, p, source=m.SOURCE_MEASURED, start=start, end=end)
    assert (got.source, got.downtime_minutes, got.declared_minutes) == ("measured", D("37.5"), D(15))
    larger = m.sourced_downtime(declared, measured, p, source=m.SOURCE_LARGER, start=start, end=end)
    assert (larger.source, larger.downtime_minutes) == ("measured", D("37.5"))
    long_declared = [sla.Outage(START, START + timedelta(minutes=50), MAJOR)]
    larger = m.sourced_downtime(long_declared, measured, p, source=m.SOURCE_LARGER, start=start, end=end)
    assert (larger.source, larger.downtime_minutes, larger.measured_minutes) == ("declared", D(50), D("37.5"))
    # No measurement at all: the declared windows, and the whole span named as the gap.
    none = m.sourced_downtime(declared, None, p, source=m.SOURCE_MEASURED, start=start, end=end)
    assert (none.source, none.downtime_minutes, none.gaps) == ("declared", D(15), (Interval(start, end),))


A = policy((("99.9", "10"),))
B = policy((("99.9", "25"),))
VERSIONS = [m.Version(date(2025, 1, 1), A), m.Version(date(2026, 3, 16), B)]


def test_month_spanning_a_policy_change_is_computed_per_version() -> None:
    # March 2026 (UTC) has 44640 minutes: A rules 1-15 March (21600), B 16-31 (23040).
    outage = [sla.Outage(utc(2026, 3, 3, 10), utc(2026, 3, 3, 11), MAJOR)]
    got = m.compute_versioned(outage, VERSIONS, sla.Period(2026, 3))
    first, second = got.parts
    assert (first.result.period_minutes, second.result.period_minutes) == (D(21600), D(23040))
    assert first.result.downtime_minutes == D(60) and second.result.downtime_minutes == 0
    # 99.72 % on A's days earns A's 10 %, for 15 of 31 days: 150/31 = 4.8387 %.
    assert got.credit.quantize(D("0.0001")) == D("4.8387")
    late = [sla.Outage(utc(2026, 3, 20, 10), utc(2026, 3, 20, 11), MAJOR)]
    # The same hour on B's days: 25 % for 16 of 31 days = 400/31 = 12.9032 %.
    assert m.compute_versioned(late, VERSIONS, sla.Period(2026, 3)).credit.quantize(D("0.0001")) == D(
        "12.9032"
    )
    # A month wholly under one version is the plain computation.
    april = m.compute_versioned(late, VERSIONS, sla.Period(2026, 2))
    assert len(april.parts) == 1 and april.credit == 0


def test_three_incidents_in_a_month_never_exceed_the_cap() -> None:
    capped = policy((("99.9", "10"), ("99", "25"), ("95", "50")), cap="30")
    # April 2026: 43200 minutes. Each incident alone: 13 h = 780 min -> 98.19 % -> 25 %.
    outages = [
        sla.Outage(utc(2026, 4, day, 0), utc(2026, 4, day, 13), MAJOR, incident_id=day) for day in (2, 12, 22)
    ]
    for one in outages:
        assert sla.compute([one], capped, sla.Period(2026, 4)).credit == D(25)
    # Together 2340 min -> 94.58 % -> the 50 % band, held to the 30 % cap; not 3 x 25 %.
    together = sla.compute(outages, capped, sla.Period(2026, 4))
    assert (together.tier, together.credit, together.incident_ids) == (
        sla.Tier(D(95), D(50)),
        D(30),
        (2, 12, 22),
    )
    versions = [m.Version(date(2025, 1, 1), policy((("95", "50"),))), m.Version(date(2026, 4, 16), capped)]
    # 1-15 April (21600 min) holds 1560 min: 92.78 % -> 50 % x 15/30 = 25; 16-30 April
    # holds 780 min: 96.39 % -> 25 % x 15/30 = 12.5. 37.5, held to the cap of the
    # version in force at the month's end: 30.
    assert m.compute_versioned(outages, versions, sla.Period(2026, 4)).credit == D(30)
