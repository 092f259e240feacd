"""Pure interval arithmetic on aware datetimes, half-open [start, end); no ORM or settings.

Every count of impact minutes (duration, history grid, uptime, SLA) builds on these, so
a minute is down once however many windows cover it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.utils.translation import pgettext


@dataclass(frozen=True, order=True)
class Interval:
    start: datetime
    end: datetime

    def __post_init__(self) -> None:
        if self.start.tzinfo is None or self.end.tzinfo is None:
            raise ValueError("intervals take aware datetimes")
        if self.end < self.start:
            raise ValueError(f"interval ends before it starts: {self.start} > {self.end}")

    @property
    def duration(self) -> timedelta:
        return self.end - self.start

    def clip(self, start: datetime, end: datetime) -> Interval | None:
        """The part of this interval inside [start, end), or None when they do not overlap."""
        lo, hi = max(self.start, start), min(self.end, end)
        if hi <= lo:
            return None
        return Interval(lo, hi)


def merge(intervals: Iterable[Interval]) -> list[Interval]:
    """Union of intervals, sorted, with overlapping and touching intervals joined."""
    merged: list[Interval] = []
    for iv in sorted(intervals):
        if iv.end == iv.start:
            continue
        if merged and iv.start <= merged[-1].end:
            last = merged[-1]
            if iv.end > last.end:
                merged[-1] = Interval(last.start, iv.end)
        else:
            merged.append(iv)
    return merged


def total(intervals: Iterable[Interval]) -> timedelta:
    """Length of the union: overlapping stretches count once."""
    return sum((iv.duration for iv in merge(intervals)), timedelta())


def clip_all(intervals: Iterable[Interval], start: datetime, end: datetime) -> list[Interval]:
    clipped = (iv.clip(start, end) for iv in intervals)
    return [iv for iv in clipped if iv is not None]


def subtract(intervals: Iterable[Interval], holes: Iterable[Interval]) -> list[Interval]:
    """The parts of `intervals` (merged) not covered by any of `holes`.

    One pass over both sorted lists (linear, not intervals x holes): a long history has
    thousands of windows per product, and the insights pages subtract them per level.
    """
    result: list[Interval] = []
    hole_list = merge(holes)
    first = 0
    for iv in merge(intervals):
        # Holes that end before this interval starts cannot touch any later one either.
        while first < len(hole_list) and hole_list[first].end <= iv.start:
            first += 1
        start = iv.start
        k = first
        while k < len(hole_list) and hole_list[k].start < iv.end:
            hole = hole_list[k]
            if start < hole.start:
                result.append(Interval(start, hole.start))
            start = max(start, hole.end)
            if start >= iv.end:
                break
            k += 1
        if start < iv.end:
            result.append(Interval(start, iv.end))
    return result


def format_duration(delta: timedelta) -> str:
    """'18 h 11 min', '1 h 30 min', '45 min', '0 min': how the pages show durations."""
    minutes = int(delta.total_seconds() // 60)
    days, rem = divmod(minutes, 24 * 60)
    hours, mins = divmod(rem, 60)
    # The unit abbreviations are translated (French writes "1 j 5 h 46 min", a no-break
    # space keeping each figure with its unit: pages and letters alike); the
    # English ones are the msgids, so English output is unchanged.
    parts = []
    if days:
        parts.append(pgettext("duration in days", "%(count)d d") % {"count": days})
    if hours:
        parts.append(pgettext("duration in hours", "%(count)d h") % {"count": hours})
    if mins or not parts:
        parts.append(pgettext("duration in minutes", "%(count)d min") % {"count": mins})
    return " ".join(parts)
