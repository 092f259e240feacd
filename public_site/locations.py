"""One product's current status place by place, for its public page: the rule is
`incidents.locations` (shared with the MCP server); this adds the visible label."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from incidents.locations import location_levels, locations_catalogue
from incidents.models import ImpactWindow, Location
from public_site.pages import level_label

__all__ = ["LocationStatus", "location_statuses", "locations_catalogue"]


@dataclass(frozen=True)
class LocationStatus:
    location: Location
    level: str
    depth: int  # 0 for a top-level place, 1 for a place under it, ...

    @property
    def label(self) -> str:
        return level_label(self.level)


def location_statuses(
    *, windows: Iterable[ImpactWindow], locations: Iterable[Location], now: datetime
) -> tuple[LocationStatus, ...]:
    """Each place's current status, in tree order (see incidents.locations)."""
    return tuple(
        LocationStatus(location=row.location, level=row.level, depth=row.depth)
        for row in location_levels(windows=windows, locations=locations, now=now)
    )
