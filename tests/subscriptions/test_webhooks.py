"""Webhook subscribers against a real HTTP receiver: signatures, retries, disabling."""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

import pytest
from django.core import mail
from django.test import Client
from django.urls import reverse

from incidents import services
from incidents.models import ImpactWindow, Incident
from outbox.models import DeliveryAttempt, OutboundMessage
from outbox.services import outbox_sweep
from subscriptions.models import Subscriber
from subscriptions.tokens import Purpose, make_token
from tests.builders import utc
from tests.subscriptions.builders import make_subscriber
from tests.subscriptions.conftest import WebhookReceiver

pytestmark = pytest.mark.django_db


def _open(product: Any, title: str = "Gmail web interface unavailable") -> Incident:
    return services.incident_open(
        title=title,
        impact=Incident.Impact.CRITICAL,
        started_at=utc(2009, 9, 1, 19, 45),
        body="Users cannot reach the web interface.",
        windows=[
            services.WindowSpec(
                product=product, level=ImpactWindow.Level.MAJOR_OUTAGE, started_at=utc(2009, 9, 1, 19, 45)
            )
        ],
    )


def _hook(receiver: WebhookReceiver, *products: Any) -> Subscriber:
    return make_subscriber(
        "owner@example.com", kind=Subscriber.Kind.WEBHOOK, url=receiver.url, products=products
    )


def _verify(secret: str, headers: dict[str, str], body: bytes) -> bool:
    """What a receiver does, following the documented scheme."""
    timestamp = headers["x-status-timestamp"]
    expected = (
        "sha256=" + hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    )
    return hmac.compare_digest(expected, headers["x-status-signature"])


def test_it_posts_a_signed_event(
    webhook_receiver: WebhookReceiver, gmail, cloud_storage, django_capture_on_commit_callbacks
) -> None:
    hook = _hook(webhook_receiver, gmail)
    with django_capture_on_commit_callbacks(execute=True):
        incident = _open(gmail)
        _open(cloud_storage, "Cloud Storage errors")  # not for this hook
    [request] = webhook_receiver.requests
    assert request.path == "/hooks/status"
    assert request.headers["content-type"] == "application/json"
    assert _verify(hook.secret, request.headers, request.body)
    assert not _verify("another-secret", request.headers, request.body)
    assert not _verify(hook.secret, request.headers, request.body + b" ")

    payload = request.json
    assert payload["meta"]["event"] == "incident.opened"
    assert payload["incident"]["id"] == incident.public_id
    assert payload["incident"]["name"] == "Gmail web interface unavailable"
    assert payload["incident"]["status"] == "investigating"
    assert payload["incident"]["impact"] == "critical"
    assert payload["incident"]["components"] == [{"id": gmail.public_id, "name": "Gmail", "slug": "gmail"}]
    assert payload["update"]["body"] == "Users cannot reach the web interface."
    assert payload["incident"]["shortlink"] == f"http://testserver/incidents/{incident.public_id}/"

    row = OutboundMessage.objects.get(channel="webhook")
    assert row.state == "sent"
    assert row.ref == hook.outbox_ref


def test_it_delivers_once_after_two_failures_with_three_attempts_logged(
    webhook_receiver: WebhookReceiver, gmail, django_capture_on_commit_callbacks
) -> None:
    _hook(webhook_receiver, gmail)
    webhook_receiver.script = [500, 503]
    with django_capture_on_commit_callbacks(execute=True):
        _open(gmail)
    row = OutboundMessage.objects.get(channel="webhook")
    # HTTP 5xx: the host is in trouble, not this message; the try is logged but costs
    # none of its attempts (it would give up by age, OUTBOX_GIVE_UP_DAYS).
    assert row.state == "pending" and row.attempts == 0

    # The beat sweeper picks the due row up again (in-process mode has no countdowns).
    outbox_sweep()
    row.refresh_from_db()
    assert row.state == "pending" and row.attempts == 0
    outbox_sweep()
    row.refresh_from_db()
    assert row.state == "sent" and row.attempts == 1
    outbox_sweep()  # nothing left to do

    assert len(webhook_receiver.requests) == 3
    # Every try carries the same delivery id and body, so a receiver can deduplicate;
    # only the last was accepted.
    assert len({r.headers["x-status-delivery"] for r in webhook_receiver.requests}) == 1
    assert len({r.body for r in webhook_receiver.requests}) == 1
    attempts = list(DeliveryAttempt.objects.filter(message=row).order_by("number"))
    assert [(a.number, a.outcome, a.status_code) for a in attempts] == [
        (1, "outage", 500),
        (1, "outage", 503),
        (1, "sent", 200),
    ]
    assert Subscriber.objects.get().failure_count == 0


def test_it_disables_a_failing_webhook_and_tells_its_owner(
    webhook_receiver: WebhookReceiver, settings, gmail, django_capture_on_commit_callbacks
) -> None:
    settings.WEBHOOK_MAX_CONSECUTIVE_FAILURES = 3
    hook = _hook(webhook_receiver, gmail)
    # 4xx: refused for good, each event fails at once (a 5xx would be an outage; a 410
    # unsubscribes, tests/subscriptions/test_standard_webhooks.py).
    webhook_receiver.script = [400, 400, 200, 400, 400, 400]

    with django_capture_on_commit_callbacks(execute=True):
        incident = _open(gmail)
    for body in ("Still looking.", "Found it.", "Fix deploying.", "Rolling out.", "Almost."):
        with django_capture_on_commit_callbacks(execute=True):
            services.incident_post_update(incident=incident, status=Incident.Status.IDENTIFIED, body=body)
        hook.refresh_from_db()
        if hook.disabled_at is not None:
            break
    # fail, fail, ok (count back to 0), fail, fail, fail -> disabled on the sixth event.
    assert len(webhook_receiver.requests) == 6
    assert hook.failure_count == 3
    assert hook.disabled_at is not None
    assert "3 deliveries in a row failed" in hook.disabled_reason
    [notice] = [m for m in mail.outbox if "Webhook disabled" in m.subject]
    assert notice.to == ["owner@example.com"]
    assert webhook_receiver.url in notice.body
    assert "/subscriptions/manage/" in notice.body

    # Disabled: the next event is not sent to it.
    with django_capture_on_commit_callbacks(execute=True):
        services.incident_resolve(incident=incident, body="Fixed.")
    assert len(webhook_receiver.requests) == 6

    # The owner turns it back on from the manage page.
    client = Client()
    path = reverse("subscriptions:manage", args=[make_token(hook, Purpose.MANAGE)])
    assert b"Disabled" in client.get(path).content
    assert client.post(path, {"action": "reenable"}).status_code == 302
    hook.refresh_from_db()
    assert hook.disabled_at is None and hook.failure_count == 0


def test_it_shows_and_rotates_the_signing_secret(webhook_receiver: WebhookReceiver, gmail) -> None:
    hook = _hook(webhook_receiver, gmail)
    client = Client()
    path = reverse("subscriptions:manage", args=[make_token(hook, Purpose.MANAGE)])
    page = client.get(path)
    assert hook.secret.encode() in page.content
    client.post(path, {"action": "rotate"})
    old = hook.secret
    hook.refresh_from_db()
    assert hook.secret != old and hook.secret.startswith("whsec_")
