"""Which products' levels each timeline update changed, read from the incident's windows.

An update that sets levels moves the windows at its own shown time (`impact_levels_set`
at `display_at`; resolving closes them at the resolution time), so the levels a product
had just before and at that instant tell what the update changed. The first update also
answers for the impact the incident was filed with. Level changes made without a public
entry belong to no update. Used by the Statuspage formats (`affected_components`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from incidents.models import ImpactWindow, IncidentUpdate
from incidents.selectors import OPERATIONAL, worst_level


@dataclass(frozen=True)
class LevelChange:
    product_id: int
    old: str
    new: str


def _level(windows: Iterable[ImpactWindow], at: datetime, *, before: bool) -> str:
    """The worst level of `windows` just before `at` (before=True) or from `at` on."""
    if before:
        covering = (w for w in windows if w.started_at < at and (w.ended_at is None or w.ended_at >= at))
    else:
        covering = (w for w in windows if w.started_at <= at and (w.ended_at is None or w.ended_at > at))
    return worst_level(w.level for w in covering)


def update_level_changes(
    *, updates: Sequence[IncidentUpdate], windows: Sequence[ImpactWindow]
) -> dict[int, list[LevelChange]]:
    """Update id -> the products whose level it changed (in window order), for one
    incident's updates and windows (in memory: no query)."""
    by_product: dict[int, list[ImpactWindow]] = {}
    for window in windows:
        by_product.setdefault(window.product_id, []).append(window)
    ordered = sorted(updates, key=lambda u: (u.display_at, u.pk))
    result: dict[int, list[LevelChange]] = {}
    for index, update in enumerate(ordered):
        changes = []
        for product_id, own in by_product.items():
            old = OPERATIONAL if index == 0 else _level(own, update.display_at, before=True)
            new = _level(own, update.display_at, before=False)
            if old != new:
                changes.append(LevelChange(product_id=product_id, old=old, new=new))
        result[update.pk] = changes
    return result
