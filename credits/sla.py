"""Contractual SLA arithmetic: calendar periods, weighted downtime, uptime, tiers, credits.

Pure: no ORM, no settings, `Decimal` throughout, intervals half-open. The rules and the
order they apply in (maintenance, weights, merging, the minimum-downtime rule, strict
tiers, explicit rounding) are in docs/adr/0007-sla-credits.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import ROUND_DOWN, ROUND_HALF_UP, Decimal
from itertools import pairwise
from typing import TypeVar
from zoneinfo import ZoneInfo

from incidents.intervals import Interval, merge

HUNDRED = Decimal(100)
SECONDS_PER_MINUTE = Decimal(60)
UNIT_DAYS = "days"
UNIT_PERCENT = "percent"

Tag = TypeVar("Tag")

_PERIOD = re.compile(r"^(\d{4})-(\d{2})$")


@dataclass(frozen=True, order=True)
class Period:
    """A calendar month, 'YYYY-MM'."""

    year: int
    month: int

    def __post_init__(self) -> None:
        if not 1 <= self.month <= 12 or not 1970 <= self.year <= 9998:
            raise ValueError(f"not a month: {self.year}-{self.month}")

    @classmethod
    def parse(cls, text: str) -> Period:
        match = _PERIOD.match((text or "").strip())
        if not match:
            raise ValueError(f"a period is written YYYY-MM, got {text!r}")
        return cls(int(match.group(1)), int(match.group(2)))

    def __str__(self) -> str:
        return f"{self.year:04d}-{self.month:02d}"

    def next(self) -> Period:
        return Period(self.year + 1, 1) if self.month == 12 else Period(self.year, self.month + 1)

    def previous(self) -> Period:
        return Period(self.year - 1, 12) if self.month == 1 else Period(self.year, self.month - 1)

    @classmethod
    def containing(cls, day: date) -> Period:
        return cls(day.year, day.month)

    def bounds(self, time_zone: str) -> tuple[datetime, datetime]:
        """[start, end) of the month in `time_zone`, as UTC datetimes."""
        tz = ZoneInfo(time_zone)
        nxt = self.next()
        start = datetime(self.year, self.month, 1, tzinfo=tz).astimezone(UTC)
        end = datetime(nxt.year, nxt.month, 1, tzinfo=tz).astimezone(UTC)
        return start, end

    def minutes(self, time_zone: str) -> Decimal:
        # Subtracting in UTC: aware datetimes sharing a ZoneInfo subtract as wall-clock
        # times, which would hide the DST hour.
        start, end = self.bounds(time_zone)
        return _minutes(end - start)


@dataclass(frozen=True)
class Tier:
    """Uptime strictly below `below` (percent) earns `credit` (days or percent of bill)."""

    below: Decimal
    credit: Decimal


@dataclass(frozen=True)
class Policy:
    target: Decimal
    time_zone: str
    weights: tuple[tuple[str, Decimal], ...]  # (impact level, weight 0..1)
    tiers: tuple[Tier, ...]
    unit: str = UNIT_DAYS
    min_downtime_minutes: int = 0
    exclude_maintenance: bool = True
    cap: Decimal | None = None

    def weight(self, level: str) -> Decimal:
        return dict(self.weights).get(level, Decimal(0))


@dataclass(frozen=True)
class Outage:
    """One impact window as the maths sees it; `end` None means still ongoing."""

    start: datetime
    end: datetime | None
    level: str
    maintenance: bool = False
    incident_id: int | None = None


@dataclass(frozen=True)
class SlaResult:
    period: Period
    period_minutes: Decimal
    downtime_minutes: Decimal  # exact (weighted)
    uptime_percent: Decimal  # exact
    tier: Tier | None
    credit: Decimal  # after the cap
    incident_ids: tuple[int, ...] = field(default=())

    @property
    def downtime_minutes_rounded(self) -> Decimal:
        return self.downtime_minutes.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)

    @property
    def uptime_percent_rounded(self) -> Decimal:
        return truncate_percent(self.uptime_percent)

    @property
    def owed(self) -> bool:
        return self.credit > 0


def _minutes(delta: timedelta) -> Decimal:
    # Whole microseconds as integers: exact, no float on the way.
    micro = (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds
    return Decimal(micro) / Decimal(1_000_000) / SECONDS_PER_MINUTE


def truncate_percent(value: Decimal, places: int = 4) -> Decimal:
    # Truncated, never rounded up: a reported 99.90 % cannot carry a "< 99.9 %" credit.
    return value.quantize(Decimal(1).scaleb(-places), rounding=ROUND_DOWN)


def money(value: Decimal) -> Decimal:
    return value.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)


def credit_for(
    uptime: Decimal, tiers: Sequence[Tier], cap: Decimal | None = None
) -> tuple[Tier | None, Decimal]:
    """The most severe tier whose band the uptime is strictly below, and its capped credit."""
    # Strict bands on the exact value: exactly 99.9 % earns nothing under "< 99.9 %".
    matching = [t for t in tiers if uptime < t.below]
    if not matching:
        return None, Decimal(0)
    tier = min(matching, key=lambda t: t.below)
    credit = tier.credit if cap is None else min(tier.credit, cap)
    return tier, credit


def _counted(
    outages: Iterable[Outage], policy: Policy, horizon: datetime
) -> list[tuple[Interval, Decimal, int | None]]:
    """The outages that count under `policy`, with their weights; an ongoing one runs to
    `horizon`."""
    counted = []
    for outage in outages:
        if outage.maintenance and policy.exclude_maintenance:
            continue
        weight = policy.weight(outage.level)
        stop = outage.end if outage.end is not None else horizon
        if weight > 0 and stop > outage.start:
            counted.append((Interval(outage.start, stop), weight, outage.incident_id))
    return counted


def long_stretches(intervals: Iterable[Interval], minimum_minutes: int) -> list[Interval]:
    """Merged stretches of downtime at least `minimum_minutes` long. Judged on the whole
    stretch, before clipping to the month: an outage across the month's end is not two
    blips."""
    minimum = timedelta(minutes=minimum_minutes)
    return [s for s in merge(intervals) if s.duration >= minimum]


def covered_segments(
    pieces: Sequence[tuple[Interval, Decimal, Tag]],
) -> Iterator[tuple[datetime, datetime, list[tuple[Decimal, Tag]]]]:
    """The elementary segments between all boundaries of `pieces` that some piece covers,
    each with the (weight, tag) of every piece covering it."""
    cuts = sorted({p.start for p, _, _ in pieces} | {p.end for p, _, _ in pieces})
    for lo, hi in pairwise(cuts):
        covering = [(w, tag) for p, w, tag in pieces if p.start <= lo and hi <= p.end]
        if covering:
            yield lo, hi, covering


def weighted_downtime(
    outages: Iterable[Outage], policy: Policy, *, start: datetime, end: datetime, now: datetime | None = None
) -> tuple[Decimal, tuple[int, ...]]:
    """Weighted downtime minutes inside [start, end) and the incidents that contributed."""
    horizon = min(end, now) if now is not None else end
    counted = _counted(outages, policy, horizon)
    total = Decimal(0)
    incidents: set[int] = set()
    for stretch in long_stretches((iv for iv, _, _ in counted), policy.min_downtime_minutes):
        clipped = stretch.clip(start, end)
        if clipped is None:
            continue
        pieces = [
            (p, w, inc) for iv, w, inc in counted if (p := iv.clip(clipped.start, clipped.end)) is not None
        ]
        # A minute covered by several windows is down once, at the heaviest level.
        for lo, hi, covering in covered_segments(pieces):
            total += _minutes(hi - lo) * max(w for w, _ in covering)
            incidents.update(inc for _, inc in covering if inc is not None)
    return total, tuple(sorted(incidents))


def compute(
    outages: Iterable[Outage], policy: Policy, period: Period, *, now: datetime | None = None
) -> SlaResult:
    """The SLA outcome of one customer under one policy for one month."""
    start, end = period.bounds(policy.time_zone)
    period_minutes = _minutes(end - start)
    downtime, incident_ids = weighted_downtime(outages, policy, start=start, end=end, now=now)
    uptime = HUNDRED * (period_minutes - downtime) / period_minutes
    tier, credit = credit_for(uptime, policy.tiers, policy.cap)
    return SlaResult(
        period=period,
        period_minutes=period_minutes,
        downtime_minutes=downtime,
        uptime_percent=uptime,
        tier=tier,
        credit=credit,
        incident_ids=incident_ids if credit > 0 or downtime > 0 else (),
    )


def credit_amount(credit: Decimal, unit: str, monthly_bill: Decimal | None) -> Decimal | None:
    """Money owed for a percent-of-bill credit (cents, half up); None for day credits."""
    if unit != UNIT_PERCENT or monthly_bill is None:
        return None
    return money(monthly_bill * credit / HUNDRED)


def claim_deadline(sent_on: date, window_days: int) -> date:
    """The last day to dispute a letter sent on `sent_on`: the policy's window after it
    (at least one day), so never in the past on the day the letter goes out."""
    return sent_on + timedelta(days=max(1, window_days))
