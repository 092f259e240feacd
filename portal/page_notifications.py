"""Notifications for the subscribers of an audience or internal page, in that page's words.

The portal joins incidents.events (and the subscriptions room's maintenance reminder and
resume sweep) in its `ready()`. Inside the staff member's transaction an event writes ONE
`PageEvent` naming the pages whose products and locations the incident touches; after the
commit a task expands it a chunk of subscribers at a time into outbox rows, one per
(event, subscriber) key, so repeating an expansion queues nothing new. Each page gets its
own words: the audience message (audience pages) or the internal note (internal pages)
when the update has one, else the public message; its own products, locations and page
address. The public subscribers' fan-out is untouched and never reads these words.
Design: docs/adr/0034-page-subscribers.md.
"""

from __future__ import annotations

import copy
import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils import timezone, translation
from django.utils.functional import lazy

from audiences.models import Page, UpdateWords
from audiences.selectors import page_windows, pages_showing_update
from incidents import events
from incidents.models import Incident, IncidentReport, IncidentUpdate, Location, Product
from outbox import conf
from outbox.services import SharedBody, SharedEmailSpec, WebhookSpec, messages_enqueue_many, publish_task
from portal import page_subscriptions
from portal.models import PageEvent, PageSubscriber
from subscriptions import emails
from subscriptions.notifications import KINDS, Event, build_event_message, event_for

EMAIL_PURPOSE = "portal.page_email"
WEBHOOK_PURPOSE = "portal.page_webhook"

# Stand-ins rendered into a page's shared email, filled per subscriber by the outbox.
_EMAIL_MARK = "page-subscriber-email-7b2d41c9"
_UNSUBSCRIBE_MARK = "https://page-unsubscribe-7b2d41c9.invalid"


def page_words(page: Page, update: IncidentUpdate | None) -> str:
    """The page's own words for `update` (Markdown), or "" when it has none."""
    if update is None or page.visibility == Page.Visibility.PUBLIC:
        return ""
    words = UpdateWords.objects.filter(update=update).first()
    if words is None:
        return ""
    text = words.audience_message if page.visibility == Page.Visibility.AUDIENCE else words.internal_note
    return text if text.strip() else ""


def _page_scope(page: Page, incident: Incident) -> tuple[list[Product], list[Location]]:
    """The incident's products and locations as far as this page shows them."""
    windows = list(
        page_windows(page=page, products=list(page.products.all()), locations=list(page.locations.all()))
        .filter(incident=incident)
        .select_related("product", "location")
    )
    products = sorted({w.product for w in windows}, key=lambda p: (p.position, p.name))
    locations = sorted({w.location for w in windows if w.location is not None}, key=lambda loc: loc.name)
    return products, locations


def _page_incident_path(slug: str, public_id: str) -> str:
    return reverse("audiences:incident", args=[slug, public_id])


# The page's incident address in the language of the render that reads it.
_page_url = lazy(lambda slug, public_id: emails.absolute_url(_page_incident_path(slug, public_id)), str)


@dataclass(frozen=True)
class PageMessage:
    """One event as one page tells it: shared by all that page's subscribers."""

    page: Page
    context: dict[str, Any]
    payload: dict[str, Any]


def build_page_message(
    *,
    page: Page,
    event: Event,
    key: str,
    incident: Incident,
    update: IncidentUpdate | None,
    report: IncidentReport | None,
    extra: dict[str, Any],
) -> PageMessage:
    products, locations = _page_scope(page, incident)
    base = build_event_message(
        event=event, key=key, incident=incident, products=products, update=update, report=report
    )
    words = page_words(page, update)
    context = {
        **base.context,
        **extra,
        "page": page,
        "locations": locations,
        "words": words,
        "incident_url": _page_url(page.slug, incident.public_id),
        "page_url": emails.absolute_url(reverse("audiences:page", args=[page.slug])),
    }
    payload = copy.deepcopy(base.payload)
    with translation.override(settings.LANGUAGE_CODE):  # JSON has no language: the canonical address
        shortlink = emails.absolute_url(_page_incident_path(page.slug, incident.public_id))
        page_url = emails.absolute_url(reverse("audiences:page", args=[page.slug]))
    payload["page"] = {"name": page.title, "slug": page.slug, "url": page_url}
    payload["incident"]["shortlink"] = shortlink
    if payload["report"] is not None:
        payload["report"]["url"] = shortlink
    if payload["update"] is not None and words:
        payload["update"]["body"] = words
    return PageMessage(page=page, context=context, payload=payload)


def _thread(incident: Incident, subscriber: PageSubscriber) -> dict[str, str]:
    """One thread per incident and subscriber (as subscriptions.emails.thread_headers)."""
    mailbox = hashlib.sha256(f"thread:{subscriber.token}".encode()).hexdigest()[:16]
    root = f"<incident-{incident.public_id}.{mailbox}@{conf.message_id_domain()}>"
    return {"In-Reply-To": root, "References": root}


def _shared_body(message: PageMessage, *, language: str, zone: str) -> SharedBody:
    stand_in = PageSubscriber(page=message.page, email=_EMAIL_MARK, language=language, time_zone=zone)
    with translation.override(language):
        manage_url = emails.absolute_url(reverse("portal:page-subscribe", args=[message.page.slug]))
    rendered = emails.render_email(
        "page_notification",
        {
            **message.context,
            "subscriber": stand_in,
            "manage_url": manage_url,
            "unsubscribe_url": _UNSUBSCRIBE_MARK,
        },
        language=language,
        zone=stand_in.zone,
    )
    return SharedBody(subject=rendered.subject, text=rendered.text, html=rendered.html)


def _specs(
    *, row: PageEvent, messages: dict[int, PageMessage], subscribers: list[PageSubscriber], incident: Incident
) -> list[SharedEmailSpec | WebhookSpec]:
    specs: list[SharedEmailSpec | WebhookSpec] = []
    bodies: dict[tuple[int, str, str], SharedBody] = {}
    for subscriber in subscribers:
        message = messages[subscriber.page_id]
        key = f"notify:{row.key}:{subscriber.pk}"
        if subscriber.is_hook:
            specs.append(
                WebhookSpec(
                    key=key,
                    url=subscriber.url,
                    payload=message.payload,
                    secret=subscriber.secret,
                    purpose=WEBHOOK_PURPOSE,
                    ref=subscriber.outbox_ref,
                    event=row.event,
                )
            )
            continue
        edition = (subscriber.page_id, subscriber.language, subscriber.zone)
        if edition not in bodies:
            bodies[edition] = _shared_body(message, language=subscriber.language, zone=subscriber.zone)
        unsubscribe = page_subscriptions.unsubscribe_url(subscriber)
        specs.append(
            SharedEmailSpec(
                key=key,
                to=[subscriber.email],
                body=bodies[edition],
                fills={_EMAIL_MARK: subscriber.email, _UNSUBSCRIBE_MARK: unsubscribe},
                headers={**emails.subscriber_headers(unsubscribe), **_thread(incident, subscriber)},
                purpose=EMAIL_PURPOSE,
                ref=subscriber.outbox_ref,
            )
        )
    return specs


# --- Recording and expanding events -----------------------------------------------------------


def _record(
    *,
    event: Event,
    key: str,
    incident: Incident,
    update: IncidentUpdate | None = None,
    report: IncidentReport | None = None,
    extra: dict[str, Any] | None = None,
) -> int:
    """Write the event row in the caller's transaction (expanded after the commit); 1 if
    written, 0 when no page with subscribers shows the incident or it was recorded before."""
    if not PageSubscriber.objects.exists():
        return 0  # no page has subscribers: one indexed probe, no walk over the pages
    page_ids = [page.pk for page in pages_showing_update(incident=incident)]
    if not page_ids or not PageSubscriber.objects.filter(page__in=page_ids).exists():
        return 0
    try:
        with transaction.atomic():  # a savepoint: a replayed event leaves the caller's work alone
            row = PageEvent.objects.create(
                key=key,
                event=event.value,
                incident=incident,
                update=update,
                report=report,
                page_ids=page_ids,
                extra=extra or {},
            )
    except IntegrityError:
        return 0
    transaction.on_commit(lambda: _publish_expansion(row.pk), robust=True)
    return 1


def _publish_expansion(event_id: int) -> None:
    from portal import tasks

    publish_task(tasks.expand_page_event, (event_id,))


def page_event_record(
    *,
    kind: str,
    incident: Incident,
    update: IncidentUpdate | None = None,
    report: IncidentReport | None = None,
) -> int:
    """An incident event for the page subscribers (same kinds and notify rule as the
    public subscribers'), for published incidents only, whether or not the public page
    shows them: an internal page may show incidents on staff-only products."""
    event = event_for(kind=kind, incident=incident, update=update)
    if update is not None and not update.notify_subscribers:
        return 0
    if not incident.is_public:  # a draft: nobody hears of it yet
        return 0
    if kind == "report_published":
        if report is None:
            raise ValueError("a report_published event needs the report")
        key = f"page:report:{report.pk}"
    elif update is not None:
        key = f"page:{update.pk}"
    else:
        raise ValueError(f"a {kind} event needs the timeline update")
    return _record(event=event, key=key, incident=incident, update=update, report=report)


def on_incident_event(event: events.IncidentEvent) -> None:
    if event.kind in KINDS:
        page_event_record(kind=event.kind, incident=event.incident, update=event.update, report=event.report)


def maintenance_reminder(incident: Incident) -> int:
    """The reminder before a maintenance, for the subscribers of the pages it touches;
    called inside subscriptions.maintenance's once-only guard."""
    starts = incident.scheduled_for or incident.started_at
    minutes = max(0, round((starts - timezone.now()).total_seconds() / 60))
    return _record(
        event=Event.MAINTENANCE_REMINDER,
        key=f"page:reminder:{incident.pk}",
        incident=incident,
        extra={"starts_in_minutes": minutes},
    )


def page_event_expand(*, event_id: int, chunk: int | None = None) -> bool:
    """Queue the next chunk of page subscribers for an event; True while more remain.
    The row is locked for the chunk: two tasks on one event take turns."""
    size = chunk or settings.NOTIFY_CHUNK_SIZE
    with transaction.atomic():
        row = PageEvent.objects.select_for_update().filter(pk=event_id, done_at__isnull=True).first()
        if row is None:
            return False
        incident = Incident.objects.get(pk=row.incident_id)
        update = IncidentUpdate.objects.filter(pk=row.update_id).first() if row.update_id else None
        report = IncidentReport.objects.filter(pk=row.report_id).first() if row.report_id else None
        subscribers = list(
            PageSubscriber.objects.filter(page_id__in=row.page_ids, pk__gt=row.cursor)
            .select_related("page", "user")
            .order_by("pk")[:size]
        )
        allowed = [s for s in subscribers if page_subscriptions.may_receive(s)]
        messages = {
            page.pk: build_page_message(
                page=page,
                event=Event(row.event),
                key=row.key,
                incident=incident,
                update=update,
                report=report,
                extra=row.extra,
            )
            for page in {s.page_id: s.page for s in allowed}.values()
        }
        messages_enqueue_many(_specs(row=row, messages=messages, subscribers=allowed, incident=incident))
        if subscribers:
            row.cursor = subscribers[-1].pk
            row.recipients += len(allowed)
        if len(subscribers) < size:
            row.done_at = timezone.now()
        row.save(update_fields=["cursor", "recipients", "done_at", "updated_at"])
        more = row.done_at is None
        if more:
            transaction.on_commit(lambda: _publish_expansion(event_id), robust=True)
    return more


def page_events_resume(now: datetime, limit: int = 100) -> int:
    """Queue the expansion of page events whose task was lost (joined to the public
    subscribers' resume sweep)."""
    stale = now - timedelta(seconds=conf.sweep_grace_seconds())
    ids = list(
        PageEvent.objects.filter(done_at__isnull=True, updated_at__lt=stale)
        .order_by("updated_at")
        .values_list("pk", flat=True)[:limit]
    )
    for event_id in ids:
        _publish_expansion(event_id)
    return len(ids)
