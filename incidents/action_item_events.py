"""Action-item events: how the incident room tells rooms above it that an item changed.

The action-item services `announce_item_change`; postmortems joins in
`AppConfig.ready()` with `action_item_event_subscribe` and keeps the item's history
(docs/adr/0022-follow-through-and-export.md). Handlers run inside the service's
transaction, as incidents.events handlers do, so the history commits with the change.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from incidents.models import ActionItem

# The fields whose changes are followed: what a commitment is (state, date, who owns it).
FOLLOWED_FIELDS = ("status", "due_date", "owner")


@dataclass(frozen=True)
class ActionItemEvent:
    item: ActionItem
    actor: User | None
    # field name -> (before, after); a new item's "before" is None.
    changes: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    reason: str = ""


Handler = Callable[[ActionItemEvent], object]
_handlers: dict[str, Handler] = {}


def action_item_event_subscribe(name: str, handler: Handler) -> None:
    """Join the registry; `name` makes a second `ready()` call replace, not duplicate."""
    _handlers[name] = handler


def announce_item_change(
    *, item: ActionItem, actor: User | None, changes: dict[str, tuple[Any, Any]], reason: str = ""
) -> None:
    followed = {
        name: pair for name, pair in changes.items() if name in FOLLOWED_FIELDS and pair[0] != pair[1]
    }
    if not followed:
        return
    event = ActionItemEvent(item=item, actor=actor, changes=followed, reason=reason)
    for handler in list(_handlers.values()):
        handler(event)
