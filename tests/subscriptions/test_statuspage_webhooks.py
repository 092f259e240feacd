"""Statuspage-format webhooks as a receiver sees them: the event named per event in
`X-Status-Event`, the page id the /api/v2/ documents use, and `component_update` events
when a product's level changes (from a write, or with the clock on the minute tick)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from freezegun import freeze_time

from core.site import page_id
from incidents import services
from incidents.models import ImpactWindow, Incident
from subscriptions import components
from subscriptions.models import ComponentLevel, Subscriber
from tests.subscriptions.builders import make_subscriber
from tests.subscriptions.conftest import WebhookReceiver

pytestmark = pytest.mark.django_db


def _hook(receiver: WebhookReceiver, payload_format: str, email: str = "owner@example.com") -> Subscriber:
    hook = make_subscriber(email, kind=Subscriber.Kind.WEBHOOK, url=receiver.url + f"?{payload_format}")
    hook.payload_format = payload_format
    hook.save()
    return hook


def _by_event(receiver: WebhookReceiver, fmt: str = "statuspage") -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for request in receiver.requests:
        if request.path.endswith(f"?{fmt}"):
            found.setdefault(request.headers["x-status-event"], []).append(request.json)
    return found


def test_incident_and_component_events_are_named_and_shaped_as_statuspage_does(
    webhook_receiver: WebhookReceiver, gmail, cloud_storage, django_capture_on_commit_callbacks
) -> None:
    _hook(webhook_receiver, "statuspage")
    _hook(webhook_receiver, "native", "native@example.com")
    start = timezone.now() - timedelta(minutes=30)
    with django_capture_on_commit_callbacks(execute=True):
        incident = services.incident_open(
            title="Gmail down",
            impact=Incident.Impact.CRITICAL,
            started_at=start,
            body="Investigating.",
            windows=[
                services.WindowSpec(product=gmail, level=ImpactWindow.Level.MAJOR_OUTAGE, started_at=start)
            ],
        )
    with django_capture_on_commit_callbacks(execute=True):
        services.incident_resolve(incident=incident, body="Fixed.")

    events = _by_event(webhook_receiver)
    assert set(events) == {"incident.opened", "incident.resolved", "component.updated"}
    opened = events["incident.opened"][0]
    assert opened["page"]["id"] == page_id()  # the id of /api/v2/summary.json's page
    assert opened["incident"]["id"] == incident.public_id
    changes = [
        (e["component_update"]["old_status"], e["component_update"]["new_status"])
        for e in events["component.updated"]
    ]
    assert changes == [("operational", "major_outage"), ("major_outage", "operational")]
    first = events["component.updated"][0]
    assert set(first) == {"meta", "page", "component_update", "component"}
    assert first["component"] == {
        "id": gmail.public_id,
        "name": "Gmail",
        "status": "major_outage",
        "created_at": gmail.created_at.isoformat(),
    }
    assert first["component_update"]["component_id"] == gmail.public_id
    assert first["page"]["id"] == page_id() and first["meta"]["unsubscribe"].startswith("http://testserver/")
    # Cloud Storage never changed; the native webhook gets incident events only.
    assert all(e["component"]["id"] == gmail.public_id for e in events["component.updated"])
    assert set(_by_event(webhook_receiver, "native")) == {"incident.opened", "incident.resolved"}


def test_the_tick_announces_levels_that_move_with_the_clock_once(
    webhook_receiver: WebhookReceiver, gmail, django_capture_on_commit_callbacks
) -> None:
    _hook(webhook_receiver, "statuspage")
    start = timezone.now() + timedelta(hours=1)
    with django_capture_on_commit_callbacks(execute=True):
        services.incident_open(
            title="Planned work",
            kind=Incident.Kind.MAINTENANCE,
            impact=Incident.Impact.NONE,
            scheduled_for=start,
            scheduled_until=start + timedelta(hours=1),
            body="Planned.",
            windows=[
                services.WindowSpec(
                    product=gmail,
                    level=ImpactWindow.Level.UNDER_MAINTENANCE,
                    started_at=start,
                    ended_at=start + timedelta(hours=1),
                )
            ],
        )
    assert "component.updated" not in _by_event(webhook_receiver)  # nothing moved yet
    with freeze_time(start + timedelta(minutes=5)), django_capture_on_commit_callbacks(execute=True):
        assert components.component_levels_sync() == 1
        assert components.component_levels_sync() == 0  # a second tick: nothing new
    [update] = _by_event(webhook_receiver)["component.updated"]
    assert (update["component_update"]["old_status"], update["component_update"]["new_status"]) == (
        "operational",
        "under_maintenance",
    )
    assert ComponentLevel.objects.get(product=gmail).level == "under_maintenance"


def test_with_nobody_listening_the_writer_skips_and_the_tick_keeps_the_record(gmail) -> None:
    start = timezone.now() - timedelta(minutes=5)
    services.incident_open(
        title="Gmail slow",
        started_at=start,
        body="Investigating.",
        windows=[
            services.WindowSpec(
                product=gmail, level=ImpactWindow.Level.DEGRADED_PERFORMANCE, started_at=start
            )
        ],
    )
    assert not ComponentLevel.objects.exists()
    assert components.component_levels_sync() == 1
    assert ComponentLevel.objects.get(product=gmail).level == "degraded_performance"
