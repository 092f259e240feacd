"""Chart layout for the server-rendered SVG charts: coordinates only, no drawing, no ORM.

The templates `insights/_bar_chart.html` and `insights/_strip_chart.html` draw what these
dataclasses describe. Colours come from classes in static/css/insights.css, never from
inline styles, so the charts render under our CSP (`style-src 'self'`, no inline script).
Coordinates are display arithmetic, so floats are fine here (the figures themselves are
Decimal and timedelta in `insights.metrics`, and are shown in the table beside each chart).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal

Number = int | float | Decimal

WIDTH = 640
LEFT = 80
RIGHT = 16
TOP = 16
BOTTOM = 58


@dataclass(frozen=True)
class Series:
    name: str
    css: str
    values: tuple[Number, ...]


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    css: str
    title: str


@dataclass(frozen=True)
class Tick:
    pos: float
    label: str
    minor: bool = False  # hidden on narrow screens
    sub: str = ""  # a second line under the label (the year under January)


@dataclass(frozen=True)
class LegendItem:
    name: str
    css: str


@dataclass(frozen=True)
class BarChart:
    id: str
    title: str
    description: str
    width: int
    height: int
    plot_left: float
    plot_right: float
    plot_top: float
    plot_bottom: float
    bars: tuple[Bar, ...]
    x_ticks: tuple[Tick, ...]
    y_ticks: tuple[Tick, ...]
    legend: tuple[LegendItem, ...]
    y_label: str

    @property
    def view_box(self) -> str:
        return f"0 0 {self.width} {self.height}"


def _r(value: float) -> float:
    return round(value, 1)


def nice_ceiling(value: float) -> float:
    """The smallest 1, 2, 2.5 or 5 x 10^n at or above `value` (at least 1)."""
    if value <= 1:
        return 1.0
    exponent = math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        candidate = step * 10**exponent
        if candidate >= value - 1e-9:
            return float(candidate)
    return float(10 ** (exponent + 1))


def number_text(value: float) -> str:
    if abs(value - round(value)) < 1e-9:
        return f"{round(value):,}"
    return f"{value:,.2f}".rstrip("0").rstrip(".")


@dataclass(frozen=True)
class _YScale:
    """Values to y coordinates: `low` on the plot's bottom edge, `high` on its top one;
    values outside are clipped."""

    low: float
    high: float
    plot_top: float
    plot_bottom: float

    @property
    def span(self) -> float:
        return max(self.high - self.low, 1e-9)

    def y_of(self, value: float) -> float:
        clipped = min(max(value, self.low), self.high)
        return self.plot_bottom - (clipped - self.low) / self.span * (self.plot_bottom - self.plot_top)


def _axis_top(peaks: Sequence[float], *, y_min: float, y_max: float | None, integers: bool) -> float:
    if y_max is not None:
        return y_max
    highest = max(peaks, default=0.0) - y_min
    if integers:
        # Counts: four whole-number steps, so no tick reads "1.25 incidents".
        step = max(1, math.ceil(highest / 4 - 1e-9))
        if step > 5:
            step = math.ceil(nice_ceiling(step))
        return y_min + 4 * step
    return nice_ceiling(highest) + y_min


def _bar_group(
    i: int,
    category: str,
    series: Sequence[Series],
    *,
    x0: float,
    group_width: float,
    stacked: bool,
    scale: _YScale,
    value_text: Callable[[Number], str],
) -> list[Bar]:
    """The bars of one category, side by side or stacked from the baseline up."""
    bars = []
    base = scale.low
    for j, s in enumerate(series):
        value = float(s.values[i])
        if stacked:
            lo, hi = base, base + value
            base = hi
            x, w = x0, group_width
        else:
            lo, hi = scale.low, value
            w = group_width / max(len(series), 1)
            x = x0 + j * w
        if value <= 0 and stacked:
            continue
        y_hi, y_lo = scale.y_of(hi), scale.y_of(lo)
        bars.append(
            Bar(
                x=_r(x),
                y=_r(y_hi),
                width=_r(max(w - (0 if stacked else 1), 1)),
                height=_r(max(y_lo - y_hi, 0 if value <= scale.low else 1)),
                css=s.css,
                title=f"{category}: {s.name} {value_text(s.values[i])}",
            )
        )
    return bars


def _x_ticks(
    categories: Sequence[str], sub_labels: Sequence[str], *, left: float, slot: float
) -> tuple[Tick, ...]:
    n = max(len(categories), 1)
    return tuple(
        Tick(
            pos=_r(left + slot * (i + 0.5)),
            label=c,
            minor=n > 6 and i % 2 == 1,
            sub=sub_labels[i] if i < len(sub_labels) else "",
        )
        for i, c in enumerate(categories)
    )


def bar_chart(
    *,
    id: str,
    title: str,
    description: str,
    categories: Sequence[str],
    series: Sequence[Series],
    sub_labels: Sequence[str] = (),
    stacked: bool = False,
    integers: bool = False,
    y_min: float = 0.0,
    y_max: float | None = None,
    y_label: str = "",
    value_text: Callable[[Number], str] = lambda v: number_text(float(v)),
    height: int = 300,
) -> BarChart:
    """Vertical bars per category, series side by side or stacked. Values below `y_min`
    are drawn at the baseline (the uptime chart starts at a floor, not at zero)."""
    n = max(len(categories), 1)
    plot_left, plot_right = float(LEFT), float(WIDTH - RIGHT)
    plot_top, plot_bottom = float(TOP), float(height - BOTTOM)
    if stacked:
        peaks = [sum(float(s.values[i]) for s in series) for i in range(len(categories))]
    else:
        peaks = [float(v) for s in series for v in s.values]
    top = _axis_top(peaks, y_min=y_min, y_max=y_max, integers=integers)
    scale = _YScale(low=y_min, high=top, plot_top=plot_top, plot_bottom=plot_bottom)
    slot = (plot_right - plot_left) / n
    group_width = slot * 0.72
    bars = [
        bar
        for i, category in enumerate(categories)
        for bar in _bar_group(
            i,
            category,
            series,
            x0=plot_left + slot * i + (slot - group_width) / 2,
            group_width=group_width,
            stacked=stacked,
            scale=scale,
            value_text=value_text,
        )
    ]
    x_ticks = _x_ticks(categories, sub_labels, left=plot_left, slot=slot)
    y_ticks = tuple(
        Tick(pos=_r(scale.y_of(value)), label=value_text(_tick_value(value)))
        for value in (y_min + scale.span * k / 4 for k in range(5))
    )
    return BarChart(
        id=id,
        title=title,
        description=description,
        width=WIDTH,
        height=height,
        plot_left=plot_left,
        plot_right=plot_right,
        plot_top=plot_top,
        plot_bottom=plot_bottom,
        bars=tuple(bars),
        x_ticks=x_ticks,
        y_ticks=y_ticks,
        legend=tuple(LegendItem(name=s.name, css=s.css) for s in series),
        y_label=y_label,
    )


def _tick_value(value: float) -> Number:
    return Decimal(str(round(value, 4))).normalize()


# --- Distributions: one dot per incident on a log time axis ---------------------------------------


@dataclass(frozen=True)
class Dot:
    x: float
    y: float
    title: str


@dataclass(frozen=True)
class Marker:
    x: float
    y1: float
    y2: float
    label: str
    css: str


@dataclass(frozen=True)
class StripRow:
    label: str
    y: float  # the row's axis line
    label_y: float
    dots: tuple[Dot, ...]
    markers: tuple[Marker, ...]
    empty: bool


@dataclass(frozen=True)
class StripChart:
    id: str
    title: str
    description: str
    width: int
    height: int
    plot_left: float
    plot_right: float
    rows: tuple[StripRow, ...]
    x_ticks: tuple[Tick, ...]
    axis_y: float

    @property
    def view_box(self) -> str:
        return f"0 0 {self.width} {self.height}"


# Tick candidates of the time axis, in seconds, with their labels.
TIME_TICKS: tuple[tuple[int, str], ...] = (
    (60, "1 min"),
    (300, "5 min"),
    (900, "15 min"),
    (3600, "1 h"),
    (4 * 3600, "4 h"),
    (12 * 3600, "12 h"),
    (86400, "1 d"),
    (3 * 86400, "3 d"),
    (7 * 86400, "1 w"),
    (30 * 86400, "30 d"),
    (90 * 86400, "90 d"),
)
_MINOR_TICKS = {"5 min", "4 h", "3 d", "30 d"}


@dataclass(frozen=True)
class StripInput:
    label: str
    points: tuple[tuple[timedelta, str], ...]  # (value, title of the incident)
    median: timedelta | None
    p90: timedelta | None


def strip_chart(
    *,
    id: str,
    title: str,
    description: str,
    rows: Sequence[StripInput],
    value_text: Callable[[timedelta], str],
) -> StripChart:
    """A row of dots per metric on a shared log scale from one minute up. Values under a
    minute (an update posted at detection) sit on the axis's left edge."""
    row_height = 72.0
    top = 16.0
    longest = max((p[0].total_seconds() for r in rows for p in r.points), default=3600.0)
    ticks = [t for t in TIME_TICKS if t[0] < longest]
    upper = next((t for t in TIME_TICKS if t[0] >= longest), TIME_TICKS[-1])
    ticks = [*ticks, upper]
    if len(ticks) < 2:
        ticks = list(TIME_TICKS[:2])
    lo, hi = math.log(ticks[0][0]), math.log(ticks[-1][0])
    # Room either side for the first and last tick labels, centred on their ticks.
    plot_left, plot_right = 44.0, float(WIDTH - 32)

    def x_of(seconds: float) -> float:
        value = math.log(max(seconds, ticks[0][0]))
        return plot_left + (min(value, hi) - lo) / max(hi - lo, 1e-9) * (plot_right - plot_left)

    out_rows = []
    for index, row in enumerate(rows):
        y = top + row_height * index + 40
        dots = tuple(
            Dot(
                x=_r(x_of(value.total_seconds())),
                # A small fixed vertical spread so equal values stay countable.
                y=_r(y - 10 + (i % 5) * 5),
                title=f"{label}: {value_text(value)}",
            )
            for i, (value, label) in enumerate(row.points)
        )
        markers = []
        for name, css, value in (("median", "marker--median", row.median), ("p90", "marker--p90", row.p90)):
            if value is not None:
                markers.append(
                    Marker(
                        x=_r(x_of(value.total_seconds())),
                        y1=_r(y - 14),
                        y2=_r(y + 14),
                        label=f"{name} {value_text(value)}",
                        css=css,
                    )
                )
        out_rows.append(
            StripRow(
                label=row.label,
                y=_r(y),
                label_y=_r(y - 22),
                dots=dots,
                markers=tuple(markers),
                empty=not dots,
            )
        )
    axis_y = top + row_height * len(rows) + 20
    return StripChart(
        id=id,
        title=title,
        description=description,
        width=WIDTH,
        height=int(axis_y + 28),
        plot_left=plot_left,
        plot_right=plot_right,
        rows=tuple(out_rows),
        x_ticks=tuple(
            Tick(pos=_r(x_of(seconds)), label=label, minor=label in _MINOR_TICKS) for seconds, label in ticks
        ),
        axis_y=_r(axis_y),
    )
