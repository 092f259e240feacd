"""One product's current level place by place: the rule the product page and the MCP
server share.

A window applies to its own location and to every place below it: a window with no
location (or on the root, "global") to all of them, a region's window to its zones. A
zone is listed only where it stands apart from its region, so a product is read region by
region and a zone-level incident still shows where it is. Design: docs/public-site.md.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from incidents import uptime
from incidents.models import ImpactWindow, Location


@dataclass(frozen=True)
class LocationLevel:
    location: Location
    level: str
    depth: int  # 0 for a top-level place, 1 for a place under it, ...


def locations_catalogue() -> list[Location]:
    """Every location, in one query: the places a status can be given for."""
    return list(Location.objects.only("id", "name", "display_name", "kind", "parent_id").order_by("name"))


def location_levels(
    *, windows: Iterable[ImpactWindow], locations: Iterable[Location], now: datetime
) -> tuple[LocationLevel, ...]:
    """Each place's current level for the product the windows belong to, in tree order
    (parents before their children, names in order). Pure: no query."""
    places = list(locations)
    known = {loc.pk for loc in places}
    children: dict[int | None, list[Location]] = defaultdict(list)
    for loc in places:
        # A parent outside the list makes the place top-level, never lost.
        children[loc.parent_id if loc.parent_id in known else None].append(loc)
    everywhere: list[str] = []
    here: dict[int, list[str]] = defaultdict(list)
    for w in windows:
        if w.started_at <= now and (w.ended_at is None or w.ended_at > now):
            (everywhere if w.location_id is None else here[w.location_id]).append(w.level)

    rows: list[LocationLevel] = []
    seen: set[int] = set()

    def walk(siblings: Iterable[Location], inherited: str, depth: int) -> None:
        for loc in siblings:
            if loc.pk in seen:
                continue
            seen.add(loc.pk)
            level = uptime.worst([inherited, *here.get(loc.pk, [])])
            if loc.kind != Location.Kind.ZONE or level != inherited:
                rows.append(LocationLevel(location=loc, level=level, depth=depth))
            walk(children.get(loc.pk, []), level, depth + 1)

    top = uptime.worst(everywhere)
    walk(children[None], top, 0)
    # Places whose parents loop back on each other: no root leads to them.
    walk([loc for loc in places if loc.pk not in seen], top, 0)
    return tuple(rows)
