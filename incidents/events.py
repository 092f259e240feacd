"""Domain events: how the incident room tells rooms above it that something happened.

Services `announce`; rooms join in `AppConfig.ready()` with `incident_event_subscribe`.
Handlers run inside the service's transaction, so their rows commit or roll back with it
(docs/adr/0001-rooms-and-layers.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from incidents.models import Incident, IncidentReport, IncidentUpdate

# What the services announce. "opened", "updated" and "resolved" carry the timeline
# update they posted; "report_published" carries the report; "impact_changed" carries
# the products whose counted impact changed (windows added, moved, closed or deleted, a
# draft published, an incident deleted). "recorded" carries the products whose windows
# may have changed, for any change to what staff figures read (times, visibility,
# windows, deletion), drafts included, which "impact_changed" leaves out.
# "report_status_changed" (the report's new status is on it) and "report_revised" (a
# published report's text changed) carry the report and the `actor`, for the review log.
KINDS = (
    "opened",
    "updated",
    "resolved",
    "report_published",
    "impact_changed",
    "recorded",
    "report_status_changed",
    "report_revised",
)


@dataclass(frozen=True)
class IncidentEvent:
    kind: str
    incident: Incident
    update: IncidentUpdate | None = None
    report: IncidentReport | None = None
    products: frozenset[int] = frozenset()
    actor: Any = None  # the person who acted, when one did (None: the system)


Handler = Callable[[IncidentEvent], object]
_handlers: dict[str, Handler] = {}


def incident_event_subscribe(name: str, handler: Handler) -> None:
    """Join the registry; `name` makes a second `ready()` call replace, not duplicate."""
    _handlers[name] = handler


def announce(
    *,
    kind: str,
    incident: Incident,
    update: IncidentUpdate | None = None,
    report: IncidentReport | None = None,
    products: frozenset[int] = frozenset(),
    actor: Any = None,
) -> None:
    if kind not in KINDS:
        raise ValueError(f"unknown incident event kind {kind!r}")
    event = IncidentEvent(
        kind=kind, incident=incident, update=update, report=report, products=products, actor=actor
    )
    for handler in list(_handlers.values()):
        handler(event)


# Products that moved to another group, or out of one (their group edited away or
# deleted): what rooms that count per group must recount. Not about one incident, so a
# registry of its own.
RegroupHandler = Callable[[frozenset[int]], object]
_regroup_handlers: dict[str, RegroupHandler] = {}


def regrouped_subscribe(name: str, handler: RegroupHandler) -> None:
    """Join the registry; `name` makes a second `ready()` call replace, not duplicate."""
    _regroup_handlers[name] = handler


def announce_regrouped(*, products: frozenset[int]) -> None:
    """Inside the service's transaction, after the products' group was written."""
    if not products:
        return
    for handler in list(_regroup_handlers.values()):
        handler(products)
