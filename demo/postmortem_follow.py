"""Demo follow-through: the seeded reports' action items get a history, retold.

The action items were created by demo.incidents in their final state, so their history
starts on the load day. This gives them the history they would have had: opened when
the report was published, started and closed on plausible dates (each closed item shows
the date it was completed). The Cloud Storage report also gets an item dropped with a
reason ("won't do") and a public item that is overdue on the day the demo is loaded.
Idempotent: a report whose items already have a retold history is left as it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, Protocol

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from demo.incidents import GCS_START, GCS_TITLE, GMAIL_2009_TITLE, GMAIL_2026_TITLE
from incidents import services
from incidents.models import ActionItem, Incident
from postmortems.follow_models import ActionItemChange

Status = ActionItem.Status

DROPPED_TITLE = "Per-bucket write throttling in the storage load balancer"
DROPPED_REASON = (
    "Superseded by enforcing capacity constraints in the load balancer, which protects "
    "the same backends without a second limit to tune."
)
OVERDUE_TITLE = "Alert on write latency per zone, not only per region"
# Moved once, so the history shows a due-date change.
MOVED_TITLE = "Enforce capacity constraints in storage load balancing"
MOVED_FROM = date(2026, 12, 11)


class Writer(Protocol):
    def write(self, msg: str) -> Any: ...


@dataclass
class FollowSummary:
    items_retold: int = 0
    items_created: int = 0


def _at(day: date) -> datetime:
    return datetime.combine(day, time(17, 0), tzinfo=UTC)


def _retell(item: ActionItem, *, opened: datetime, now: datetime, staff: Any) -> None:
    """Backdate the creation rows to `opened`; an item created closed or started gets the
    steps that led there, dated between its opening and its due date."""
    rows = ActionItemChange.objects.filter(item=item)
    rows.update(changed_at=opened, actor=staff)
    if item.status == Status.OPEN:
        return
    rows.filter(field=ActionItemChange.Field.STATUS).update(new_value=Status.OPEN)
    due = _at(item.due_date) if item.due_date else opened + timedelta(days=30)
    started = min(opened + timedelta(days=3), now)
    steps: list[tuple[str, str, datetime]] = [(Status.OPEN, Status.IN_PROGRESS, started)]
    if item.status != Status.IN_PROGRESS:
        # Done a few days before it was due (within its span), never in the future.
        closed = min(max(due - timedelta(days=4), started + timedelta(days=1)), now)
        steps.append((Status.IN_PROGRESS, item.status, closed))
    ActionItemChange.objects.bulk_create(
        ActionItemChange(
            item=item,
            field=ActionItemChange.Field.STATUS,
            old_value=old,
            new_value=new,
            actor=staff,
            changed_at=at,
        )
        for old, new, at in steps
    )


def _retold(incident: Incident) -> bool:
    return ActionItemChange.objects.filter(item__incident=incident).exclude(old_value="").exists()


def _gcs_extra(
    incident: Incident, *, opened: datetime, now: datetime, staff: Any, summary: FollowSummary
) -> None:
    dropped = services.action_item_create(
        incident=incident,
        title=DROPPED_TITLE,
        type=ActionItem.Type.PREVENT,
        priority=ActionItem.Priority.P2,
        due_date=date(2026, 11, 30),
        owner=staff,
        is_public=True,
        actor=staff,
    )
    _retell(dropped, opened=opened, now=now, staff=staff)
    services.action_item_edit(
        item=dropped, changes={"status": Status.WONT_DO}, actor=staff, reason=DROPPED_REASON
    )
    ActionItemChange.objects.filter(item=dropped, old_value=Status.OPEN).update(
        changed_at=min(opened + timedelta(days=26), now)
    )
    # Due twelve days before the load day: overdue whenever the demo is looked at first.
    overdue = services.action_item_create(
        incident=incident,
        title=OVERDUE_TITLE,
        type=ActionItem.Type.DETECT,
        priority=ActionItem.Priority.P1,
        due_date=timezone.localdate(now) - timedelta(days=12),
        owner=staff,
        is_public=True,
        actor=staff,
    )
    _retell(overdue, opened=opened, now=now, staff=staff)
    summary.items_created += 2


def _move_due(item: ActionItem, *, opened: datetime, now: datetime) -> None:
    """The item was first due on MOVED_FROM and moved to its due date five weeks in."""
    if item.due_date is None:
        return
    ActionItemChange.objects.filter(item=item, field=ActionItemChange.Field.DUE_DATE).update(
        new_value=MOVED_FROM.isoformat()
    )
    ActionItemChange.objects.create(
        item=item,
        field=ActionItemChange.Field.DUE_DATE,
        old_value=MOVED_FROM.isoformat(),
        new_value=item.due_date.isoformat(),
        actor=item.owner,
        changed_at=min(opened + timedelta(days=35), now),
    )


def load(*, stdout: Writer | None = None, now: datetime | None = None) -> FollowSummary:
    now = now or timezone.now()
    summary = FollowSummary()
    staff = get_user_model().objects.filter(username="staff").first()
    keys: list[dict[str, Any]] = [
        {"title": GMAIL_2009_TITLE},
        {"title": GMAIL_2026_TITLE},
        {"title": GCS_TITLE, "started_at": GCS_START},
    ]
    for key in keys:
        incident = Incident.objects.filter(**key).select_related("report").first()
        report = getattr(incident, "report", None) if incident is not None else None
        if incident is None or report is None or report.published_at is None or _retold(incident):
            continue
        with transaction.atomic():
            opened = report.published_at
            for item in incident.action_items.all():
                _retell(item, opened=opened, now=now, staff=staff)
                if item.title == MOVED_TITLE:
                    _move_due(item, opened=opened, now=now)
                summary.items_retold += 1
            if key["title"] == GCS_TITLE:
                _gcs_extra(incident, opened=opened, now=now, staff=staff, summary=summary)
    if stdout is not None:
        stdout.write(
            f"Action item history: {summary.items_retold} items retold, {summary.items_created} items added\n"
        )
    return summary
