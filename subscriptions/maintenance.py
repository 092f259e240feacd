"""The reminder subscribers get shortly before a scheduled maintenance starts.

Idempotent: each reminder is guarded by a unique Fanout row written in the same
transaction as its outbox rows, so a late, repeated or concurrent tick sends it once.
Rooms above with subscribers of their own (the portal's page subscribers) join with
`reminder_subscribe` and are called inside that same guarded transaction.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from incidents.maintenance import maintenance_locked
from incidents.models import Incident
from subscriptions import notifications
from subscriptions.models import Fanout

logger = logging.getLogger(__name__)

Status = Incident.Status

# name -> handler(incident) returning the events it recorded; filled in upper rooms' ready().
_reminder_handlers: dict[str, Callable[[Incident], int]] = {}


def reminder_subscribe(name: str, handler: Callable[[Incident], int]) -> None:
    _reminder_handlers[name] = handler


def _remind(incident: Incident) -> int:
    recorded = notifications.maintenance_reminder(incident=incident)
    for handler in _reminder_handlers.values():
        recorded += handler(incident)
    return recorded


def maintenance_remind_due(*, now: datetime | None = None) -> int:
    now = now or timezone.now()
    lead = timedelta(minutes=settings.MAINTENANCE_REMINDER_MINUTES)
    if lead <= timedelta(0):
        return 0
    due = Incident.objects.filter(
        kind=Incident.Kind.MAINTENANCE,
        status=Status.SCHEDULED,
        is_public=True,
        scheduled_for__gt=now,
        scheduled_for__lte=now + lead,
    ).values_list("pk", "scheduled_for", "created_at")
    reminded = 0
    for pk, scheduled_for, created_at in list(due):
        if scheduled_for is None or created_at >= scheduled_for - lead:
            # Announced inside the reminder window: the "scheduled" email was the reminder.
            continue
        key = f"maintenance-reminder:{pk}"
        if Fanout.objects.filter(key=key).exists():
            continue
        try:
            with transaction.atomic():
                incident = maintenance_locked(pk, (Status.SCHEDULED,))
                if incident is None:
                    continue
                fanout = Fanout.objects.create(key=key)
                fanout.recipients = _remind(incident)
                fanout.save(update_fields=["recipients"])
                reminded += 1
        except IntegrityError:
            continue  # another tick sent it a moment ago
    if reminded:
        logger.info("maintenance reminders: %s sent", reminded)
    return reminded
