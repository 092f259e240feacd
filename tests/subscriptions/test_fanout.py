"""The fan-out: one event row in the staff transaction, chunked expansion after commit.

The staff request must cost the same for ten subscribers as for a thousand (or a
million: bench/credits_bench.py --subscribers); the expansion is idempotent per
(event, subscriber) and renders each email once per chunk, byte for byte what a render
per subscriber gives.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from incidents import services
from incidents.models import ImpactWindow, Incident
from outbox.models import OutboundMessage
from subscriptions import emails, notifications
from subscriptions.models import NotificationEvent, Subscriber
from tests.builders import utc
from tests.subscriptions.builders import make_subscriber

pytestmark = pytest.mark.django_db


def _subscribers(n: int, *, start: int = 0) -> None:
    now = timezone.now()
    Subscriber.objects.bulk_create(
        [Subscriber(email=f"fan{i}@example.com", confirmed_at=now) for i in range(start, start + n)],
        batch_size=1000,
    )


def _open(product: Any) -> Incident:
    return services.incident_open(
        title="Gmail delivery delays",
        impact=Incident.Impact.MINOR,
        started_at=utc(2026, 1, 24, 13, 2),
        windows=[
            services.WindowSpec(
                product=product, level=ImpactWindow.Level.PARTIAL_OUTAGE, started_at=utc(2026, 1, 24, 13, 2)
            )
        ],
    )


def _update_queries(incident: Incident, body: str) -> int:
    with CaptureQueriesContext(connection) as queries:
        services.incident_post_update(incident=incident, status=Incident.Status.IDENTIFIED, body=body)
    return len(queries.captured_queries)


def test_it_costs_the_staff_request_the_same_for_10_and_1000_subscribers(gmail) -> None:
    _subscribers(10)
    incident = _open(gmail)
    # The first update also moves the incident's insights facts (its first-update time):
    # measured from the second on, both requests do the same work but for the readers.
    _update_queries(incident, "Looking into it.")
    small = _update_queries(incident, "Found it.")
    _subscribers(990, start=10)
    large = _update_queries(incident, "Fix rolling out.")
    assert small == large
    # Nothing per subscriber was written in those transactions: four event rows.
    assert OutboundMessage.objects.count() == 0
    assert NotificationEvent.objects.count() == 4


def test_it_expands_an_event_in_chunks_once_per_subscriber(gmail, settings) -> None:
    _subscribers(25)
    make_subscriber("hook-owner@example.com", kind=Subscriber.Kind.WEBHOOK, url="https://hooks.example.com/x")
    make_subscriber("disabled@example.com").__class__.objects.filter(email="disabled@example.com").update(
        disabled_at=timezone.now()
    )
    _open(gmail)
    event = NotificationEvent.objects.get()
    rounds = 0
    while notifications.notification_event_expand(event_id=event.pk, chunk=10):
        rounds += 1
    assert rounds == 2  # 10 + 10 + 6 (the last chunk is short: done)
    event.refresh_from_db()
    assert event.done_at is not None and event.recipients == 26
    assert OutboundMessage.objects.filter(channel="email").count() == 25
    assert OutboundMessage.objects.filter(channel="webhook").count() == 1
    # A redelivered chunk task, or the resume sweep, finds nothing left to do.
    NotificationEvent.objects.filter(pk=event.pk).update(done_at=None, cursor=0)
    while notifications.notification_event_expand(event_id=event.pk, chunk=10):
        pass
    assert OutboundMessage.objects.count() == 26
    keys = set(OutboundMessage.objects.values_list("idempotency_key", flat=True))
    assert len(keys) == 26 and all(k.startswith(f"notify:{event.key}:") for k in keys)


def test_it_renders_once_what_a_render_per_subscriber_gives(gmail) -> None:
    subscriber = make_subscriber("o'brien+status@example.com", products=[gmail])
    incident = _open(gmail)
    update = incident.updates.get()
    message = notifications.build_event_message(
        event=notifications.Event.INCIDENT_OPENED,
        key="k",
        incident=incident,
        products=[gmail],
        update=update,
    )
    links = emails.subscriber_links(subscriber)
    expected = emails.render_email(
        "subscription_notification", {**message.context, **links, "subscriber": subscriber}
    )
    spec = emails.SubscriberTemplate.render("subscription_notification", message.context).spec_for(
        subscriber=subscriber, key="k"
    )
    assert (spec.subject, spec.text, spec.html) == (expected.subject, expected.text, expected.html)
    assert spec.headers == emails.subscriber_headers(links["unsubscribe_url"])
    assert "o&#x27;brien+status@example.com" in spec.html


def test_it_resumes_an_event_whose_task_was_lost(gmail, settings) -> None:
    _subscribers(3)
    _open(gmail)  # the on_commit expansion never runs here: like a lost task
    assert OutboundMessage.objects.count() == 0
    NotificationEvent.objects.update(updated_at=timezone.now() - timedelta(minutes=5))
    assert notifications.notification_events_resume() == 1  # in-process: expands at once
    assert OutboundMessage.objects.count() == 3
    assert NotificationEvent.objects.get().done_at is not None
