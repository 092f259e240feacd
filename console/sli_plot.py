"""A server-rendered line chart of an SLI source's error rate (no JavaScript): the
points become SVG polylines in a fixed viewBox, broken where data is missing, with a
text summary for screen readers and a table of the hourly worst periods."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

WIDE = (1000, 240, 5)  # viewBox width and height, x ticks: wide screens
NARROW = (360, 260, 3)  # phones: fewer, larger labels
LEFT, RIGHT, TOP, BOTTOM = 48, 12, 12, 28  # margins inside the viewBox, for the axis labels
HUNDRED = Decimal(100)


@dataclass(frozen=True)
class Tick:
    at: float  # position in the viewBox
    label: str = ""
    moment: datetime | None = None  # an x tick's time (the template formats it)


@dataclass(frozen=True)
class HourRow:
    start: datetime
    worst: Decimal | None  # the highest period error rate in the hour, None without data


@dataclass(frozen=True)
class Plot:
    lines: list[str]  # SVG "x,y x,y" point lists, one per unbroken run of data
    dots: list[tuple[float, float]]  # lone points (a run of one has no line to draw)
    y_ticks: list[Tick]
    x_ticks: list[Tick]
    threshold_y: float | None
    points: int
    expected: int
    lowest: Decimal | None
    highest: Decimal | None
    mean: Decimal | None
    hours: list[HourRow]
    start: datetime
    end: datetime
    width: int
    height: int
    left: int = LEFT
    top: int = TOP

    @property
    def right_edge(self) -> int:
        return self.width - RIGHT

    @property
    def bottom_edge(self) -> int:
        return self.height - BOTTOM


def rates(counts: dict[datetime, tuple[Decimal, Decimal]]) -> dict[datetime, Decimal]:
    """{period end: error rate in percent}; a period without valid requests is a gap."""
    return {at: HUNDRED * errors / valid for at, (errors, valid) in counts.items() if valid > 0}


def _ceiling(value: Decimal) -> Decimal:
    """A round top for the y axis at or above `value`."""
    for top in (Decimal(1), Decimal(2), Decimal(5), Decimal(10), Decimal(20), Decimal(50)):
        if value <= top:
            return top
    return HUNDRED


def _percent(value: Decimal) -> str:
    text = f"{value.quantize(Decimal('0.01')):f}".rstrip("0").rstrip(".")
    return f"{text}%"


def plot(
    points: dict[datetime, Decimal],
    *,
    start: datetime,
    end: datetime,
    step: timedelta,
    threshold: Decimal | None = None,
    size: tuple[int, int, int] = WIDE,
) -> Plot:
    """The chart of `points` (percent) stamped at period ends in (start, end]."""
    width, height, x_count = size
    values = list(points.values())
    top = _ceiling(max([*values, threshold or Decimal(0), Decimal(0)]))
    span = (end - start).total_seconds() or 1.0
    inner_w, inner_h = width - LEFT - RIGHT, height - TOP - BOTTOM

    def x(at: datetime) -> float:
        return round(LEFT + inner_w * (at - start).total_seconds() / span, 1)

    def y(value: Decimal) -> float:
        return round(TOP + inner_h * float(1 - min(value, top) / top), 1)

    runs: list[list[tuple[float, float]]] = []
    at, previous = start + step, False
    while at <= end:
        value = points.get(at)
        if value is None:
            previous = False
        else:
            if not previous:
                runs.append([])
            runs[-1].append((x(at), y(value)))
            previous = True
        at += step
    lines = [" ".join(f"{px},{py}" for px, py in run) for run in runs if len(run) > 1]
    dots = [run[0] for run in runs if len(run) == 1]
    y_ticks = [Tick(y(top * k / 4), _percent(top * k / 4)) for k in range(5)]
    moments = (start + (end - start) * k / (x_count - 1) for k in range(x_count))
    x_ticks = [Tick(x(moment), moment=moment) for moment in moments]
    return Plot(
        lines=lines,
        dots=dots,
        y_ticks=y_ticks,
        x_ticks=x_ticks,
        threshold_y=y(threshold) if threshold is not None and threshold <= top else None,
        points=len(values),
        expected=int((end - start) / step),
        lowest=min(values) if values else None,
        highest=max(values) if values else None,
        mean=(sum(values, Decimal(0)) / len(values)).quantize(Decimal("0.001")) if values else None,
        hours=_hours(points, start, end),
        start=start,
        end=end,
        width=width,
        height=height,
    )


def _hours(points: dict[datetime, Decimal], start: datetime, end: datetime) -> list[HourRow]:
    rows = []
    hour = start
    while hour < end:
        inside = [v for at, v in points.items() if hour < at <= hour + timedelta(hours=1)]
        rows.append(HourRow(hour, max(inside) if inside else None))
        hour += timedelta(hours=1)
    return rows
