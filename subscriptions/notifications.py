"""Fan-out of incident and maintenance events to subscribers, through the outbox.

`incident_event` hears every event incidents.services announces (subscriptions joins
incidents.events in its `ready()`), inside the service's transaction, and writes ONE
`NotificationEvent` row there (both or neither with the change). After the commit,
`notification_event_expand` tasks turn it into outbox rows, a chunk of subscribers at a
time, so the staff request costs the same for ten subscribers or a million. Each
(event, subscriber) pair has its own idempotency key, so expanding twice, or calling
twice for one event, queues nothing new.

Who gets an event: confirmed, not disabled subscribers who chose every product or at
least one public product the incident affects; never anyone for an incident that is
not public.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q, QuerySet
from django.urls import reverse
from django.utils import timezone
from django.utils.functional import lazy
from django.utils.translation import gettext_lazy as _

from core import roles
from incidents import events
from incidents.models import Incident, IncidentReport, IncidentUpdate, Location, Product
from incidents.selectors import incidents_public
from outbox import conf
from outbox.services import EmailSpec, WebhookSpec, messages_enqueue_many, publish_task, webhook_enqueue
from subscriptions import channels, emails
from subscriptions.models import NotificationEvent, Subscriber
from subscriptions.services import SubscriberConflict
from subscriptions.webhooks import WEBHOOK_PURPOSE

logger = logging.getLogger(__name__)

Status = Incident.Status

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from outbox.models import OutboundMessage


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
HEADLINES: dict[Event, Any] = {
    Event.INCIDENT_OPENED: _("New incident"),
    Event.INCIDENT_UPDATED: _("Incident update"),
    Event.INCIDENT_RESOLVED: _("Resolved"),
    Event.REPORT_PUBLISHED: _("Incident report"),
    Event.MAINTENANCE_SCHEDULED: _("Scheduled maintenance"),
    Event.MAINTENANCE_REMINDER: _("Maintenance starts soon"),
    Event.MAINTENANCE_STARTED: _("Maintenance in progress"),
    Event.MAINTENANCE_UPDATED: _("Maintenance update"),
    Event.MAINTENANCE_COMPLETED: _("Maintenance completed"),
}

# What subscribers hear about; "impact_changed" and "recorded" are for caches and figures,
# not people.
KINDS = tuple(
    k
    for k in events.KINDS
    if k not in ("impact_changed", "recorded", "report_status_changed", "report_revised")
)


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
    """Active subscribers of every product, or of one of `products`, by id.

    No join on the products table: a subscriber of two affected products is one row, and
    the fan-out can page through millions with `pk > cursor ... LIMIT n` on the primary key.
    """
    interested = Q(all_products=True)
    if products:
        through = Subscriber.products.through
        interested |= Q(pk__in=through.objects.filter(product__in=products).values("subscriber_id"))
    return (
        Subscriber.objects.filter(confirmed_at__isnull=False, disabled_at__isnull=True)
        .filter(interested)
        .order_by("pk")
    )


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def incident_url(incident: Incident) -> str:
    """The incident's public page at its one canonical (English) address: for JSON
    payloads and feeds, which have no language."""
    return emails.absolute_url(f"/incidents/{incident.public_id}/")


# The incident's page in the language of the render that reads it: a French subscriber's
# email and Slack button open /fr/incidents/..., an English one's the bare path.
_page_url = lazy(lambda public_id: emails.absolute_url(reverse("public:incident", args=[public_id])), str)


# A choice label read when the email is rendered, so in the recipient's language.
_label = lazy(lambda get_display: get_display(), str)


@dataclass(frozen=True)
class EventMessage:
    """Everything about one event, computed once and shared by all its recipients.

    The words and times in `context` are lazy: each is written in the language of the
    render that reads it (one render per language and zone, see `_subscriber_specs`).
    """

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
        "status_label": _label(incident.get_status_display),
        "impact_label": _label(incident.get_impact_display),
        "products": products,
        "locations": affected_locations(incident),
        "update": update,
        "update_time": emails.display_time_lazy(update.display_at) if update is not None else "",
        "report": report,
        "started": emails.display_time_lazy(incident.started_at),
        "resolved": emails.display_time_lazy(incident.resolved_at),
        "scheduled_for": emails.display_time_lazy(incident.scheduled_for),
        "scheduled_until": emails.display_time_lazy(incident.scheduled_until),
        "incident_url": _page_url(incident.public_id),
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


def _subscriber_specs(
    *, message: EventMessage, subscribers: list[Subscriber], template: str
) -> list[EmailSpec | WebhookSpec]:
    """One outbox spec per subscriber; the email is rendered once per language and time
    zone in the chunk."""
    specs: list[EmailSpec | WebhookSpec] = []
    email_templates: dict[tuple[str, str], emails.SubscriberTemplate] = {}
    for subscriber in subscribers:
        key = f"notify:{message.key}:{subscriber.pk}"
        if subscriber.is_hook:
            specs.append(
                WebhookSpec(
                    key=key,
                    url=subscriber.url,
                    # Webhook, Slack or Teams: each kind's own message (subscriptions.channels).
                    payload=channels.payload_for(subscriber, message),
                    secret=subscriber.secret,
                    purpose=WEBHOOK_PURPOSE,
                    ref=subscriber.outbox_ref,
                    # X-Status-Event: the same name whatever the payload's shape.
                    event=message.event.value,
                )
            )
            continue
        edition = (subscriber.language, subscriber.zone)
        email_template = email_templates.get(edition)
        if email_template is None:
            email_template = emails.SubscriberTemplate.render(
                template, message.context, language=subscriber.language, zone=subscriber.zone
            )
            email_templates[edition] = email_template
        thread = emails.thread_headers(
            incident_public_id=message.context["incident"].public_id, subscriber=subscriber
        )
        specs.append(email_template.spec_for(subscriber=subscriber, key=key, thread=thread))
    return specs


def _record_event(
    *,
    event: Event,
    key: str,
    incident: Incident,
    products: list[Product],
    update: IncidentUpdate | None = None,
    report: IncidentReport | None = None,
    extra: dict[str, Any] | None = None,
) -> NotificationEvent | None:
    """Write the one event row (in the caller's transaction) and expand it after commit.

    A constant number of queries whatever the number of subscribers: the staff request
    no longer grows with the list. None when this event was recorded before.
    """
    message = build_event_message(
        event=event, key=key, incident=incident, products=products, update=update, report=report
    )
    try:
        # A savepoint: a replayed event must not poison the caller's transaction.
        with transaction.atomic():
            row = NotificationEvent.objects.create(
                key=key,
                event=event.value,
                incident=incident,
                update=update,
                report=report,
                product_ids=[p.pk for p in products],
                payload=message.payload,
                extra=extra or {},
            )
    except IntegrityError:
        return None
    transaction.on_commit(lambda: _publish_expansion(row.pk), robust=True)
    return row


def _publish_expansion(event_id: int) -> None:
    from subscriptions import tasks

    # One short try (the request must not wait on a broker that hangs); the resume sweep
    # queues it otherwise.
    publish_task(tasks.expand_notification_event, (event_id,))


def notification_event_expand(*, event_id: int, chunk: int | None = None) -> bool:
    """Queue the next chunk of subscribers for an event; True while more remain.

    The event row is locked for the chunk, so two tasks on one event (a redelivery, the
    resume sweep) take turns, and the second finds the cursor moved on. The outbox rows'
    keys are per (event, subscriber): a chunk done twice queues nothing new.
    """
    size = chunk or settings.NOTIFY_CHUNK_SIZE
    with transaction.atomic():
        row = NotificationEvent.objects.select_for_update().filter(pk=event_id, done_at__isnull=True).first()
        if row is None:
            return False
        incident = Incident.objects.get(pk=row.incident_id)
        products = list(Product.objects.filter(pk__in=row.product_ids).order_by("position", "name"))
        message = build_event_message(
            event=Event(row.event),
            key=row.key,
            incident=incident,
            products=products,
            update=IncidentUpdate.objects.filter(pk=row.update_id).first() if row.update_id else None,
            report=IncidentReport.objects.filter(pk=row.report_id).first() if row.report_id else None,
        )
        # The webhook body as it was at the event, not as the incident is now.
        message = EventMessage(
            event=message.event,
            key=message.key,
            context={**message.context, **row.extra},
            payload=row.payload,
        )
        subscribers = list(recipients(incident=incident, products=products).filter(pk__gt=row.cursor)[:size])
        messages_enqueue_many(
            _subscriber_specs(message=message, subscribers=subscribers, template="subscription_notification")
        )
        if subscribers:
            row.cursor = subscribers[-1].pk
            row.recipients += len(subscribers)
        if len(subscribers) < size:
            row.done_at = timezone.now()
        row.save(update_fields=["cursor", "recipients", "done_at", "updated_at"])
        more = row.done_at is None
        if more:
            transaction.on_commit(lambda: _publish_expansion(event_id), robust=True)
    return more


# name -> resume(now) for rooms above that expand events of their own (the portal's page
# subscribers): the one resume beat picks up their lost expansions too.
_resume_handlers: dict[str, Callable[[datetime], int]] = {}


def resume_subscribe(name: str, handler: Callable[[datetime], int]) -> None:
    _resume_handlers[name] = handler


def notification_events_resume(*, now: Any = None, limit: int = 100) -> int:
    """Queue the expansion of events whose task was lost (broker down, Redis emptied)."""
    now = now or timezone.now()
    resumed = sum(handler(now) for handler in _resume_handlers.values())
    stale = now - timedelta(seconds=conf.sweep_grace_seconds())
    ids = list(
        NotificationEvent.objects.filter(done_at__isnull=True, updated_at__lt=stale)
        .order_by("updated_at")
        .values_list("pk", flat=True)[:limit]
    )
    for event_id in ids:
        _publish_expansion(event_id)
    return resumed + len(ids)


def incident_event(
    *,
    kind: str,
    incident: Incident,
    update: IncidentUpdate | None = None,
    report: IncidentReport | None = None,
) -> int:
    """Record an incident event for subscribers. Call inside the service's transaction.

    kind: "opened", "updated", "resolved" (each with the timeline `update` it posted)
    or "report_published" (with the `report`). An update whose notify flag is off
    notifies nobody. Returns 1 when an event was recorded (its expansion to subscribers
    runs after the commit), else 0.
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
    if not recipients(incident=incident, products=products).exists():
        return 0  # nobody to tell (one indexed LIMIT 1, whatever the list's size)
    recorded = _record_event(
        event=event, key=key, incident=incident, products=products, update=update, report=report
    )
    return 0 if recorded is None else 1


def on_incident_event(event: events.IncidentEvent) -> None:
    if event.kind not in KINDS:
        return
    incident_event(kind=event.kind, incident=event.incident, update=event.update, report=event.report)


def maintenance_reminder(*, incident: Incident) -> int:
    """The reminder before a maintenance starts (the caller makes it once); 1 if recorded."""
    if not incidents_public().filter(pk=incident.pk).exists():
        return 0
    products = affected_public_products(incident)
    starts = incident.scheduled_for or incident.started_at
    minutes = max(0, round((starts - timezone.now()).total_seconds() / 60))
    if not recipients(incident=incident, products=products).exists():
        return 0
    recorded = _record_event(
        event=Event.MAINTENANCE_REMINDER,
        key=f"reminder:{incident.pk}",
        incident=incident,
        products=products,
        extra={"starts_in_minutes": minutes},
    )
    return 0 if recorded is None else 1


TEST_EVENT = "test"


def webhook_test_send(*, subscriber: Subscriber, actor: User | None = None) -> OutboundMessage:
    """Queue a signed `test` event to one webhook, through the outbox like any event, so
    its owner can check the receiver and the signature (the admin's "send test event")."""
    roles.check(actor, "webhook.manage")
    if subscriber.kind != Subscriber.Kind.WEBHOOK:
        raise SubscriberConflict({"kind": "Only a generic webhook receives test events."})
    if subscriber.disabled_at is not None:
        raise SubscriberConflict({"disabled_at": "This webhook is disabled: turn it back on first."})
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
    return webhook_enqueue(
        key=key,
        url=subscriber.url,
        payload=payload,
        secret=subscriber.secret,
        purpose=WEBHOOK_PURPOSE,
        ref=subscriber.outbox_ref,
        event=TEST_EVENT,
    )
