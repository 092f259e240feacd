"""Timed work of alert intake (the beat's tick and purge) and the staff publish of a draft.

Each step runs under the integration's row lock, like intake (docs/adr/0008-alert-intake.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from alerts.models import AlertGroup, IntakeDelivery, Integration, ReceivedPayload
from alerts.services.apply import auto_resolve, draft_edited
from alerts.services.decide import FIRING
from core import roles
from incidents import services as incidents
from incidents.models import Incident


@dataclass(frozen=True)
class TickResult:
    resolved: int
    published: int


def alerts_tick(*, now: datetime | None = None) -> TickResult:
    """Due automatic resolutions and auto-publications. Idempotent: a late or doubled beat
    only does what is due, once."""
    now = now or timezone.now()
    return TickResult(resolved=_resolve_due(now), published=_publish_due(now))


def _resolve_due(now: datetime) -> int:
    resolved = 0
    for pk, integration_id in AlertGroup.objects.filter(resolve_due_at__lte=now).values_list(
        "pk", "integration_id"
    ):
        with transaction.atomic():
            Integration.objects.select_for_update().get(pk=integration_id)
            group = AlertGroup.objects.filter(pk=pk, resolve_due_at__lte=now).first()
            if group is not None and auto_resolve(group) == "resolved":
                resolved += 1
    return resolved


def _publish_due(now: datetime) -> int:
    """Publish the drafts whose time has come, unless a person has edited them: every
    pending one is looked at each minute, so an edited draft stops saying it will publish
    itself within a minute of the edit, not at its due time."""
    published = 0
    for pk, integration_id in AlertGroup.objects.filter(publish_due_at__isnull=False).values_list(
        "pk", "integration_id"
    ):
        with transaction.atomic():
            Integration.objects.select_for_update().get(pk=integration_id)
            group = (
                AlertGroup.objects.select_related("incident")
                .filter(pk=pk, publish_due_at__isnull=False)
                .first()
            )
            if group is None:
                continue
            edited = draft_edited(group)
            if not edited and group.publish_due_at is not None and group.publish_due_at > now:
                continue
            group.publish_due_at = None
            group.save(update_fields=["publish_due_at"])
            incident = group.incident
            still_firing = group.alerts.filter(status=FIRING).exists()
            if not edited and not incident.is_public and not incident.is_closed and still_firing:
                incidents.incident_publish(incident=incident)
                published += 1
    return published


def payloads_purge(*, now: datetime | None = None) -> int:
    """Drop kept payloads older than ALERTS_PAYLOAD_RETENTION_DAYS (the count returned),
    and delivery ids no timestamp inside the tolerance can reach any more."""
    now = now or timezone.now()
    # A timestamp up to the tolerance ahead of our clock stays valid for twice the
    # tolerance after it arrived: its delivery id must be remembered that long.
    replayable = timedelta(seconds=2 * settings.ALERTS_SIGNATURE_TOLERANCE_SECONDS)
    IntakeDelivery.objects.filter(received_at__lt=now - replayable).delete()
    cutoff = now - timedelta(days=settings.ALERTS_PAYLOAD_RETENTION_DAYS)
    deleted, _ = ReceivedPayload.objects.filter(received_at__lt=cutoff).delete()
    return deleted


@transaction.atomic
def alert_draft_publish(*, incident: Incident, actor: User | None = None) -> Incident:
    """Staff publish a draft (one click): public now, subscribers told, no auto-publish left."""
    roles.check(actor, "incident.publish_draft")
    AlertGroup.objects.filter(incident=incident).update(publish_due_at=None)
    return incidents.incident_publish(incident=incident, actor=actor)
