"""Fan-out of incident and maintenance events to subscribers, through the outbox.

`incident_event` hears every event incidents.services announces (subscriptions joins
incidents.events in its `ready()`), inside the service's transaction: the outbox rows
are written together with the change that caused them (both or neither), and delivery
starts after the commit. Each (event, subscriber) pair has its own
idempotency key, so calling twice for one event queues nothing new.

Who gets an event: confirmed, not disabled subscribers who chose every product or at
least one public product the incident affects; never anyone for an incident that is
not public.
"""

from __future__ import annotations

import enum
import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db.models import Q, QuerySet
from django.utils import timezone

from incidents import events
from incidents.models import Incident, IncidentReport, IncidentUpdate, Location, Product
from incidents.selectors import incidents_public
from outbox.services import webhook_enqueue
from subscriptions import channels, emails
from subscriptions.models import Subscriber
from subscriptions.webhooks import WEBHOOK_PURPOSE

logger = logging.getLogger(__name__)

Status = Incident.Status


class Event(enum.StrEnum):
    INCIDENT_OPENED = "incident.opened"
    INCIDENT_UPDATED = "incident.updated"
    INCIDENT_RESOLVED = "incident.resolved"
    REPORT_PUBLISHED = "incident.report_published"
    MAINTENANCE_SCHEDULED = "maintenance.scheduled"
    MAINTENANCE_REMINDER = "maintenance.reminder"
    MAINTENANCE_STARTED = "maintenance.started"
    MAINTENANCE_UPDATED = "maintenance.updated"
    MAINTENANCE_COMPLETED = "maintenance.completed"


# What a subscriber reads first, per event.
HEADLINES: dict[Event, str] = {
    Event.INCIDENT_OPENED: "New incident",
    Event.INCIDENT_UPDATED: "Incident update",
    Event.INCIDENT_RESOLVED: "Resolved",
    Event.REPORT_PUBLISHED: "Incident report",
    Event.MAINTENANCE_SCHEDULED: "Scheduled maintenance",
    Event.MAINTENANCE_REMINDER: "Maintenance starts soon",
    Event.MAINTENANCE_STARTED: "Maintenance in progress",
    Event.MAINTENANCE_UPDATED: "Maintenance update",
    Event.MAINTENANCE_COMPLETED: "Maintenance completed",
}

KINDS = events.KINDS


def event_for(*, kind: str, incident: Incident, update: IncidentUpdate | None) -> Event:
    if kind not in KINDS:
        raise ValueError(f"unknown incident event kind {kind!r}")
    if kind == "report_published":
        return Event.REPORT_PUBLISHED
    if not incident.is_maintenance:
        return {
            "opened": Event.INCIDENT_OPENED,
            "updated": Event.INCIDENT_UPDATED,
            "resolved": Event.INCIDENT_RESOLVED,
        }[kind]
    status = update.status if update is not None else incident.status
    if kind == "resolved" or status == Status.COMPLETED:
        return Event.MAINTENANCE_COMPLETED
    if status == Status.IN_PROGRESS:
        # The first "in progress" entry is the start (posted by staff or the beat tick);
        # later ones are progress notes.
        earlier = (
            update is not None
            and incident.updates.filter(status=Status.IN_PROGRESS).exclude(pk=update.pk).exists()
        )
        return Event.MAINTENANCE_UPDATED if earlier else Event.MAINTENANCE_STARTED
    if kind == "opened":
        return Event.MAINTENANCE_SCHEDULED
    return Event.MAINTENANCE_UPDATED


def affected_public_products(incident: Incident) -> list[Product]:
    return list(
        Product.objects.filter(windows__incident=incident, is_public=True)
        .distinct()
        .order_by("position", "name")
    )


def affected_locations(incident: Incident) -> list[Location]:
    """The regions and zones the incident's public windows name (none: every location)."""
    return list(
        Location.objects.filter(windows__incident=incident, windows__product__is_public=True)
        .distinct()
        .order_by("name")
    )


def recipients(*, incident: Incident, products: list[Product]) -> QuerySet[Subscriber]:
    """Active subscribers of every product, or of one of `products`."""
    interested = Q(all_products=True)
    if products:
        interested |= Q(products__in=products)
    ids = (
        Subscriber.objects.filter(confirmed_at__isnull=False, disabled_at__isnull=True)
        .filter(interested)
        .values("pk")
    )
    # Through a subquery: a subscriber of two affected products is one recipient.
    return Subscriber.objects.filter(pk__in=ids).order_by("pk")


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def incident_url(incident: Incident) -> str:
    return emails.absolute_url(f"/incidents/{incident.public_id}/")


@dataclass(frozen=True)
class EventMessage:
    """Everything about one event, computed once and shared by all its recipients."""

    event: Event
    key: str
    context: dict[str, Any]
    payload: dict[str, Any]


def build_event_message(
    *,
    event: Event,
    key: str,
    incident: Incident,
    products: list[Product],
    update: IncidentUpdate | None = None,
    report: IncidentReport | None = None,
) -> EventMessage:
    url = incident_url(incident)
    context = {
        "event": event.value,
        "headline": HEADLINES[event],
        "is_maintenance": incident.is_maintenance,
        "incident": incident,
        "status_label": incident.get_status_display(),
        "impact_label": incident.get_impact_display(),
        "products": products,
        "locations": affected_locations(incident),
        "update": update,
        "update_time": emails.display_time(update.display_at) if update is not None else "",
        "report": report,
        "started": emails.display_time(incident.started_at),
        "resolved": emails.display_time(incident.resolved_at),
        "scheduled_for": emails.display_time(incident.scheduled_for),
        "scheduled_until": emails.display_time(incident.scheduled_until),
        "incident_url": url,
    }
    payload = {
        "meta": {"event": event.value, "id": key, "generated_at": timezone.now().isoformat()},
        "page": {"name": settings.SITE_NAME, "url": settings.SITE_URL},
        "incident": {
            "id": incident.public_id,
            "name": incident.title,
            "kind": incident.kind,
            "status": incident.status,
            "impact": incident.impact,
            "shortlink": url,
            "started_at": _iso(incident.started_at),
            "resolved_at": _iso(incident.resolved_at),
            "scheduled_for": _iso(incident.scheduled_for),
            "scheduled_until": _iso(incident.scheduled_until),
            "components": [{"id": p.public_id, "name": p.name, "slug": p.slug} for p in products],
        },
        "update": (
            {
                "id": update.pk,
                "status": update.status,
                "body": update.body,
                "display_at": _iso(update.display_at),
            }
            if update is not None
            else None
        ),
        "report": (
            {
                "kind": report.kind,
                "summary": report.summary,
                "published_at": _iso(report.published_at),
                "url": url,
            }
            if report is not None
            else None
        ),
    }
    return EventMessage(event=event, key=key, context=context, payload=payload)


def fan_out(*, message: EventMessage, incident: Incident, products: list[Product]) -> int:
    """Queue the event for every recipient; returns how many rows were asked for."""
    count = 0
    for subscriber in recipients(incident=incident, products=products):
        key = f"notify:{message.key}:{subscriber.pk}"
        if subscriber.is_hook:
            webhook_enqueue(
                key=key,
                url=subscriber.url,
                # Webhook, Slack or Teams: each kind's own message (subscriptions.channels).
                payload=channels.payload_for(subscriber, message),
                secret=subscriber.secret,
                purpose=WEBHOOK_PURPOSE,
                ref=subscriber.outbox_ref,
            )
        else:
            emails.send_to_subscriber(
                subscriber=subscriber, key=key, template="subscription_notification", context=message.context
            )
        count += 1
    return count


def incident_event(
    *,
    kind: str,
    incident: Incident,
    update: IncidentUpdate | None = None,
    report: IncidentReport | None = None,
) -> int:
    """Notify subscribers of an incident event. Call inside the service's transaction.

    kind: "opened", "updated", "resolved" (each with the timeline `update` it posted)
    or "report_published" (with the `report`). An update whose notify flag is off
    notifies nobody.
    """
    event = event_for(kind=kind, incident=incident, update=update)
    if update is not None and not update.notify_subscribers:
        return 0
    if not incidents_public().filter(pk=incident.pk).exists():
        return 0
    if kind == "report_published":
        if report is None:
            raise ValueError("a report_published event needs the report")
        key = f"report:{report.pk}"
    elif update is not None:
        key = str(update.pk)
    else:
        raise ValueError(f"a {kind} event needs the timeline update")
    products = affected_public_products(incident)
    message = build_event_message(
        event=event, key=key, incident=incident, products=products, update=update, report=report
    )
    return fan_out(message=message, incident=incident, products=products)


def on_incident_event(event: events.IncidentEvent) -> None:
    incident_event(kind=event.kind, incident=event.incident, update=event.update, report=event.report)


def maintenance_reminder(*, incident: Incident) -> int:
    """The reminder before a maintenance starts (the caller makes it once)."""
    if not incidents_public().filter(pk=incident.pk).exists():
        return 0
    products = affected_public_products(incident)
    starts = incident.scheduled_for or incident.started_at
    minutes = max(0, round((starts - timezone.now()).total_seconds() / 60))
    message = build_event_message(
        event=Event.MAINTENANCE_REMINDER,
        key=f"reminder:{incident.pk}",
        incident=incident,
        products=products,
    )
    message.context["starts_in_minutes"] = minutes
    return fan_out(message=message, incident=incident, products=products)


TEST_EVENT = "test"


def webhook_test_send(*, subscriber: Subscriber) -> None:
    """Queue a signed `test` event to one webhook, through the outbox like any event, so
    its owner can check the receiver and the signature (the admin's "send test event")."""
    if subscriber.kind != Subscriber.Kind.WEBHOOK:
        raise ValueError("only webhook subscribers receive test events")
    now = timezone.now()
    key = f"test:{subscriber.pk}:{now.timestamp():.6f}"
    payload = {
        "meta": {"event": TEST_EVENT, "id": key, "generated_at": now.isoformat()},
        "page": {"name": settings.SITE_NAME, "url": settings.SITE_URL},
        "incident": {
            "id": "test",
            "name": "Test event: no incident is open",
            "kind": "incident",
            "status": Status.INVESTIGATING,
            "impact": Incident.Impact.NONE,
            "shortlink": settings.SITE_URL + "/",
            "started_at": now.isoformat(),
            "resolved_at": None,
            "scheduled_for": None,
            "scheduled_until": None,
            "components": [],
        },
        "update": None,
        "report": None,
    }
    webhook_enqueue(
        key=key,
        url=subscriber.url,
        payload=payload,
        secret=subscriber.secret,
        purpose=WEBHOOK_PURPOSE,
        ref=subscriber.outbox_ref,
    )
