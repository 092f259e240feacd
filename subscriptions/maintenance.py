"""Scheduled maintenance that runs itself: the beat tick, its reminder, its calendar.

`maintenance_tick` is idempotent and safe to run late, twice or in two processes at
once: each maintenance is moved under a row lock after re-checking its status, and
the reminder is guarded by a unique Fanout row written with its outbox rows.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from incidents import services as incident_services
from incidents.models import Incident
from subscriptions import notifications
from subscriptions.models import Fanout

logger = logging.getLogger(__name__)

Status = Incident.Status
OPEN_MAINTENANCE = (Status.SCHEDULED, Status.IN_PROGRESS, Status.VERIFYING)

STARTED_BODY = "The scheduled maintenance has begun."
COMPLETED_BODY = "The scheduled maintenance is complete."


@dataclass(frozen=True)
class TickResult:
    started: int
    completed: int
    reminded: int


def _locked(pk: int, statuses: tuple[str, ...]) -> Incident | None:
    # skip_locked: a second tick running at the same moment passes over the row the
    # first one is moving instead of waiting for it and then moving it again.
    return (
        Incident.objects.select_for_update(skip_locked=True)
        .filter(pk=pk, kind=Incident.Kind.MAINTENANCE, status__in=statuses)
        .first()
    )


def maintenance_start_due(*, now: datetime) -> int:
    due = Incident.objects.filter(
        kind=Incident.Kind.MAINTENANCE,
        status=Status.SCHEDULED,
        scheduled_for__lte=now,
        scheduled_until__gt=now,
    ).values_list("pk", flat=True)
    started = 0
    for pk in list(due):
        with transaction.atomic():
            incident = _locked(pk, (Status.SCHEDULED,))
            if incident is None:
                continue
            # The timeline says when it began, not when the tick noticed; its
            # under_maintenance windows are already current from scheduled_for.
            incident_services.incident_post_update(
                incident=incident,
                status=Status.IN_PROGRESS,
                body=STARTED_BODY,
                display_at=incident.scheduled_for,
            )
            started += 1
    return started


def maintenance_complete_due(*, now: datetime) -> int:
    due = Incident.objects.filter(
        kind=Incident.Kind.MAINTENANCE, status__in=OPEN_MAINTENANCE, scheduled_until__lte=now
    ).values_list("pk", flat=True)
    completed = 0
    for pk in list(due):
        with transaction.atomic():
            incident = _locked(pk, OPEN_MAINTENANCE)
            if incident is None or incident.scheduled_until is None:
                continue
            # Closes the open windows at the scheduled end, so the products are back to
            # operational from that minute whatever time the tick ran.
            incident_services.incident_resolve(
                incident=incident,
                body=COMPLETED_BODY,
                resolved_at=max(incident.scheduled_until, incident.started_at),
            )
            completed += 1
    return completed


def maintenance_remind_due(*, now: datetime) -> int:
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
                incident = _locked(pk, (Status.SCHEDULED,))
                if incident is None:
                    continue
                fanout = Fanout.objects.create(key=key)
                fanout.recipients = notifications.maintenance_reminder(incident=incident)
                fanout.save(update_fields=["recipients"])
                reminded += 1
        except IntegrityError:
            continue  # another tick sent it a moment ago
    return reminded


def maintenance_tick(*, now: datetime | None = None) -> TickResult:
    now = now or timezone.now()
    # Completion first: a maintenance whose whole window passed while beat was down is
    # completed, not started and completed in one go.
    completed = maintenance_complete_due(now=now)
    started = maintenance_start_due(now=now)
    reminded = maintenance_remind_due(now=now)
    if started or completed or reminded:
        logger.info("maintenance tick: %s started, %s completed, %s reminders", started, completed, reminded)
    return TickResult(started=started, completed=completed, reminded=reminded)
