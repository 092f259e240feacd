"""Scheduled maintenance that runs itself: started and completed on time by the beat.

Idempotent and safe to run late, twice or in two processes at once: each maintenance is
moved under a row lock after re-checking its status. Reminders to subscribers are a
notification, so they live in subscriptions.maintenance.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from incidents import services
from incidents.models import Incident

logger = logging.getLogger(__name__)

Status = Incident.Status
OPEN_MAINTENANCE = (Status.SCHEDULED, Status.IN_PROGRESS, Status.VERIFYING)

STARTED_BODY = "The scheduled maintenance has begun."
COMPLETED_BODY = "The scheduled maintenance is complete."


@dataclass(frozen=True)
class AdvanceResult:
    started: int
    completed: int


def maintenance_locked(pk: int, statuses: tuple[str, ...]) -> Incident | None:
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
            incident = maintenance_locked(pk, (Status.SCHEDULED,))
            if incident is None:
                continue
            # The timeline says when it began, not when the tick noticed; its
            # under_maintenance windows are already current from scheduled_for.
            services.incident_post_update(
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
            incident = maintenance_locked(pk, OPEN_MAINTENANCE)
            if incident is None or incident.scheduled_until is None:
                continue
            # Closes the open windows at the scheduled end, so the products are back to
            # operational from that minute whatever time the tick ran.
            services.incident_resolve(
                incident=incident,
                body=COMPLETED_BODY,
                resolved_at=max(incident.scheduled_until, incident.started_at),
            )
            completed += 1
    return completed


def maintenance_advance(*, now: datetime | None = None) -> AdvanceResult:
    now = now or timezone.now()
    # Completion first: a maintenance whose whole window passed while beat was down is
    # completed, not started and completed in one go.
    completed = maintenance_complete_due(now=now)
    started = maintenance_start_due(now=now)
    if started or completed:
        logger.info("maintenance: %s started, %s completed", started, completed)
    return AdvanceResult(started=started, completed=completed)
