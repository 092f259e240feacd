"""Why a notice says what it says: every impact window, counted or not, and its minutes.

Pure: no ORM. It follows `credits.sla.weighted_downtime` rule by rule (see that module's
doc) and additionally attributes each weighted minute to exactly one window, so that the
counted windows' minutes add up to the notice's downtime. Where windows overlap, a minute
goes to the heaviest window covering it (the lowest id among equals): the overlap is not
charged twice, and the breakdown says which window got it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from itertools import pairwise

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
    clipped_minutes: Decimal  # its own length inside the month (unweighted, exact)

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
    candidates: list[tuple[WindowInput, Interval, Decimal]] = []
    order: list[int] = []
    for w in windows:
        o = w.outage
        weight = policy.weight(o.level)
        stop = o.end if o.end is not None else horizon
        base: dict[str, object] = {
            "id": w.id,
            "product": w.product,
            "location": w.location,
            "level": o.level,
            "incident_id": o.incident_id,
            "weight": weight,
            "minutes": Decimal(0),
        }
        order.append(w.id)
        clip = Interval(o.start, stop).clip(start, end) if stop > o.start else None
        base["start"] = clip.start if clip else o.start
        base["end"] = clip.end if clip else o.end
        base["clipped_minutes"] = sla._minutes(clip.duration) if clip else Decimal(0)
        lines[w.id] = base
        if not w.entitled:
            base["reason"] = NOT_ENTITLED
        elif o.maintenance and policy.exclude_maintenance:
            base["reason"] = MAINTENANCE
        elif weight <= 0:
            base["reason"] = ZERO_WEIGHT
        elif stop <= o.start:
            base["reason"] = EMPTY
        else:
            base["reason"] = OUTSIDE if clip is None else COUNTED
            candidates.append((w, Interval(o.start, stop), weight))

    # The blip rule looks at whole merged stretches, before clipping (sla rule 4): a window
    # outside the month still counts towards its stretch's length.
    minimum = timedelta(minutes=policy.min_downtime_minutes)
    stretches = merge(iv for _, iv, _ in candidates)
    long_enough = [s for s in stretches if s.duration >= minimum]
    total = Decimal(0)
    for w, iv, _ in candidates:
        if lines[w.id]["reason"] == COUNTED and not any(
            s.start <= iv.start and iv.end <= s.end for s in long_enough
        ):
            lines[w.id]["reason"] = BLIP
    for stretch in long_enough:
        clipped = stretch.clip(start, end)
        if clipped is None:
            continue
        pieces = []
        for w, iv, weight in candidates:
            piece = iv.clip(clipped.start, clipped.end)
            if piece is not None:
                pieces.append((piece, weight, w.id))
        cuts = sorted({p.start for p, _, _ in pieces} | {p.end for p, _, _ in pieces})
        for lo, hi in pairwise(cuts):
            covering = [(w, wid) for p, w, wid in pieces if p.start <= lo and hi <= p.end]
            if not covering:
                continue
            heaviest = max(w for w, _ in covering)
            owner = min(wid for w, wid in covering if w == heaviest)
            minutes = sla._minutes(hi - lo) * heaviest
            lines[owner]["minutes"] = lines[owner]["minutes"] + minutes  # type: ignore[operator]
            total += minutes
    built = [WindowLine(**lines[i]) for i in order]  # type: ignore[arg-type]
    built.sort(key=lambda line: (line.start, line.id))
    return Breakdown(
        counted=tuple(line for line in built if line.counted),
        not_counted=tuple(line for line in built if not line.counted),
        total=total,
    )
