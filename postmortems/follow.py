"""Follow-through: keeps each action item's history from the incident room's
announcements (incidents.action_item_events), and reads it for the public report, the
product page and the exports (docs/adr/0022-follow-through-and-export.md)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from django.db.models import Prefetch, QuerySet, prefetch_related_objects
from django.utils import timezone

from incidents.action_item_events import ActionItemEvent
from incidents.models import ActionItem, Incident, IncidentReport, Product
from incidents.selectors import action_items_public, incidents_public
from postmortems.follow_models import ActionItemChange


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, date):
        return value.isoformat()
    if hasattr(value, "get_username"):
        return str(value.get_username())
    return str(value)


def action_item_changes_record(event: ActionItemEvent) -> None:
    """The handler: one row per followed field that changed, stamped now."""
    now = timezone.now()
    ActionItemChange.objects.bulk_create(
        ActionItemChange(
            item=event.item,
            field=name,
            old_value=_as_text(before),
            new_value=_as_text(after),
            reason=event.reason if name == ActionItemChange.Field.STATUS else "",
            actor=event.actor,
            changed_at=now,
        )
        for name, (before, after) in event.changes.items()
    )


# --- Reads ------------------------------------------------------------------------------


@dataclass(frozen=True)
class HistoryLine:
    """One change as a reader sees it: labels for a status, dates for a due date."""

    at: datetime
    field: str
    label: str
    old: str | date | None
    new: str | date | None
    reason: str


def _shown(field: str, value: str) -> str | date | None:
    if not value:
        return None
    if field == ActionItemChange.Field.DUE_DATE:
        return date.fromisoformat(value)
    if field == ActionItemChange.Field.STATUS and value in ActionItem.Status.values:
        return str(ActionItem.Status(value).label)
    return value


def history_line(change: ActionItemChange) -> HistoryLine:
    return HistoryLine(
        at=change.changed_at,
        field=change.field,
        label=str(ActionItemChange.Field(change.field).label),
        old=_shown(change.field, change.old_value),
        new=_shown(change.field, change.new_value),
        reason=change.reason,
    )


@dataclass(frozen=True)
class Commitment:
    """A public action item as the public sees it: its state, dates and history."""

    item: ActionItem
    history: tuple[ActionItemChange, ...]
    today: date

    @property
    def is_open(self) -> bool:
        return self.item.status in ActionItem.OPEN_STATUSES

    @property
    def is_overdue(self) -> bool:
        return self.is_open and self.item.due_date is not None and self.item.due_date < self.today

    @property
    def closed(self) -> ActionItemChange | None:
        """The change that closed it (done or won't do), when it is closed."""
        if self.is_open:
            return None
        closing = [c for c in self.history if c.field == ActionItemChange.Field.STATUS]
        return closing[-1] if closing and closing[-1].new_value == self.item.status else None

    @property
    def closed_on(self) -> datetime | None:
        closed = self.closed
        return closed.changed_at if closed else None

    @property
    def reason(self) -> str:
        closed = self.closed
        return closed.reason if closed and self.item.status == ActionItem.Status.WONT_DO else ""

    @property
    def changes(self) -> tuple[HistoryLine, ...]:
        """The history after the item was first written: what moved since."""
        return tuple(history_line(c) for c in self.history if c.old_value)


def _public_changes() -> Prefetch[Any]:
    return Prefetch(
        "changes",
        queryset=ActionItemChange.objects.filter(field__in=ActionItemChange.PUBLIC_FIELDS).order_by(
            "changed_at", "id"
        ),
        to_attr="public_changes",
    )


def _commitments(items: Iterable[ActionItem], *, today: date) -> list[Commitment]:
    return [Commitment(item=i, history=tuple(getattr(i, "public_changes", ())), today=today) for i in items]


def commitments_of(items: QuerySet[ActionItem], *, now: datetime) -> list[Commitment]:
    """Items with their public history (the console's preview of the public report)."""
    items = items.prefetch_related(_public_changes()).order_by("priority", "due_date", "id")
    return _commitments(items, today=timezone.localdate(now))


def commitments_for_report(
    *, incident: Incident, report: IncidentReport | None, now: datetime
) -> list[Commitment]:
    """A published report's public items with their public history; none before publication."""
    items = action_items_public(incident=incident, report=report)  # the one visibility rule
    prefetch_related_objects(items, _public_changes())
    return _commitments(items, today=timezone.localdate(now))


def commitments_open_for_product(*, product: Product, now: datetime) -> list[Commitment]:
    """Open public items of published reports of public incidents that touched the product,
    overdue ones included (they are shown as overdue, not hidden), soonest due first."""
    incidents: QuerySet[Incident] = incidents_public().filter(windows__product=product)
    items = (
        ActionItem.objects.filter(
            is_public=True,
            status__in=ActionItem.OPEN_STATUSES,
            incident__in=incidents,
            incident__report__status=IncidentReport.Status.PUBLISHED,
        )
        .select_related("incident")
        .prefetch_related(_public_changes())
        .distinct()
        .order_by("due_date", "priority", "id")
    )
    return _commitments(items, today=timezone.localdate(now))
