"""Why a notice says what it says: every impact window, counted or not, and its minutes.

Pure: no ORM. It follows `credits.sla.weighted_downtime` rule by rule and charges each
weighted minute to exactly one window (the heaviest covering it, the lowest id among
equals), so the counted windows add up to the notice's downtime. See
docs/adr/0007-sla-credits.md.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal

from credits import sla
from incidents.intervals import Interval, merge

COUNTED = "counted"
MAINTENANCE = "maintenance excluded"
ZERO_WEIGHT = "level not counted by this policy (weight 0)"
BLIP = "under the minimum downtime period"
NOT_ENTITLED = "not entitled (product or location not in the contract)"
OUTSIDE = "outside the month"
EMPTY = "no duration"


@dataclass(frozen=True)
class WindowInput:
    id: int
    product: str
    location: str  # "" for the product everywhere
    entitled: bool
    outage: sla.Outage


@dataclass(frozen=True)
class WindowLine:
    id: int
    product: str
    location: str
    level: str
    start: datetime
    end: datetime | None
    incident_id: int | None
    weight: Decimal
    reason: str  # COUNTED or why not
    minutes: Decimal  # weighted minutes charged to this window (exact); 0 unless counted

    @property
    def level_label(self) -> str:
        return self.level.replace("_", " ")

    @property
    def counted(self) -> bool:
        return self.reason == COUNTED

    @property
    def minutes_rounded(self) -> Decimal:
        return self.minutes.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)


@dataclass(frozen=True)
class Breakdown:
    counted: tuple[WindowLine, ...]
    not_counted: tuple[WindowLine, ...]
    total: Decimal  # exact weighted minutes; equals sla.weighted_downtime's

    @property
    def total_rounded(self) -> Decimal:
        return self.total.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)

    def incident_spans(self) -> dict[int, tuple[timedelta, datetime, datetime]]:
        """Per incident: the customer's own affected time (the union of its counted
        windows inside the month), and its first start and last end."""
        spans: dict[int, list[Interval]] = {}
        for line in self.counted:
            if line.incident_id is None or line.end is None:
                continue
            spans.setdefault(line.incident_id, []).append(Interval(line.start, line.end))
        out: dict[int, tuple[timedelta, datetime, datetime]] = {}
        for incident_id, intervals in spans.items():
            merged = merge(intervals)
            total = sum((iv.duration for iv in merged), timedelta())
            out[incident_id] = (total, merged[0].start, merged[-1].end)
        return out


_Candidate = tuple[WindowInput, Interval, Decimal]  # a window that may count, its span, weight


def explain(
    windows: Iterable[WindowInput],
    policy: sla.Policy,
    period: sla.Period,
    *,
    now: datetime | None = None,
) -> Breakdown:
    start, end = period.bounds(policy.time_zone)
    horizon = min(end, now) if now is not None else end
    lines: dict[int, dict[str, object]] = {}
    candidates: list[_Candidate] = []
    for w in windows:
        lines[w.id], candidate = _line(w, policy, start=start, end=end, horizon=horizon)
        if candidate is not None:
            candidates.append(candidate)
    # A window outside the month still counts towards its stretch's length.
    long_enough = sla.long_stretches((iv for _, iv, _ in candidates), policy.min_downtime_minutes)
    for w, iv, _ in candidates:
        if lines[w.id]["reason"] == COUNTED and not any(
            s.start <= iv.start and iv.end <= s.end for s in long_enough
        ):
            lines[w.id]["reason"] = BLIP
    total = _charge(lines, candidates, long_enough, start=start, end=end)
    built = sorted((WindowLine(**line) for line in lines.values()), key=lambda line: (line.start, line.id))  # type: ignore[arg-type]
    return Breakdown(
        counted=tuple(line for line in built if line.counted),
        not_counted=tuple(line for line in built if not line.counted),
        total=total,
    )


def _line(
    w: WindowInput, policy: sla.Policy, *, start: datetime, end: datetime, horizon: datetime
) -> tuple[dict[str, object], _Candidate | None]:
    """The window's line (its reason provisional: the blip rule needs every window), and
    the window as a candidate when it may count."""
    o = w.outage
    weight = policy.weight(o.level)
    stop = o.end if o.end is not None else horizon
    clip = Interval(o.start, stop).clip(start, end) if stop > o.start else None
    reason = _reason(w, policy, weight=weight, stop=stop, clip=clip)
    line: dict[str, object] = {
        "id": w.id,
        "product": w.product,
        "location": w.location,
        "level": o.level,
        "incident_id": o.incident_id,
        "weight": weight,
        "minutes": Decimal(0),
        "start": clip.start if clip else o.start,
        "end": clip.end if clip else o.end,
        "reason": reason,
    }
    candidate = (w, Interval(o.start, stop), weight) if reason in (COUNTED, OUTSIDE) else None
    return line, candidate


def _reason(
    w: WindowInput, policy: sla.Policy, *, weight: Decimal, stop: datetime, clip: Interval | None
) -> str:
    o = w.outage
    if not w.entitled:
        return NOT_ENTITLED
    if o.maintenance and policy.exclude_maintenance:
        return MAINTENANCE
    if weight <= 0:
        return ZERO_WEIGHT
    if stop <= o.start:
        return EMPTY
    return OUTSIDE if clip is None else COUNTED


def _charge(
    lines: dict[int, dict[str, object]],
    candidates: list[_Candidate],
    long_enough: list[Interval],
    *,
    start: datetime,
    end: datetime,
) -> Decimal:
    """Charge each weighted minute of the month to one window; the total."""
    total = Decimal(0)
    for stretch in long_enough:
        clipped = stretch.clip(start, end)
        if clipped is None:
            continue
        pieces = [
            (p, weight, w.id)
            for w, iv, weight in candidates
            if (p := iv.clip(clipped.start, clipped.end)) is not None
        ]
        for lo, hi, covering in sla.covered_segments(pieces):
            heaviest = max(weight for weight, _ in covering)
            owner = min(wid for weight, wid in covering if weight == heaviest)
            minutes = sla._minutes(hi - lo) * heaviest
            lines[owner]["minutes"] = lines[owner]["minutes"] + minutes  # type: ignore[operator]
            total += minutes
    return total
