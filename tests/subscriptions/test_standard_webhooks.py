"""Our webhooks as a Standard Webhooks 1.0 receiver sees them, checked with the
`standardwebhooks` library itself; the deprecated `sha256=` pair for secrets of the old
form; a 410 Gone unsubscribes."""

from __future__ import annotations

from typing import Any

import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from incidents import services
from incidents.models import ImpactWindow, Incident
from outbox.models import DeliveryAttempt, OutboundMessage
from outbox.services import outbox_sweep
from outbox.signing import new_secret
from subscriptions import notifications
from subscriptions import services as subscription_services
from subscriptions.models import Subscriber
from tests.builders import utc
from tests.subscriptions.builders import make_subscriber
from tests.subscriptions.conftest import WebhookReceiver
from tests.subscriptions.test_webhooks import _verify as verify_legacy

pytestmark = pytest.mark.django_db


def _open(product: Any) -> Incident:
    return services.incident_open(
        title="Gmail web interface unavailable",
        impact=Incident.Impact.CRITICAL,
        started_at=utc(2009, 9, 1, 19, 45),
        body="Users cannot reach the web interface.",
        windows=[
            services.WindowSpec(
                product=product, level=ImpactWindow.Level.MAJOR_OUTAGE, started_at=utc(2009, 9, 1, 19, 45)
            )
        ],
    )


def _hook(receiver: WebhookReceiver, product: Any, secret: str) -> Subscriber:
    return make_subscriber(
        "owner@example.com", kind=Subscriber.Kind.WEBHOOK, url=receiver.url, products=[product], secret=secret
    )


def test_a_delivery_and_its_retry_verify_with_the_standardwebhooks_library(
    webhook_receiver: WebhookReceiver, gmail, django_capture_on_commit_callbacks
) -> None:
    hook = _hook(webhook_receiver, gmail, new_secret())
    assert hook.secret.startswith("whsec_") and not hook.legacy_secret
    webhook_receiver.script = [503]  # the first try fails: retried later
    with django_capture_on_commit_callbacks(execute=True):
        incident = _open(gmail)
    outbox_sweep()
    first, retry = webhook_receiver.requests
    row = OutboundMessage.objects.get(channel="webhook")
    assert row.state == "sent"

    receiver = Webhook(hook.secret)
    for request in (first, retry):
        payload = receiver.verify(request.body, request.headers)
        assert payload["meta"]["event"] == "incident.opened"
        assert payload["incident"]["id"] == incident.public_id
        assert request.headers["webhook-signature"].startswith("v1,")
        # The new scheme only: no deprecated pair for a whsec_ secret.
        assert "x-status-signature" not in request.headers and "deprecation" not in request.headers
        assert request.headers["x-status-event"] == "incident.opened"
    # The delivery id is signed and is the same for every try of one delivery.
    assert first.headers["webhook-id"] == retry.headers["webhook-id"]
    assert first.headers["webhook-id"].startswith("msg_")
    assert first.headers["x-status-delivery"] == retry.headers["x-status-delivery"]

    tampered = dict(first.headers, **{"webhook-id": "msg_another"})
    with pytest.raises(WebhookVerificationError):
        receiver.verify(first.body, tampered)
    with pytest.raises(WebhookVerificationError):
        receiver.verify(first.body + b" ", first.headers)
    with pytest.raises(WebhookVerificationError):
        Webhook(new_secret()).verify(first.body, first.headers)


def test_a_secret_of_the_old_form_gets_both_schemes_with_the_deprecation_announced(
    webhook_receiver: WebhookReceiver, gmail, django_capture_on_commit_callbacks
) -> None:
    hook = _hook(webhook_receiver, gmail, "0123456789abcdef" * 4)
    assert hook.legacy_secret
    with django_capture_on_commit_callbacks(execute=True):
        _open(gmail)
    [request] = webhook_receiver.requests
    assert verify_legacy(hook.secret, request.headers, request.body)
    # The same key in the Standard Webhooks form (what the manage page shows).
    assert hook.standard_secret.startswith("whsec_")
    assert Webhook(hook.standard_secret).verify(request.body, request.headers)["meta"]["event"]
    assert request.headers["deprecation"] == "@1796601600"  # 2026-12-07T00:00:00Z
    assert request.headers["sunset"] == "Mon, 07 Jun 2027 00:00:00 GMT"

    # Rotating moves it to Standard Webhooks alone.
    rotated = subscription_services.subscriber_rotate_secret(subscriber=hook)
    assert not rotated.legacy_secret
    with django_capture_on_commit_callbacks(execute=True):
        notifications.webhook_test_send(subscriber=rotated)
    latest = webhook_receiver.requests[-1]
    assert "x-status-signature" not in latest.headers
    assert Webhook(rotated.secret).verify(latest.body, latest.headers)["meta"]["event"] == "test"
    assert latest.headers["x-status-event"] == "test"


def test_a_410_gone_unsubscribes_the_webhook_without_retrying(
    webhook_receiver: WebhookReceiver, gmail, django_capture_on_commit_callbacks
) -> None:
    hook = _hook(webhook_receiver, gmail, new_secret())
    webhook_receiver.script = [410]
    with django_capture_on_commit_callbacks(execute=True):
        incident = _open(gmail)
    row = OutboundMessage.objects.get(channel="webhook")
    assert row.state == "failed"
    assert DeliveryAttempt.objects.get(message=row).status_code == 410
    assert not Subscriber.objects.filter(pk=hook.pk).exists()
    outbox_sweep()
    with django_capture_on_commit_callbacks(execute=True):
        services.incident_post_update(incident=incident, status=Incident.Status.IDENTIFIED, body="Found it.")
    outbox_sweep()
    # Not retried, and the next event is not sent to it.
    assert len(webhook_receiver.requests) == 1
    assert OutboundMessage.objects.filter(channel="webhook").count() == 1


def test_a_400_is_not_a_410(
    webhook_receiver: WebhookReceiver, gmail, django_capture_on_commit_callbacks
) -> None:
    hook = _hook(webhook_receiver, gmail, new_secret())
    webhook_receiver.script = [400]
    with django_capture_on_commit_callbacks(execute=True):
        _open(gmail)
    hook.refresh_from_db()
    assert hook.failure_count == 1 and hook.disabled_at is None
