"""The intake endpoint and services: credentials, limits, and the awkward alert orders.

Each test asserts the response, the rows, and what staff or subscribers were sent.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client, TestCase
from django.utils import timezone
from freezegun import freeze_time

from alerts import selectors, services
from alerts.models import Alert, AlertGroup, Integration, ReceivedPayload
from incidents import services as incident_services
from incidents.models import ImpactWindow, Incident, IncidentUpdate
from outbox.models import OutboundMessage
from subscriptions.models import Subscriber
from tests.alerts.helpers import (
    alert_drafts,
    cloud_storage_catalogue,
    make_integration,
    post,
    signed_headers,
    url_for,
)

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)


def iso(value: datetime) -> str:
    return value.isoformat().replace("+00:00", "Z")


def am_payload(*alerts: dict[str, Any], group: str = '{}:{alertname="GCSWriteErrors"}') -> dict[str, Any]:
    return {
        "version": "4",
        "groupKey": group,
        "status": alerts[0]["status"],
        "receiver": "sp",
        "alerts": list(alerts),
    }


def am_alert(
    fingerprint: str = "f1",
    *,
    status: str = "firing",
    starts: datetime = T0,
    ends: datetime | None = None,
    labels: dict[str, str] | None = None,
    summary: str = "Cloud Storage write errors",
) -> dict[str, Any]:
    return {
        "status": status,
        "labels": labels or {"alertname": "GCSWriteErrors", "service": "storage", "region": "us-central1"},
        "annotations": {"summary": summary},
        "startsAt": iso(starts),
        "endsAt": iso(ends) if ends else "0001-01-01T00:00:00Z",
        "fingerprint": fingerprint,
    }


@pytest.fixture
def catalogue() -> Any:
    return cloud_storage_catalogue()


@pytest.fixture
def am(catalogue: Any) -> Integration:
    gcs, fallback, _, _ = catalogue
    return make_integration("alertmanager", gcs=gcs, fallback=fallback)


@pytest.fixture
def generic(catalogue: Any) -> Integration:
    gcs, fallback, _, _ = catalogue
    return make_integration("generic", gcs=gcs, fallback=fallback)


def counts() -> tuple[int, ...]:
    return (
        Incident.objects.count(),
        ImpactWindow.objects.count(),
        IncidentUpdate.objects.count(),
        Alert.objects.count(),
        AlertGroup.objects.count(),
        ReceivedPayload.objects.count(),
        OutboundMessage.objects.count(),
    )


# --- Credentials, size, throttling, malformed ------------------------------------------------


def test_it_refuses_bad_credentials_with_401_and_writes_nothing(
    client: Client, am: Integration, generic: Integration
) -> None:
    body = json.dumps(am_payload(am_alert())).encode()
    before = counts()
    for response in (
        client.post(url_for(am), body, content_type="application/json"),
        post(client, am, body, secret="wrong"),
        client.post(
            url_for(am), body, content_type="application/json", HTTP_AUTHORIZATION=f"Token {am.issued_secret}"
        ),
        client.post(
            "/api/v1/integrations/999999/alerts/",
            body,
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {am.issued_secret}",
        ),
        post(client, generic, body, secret="wrong"),
        client.post(
            url_for(generic),
            body,
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {generic.secret}",
        ),
    ):
        assert response.status_code == 401, response.content
        assert response.json()["code"] == "authentication_failed"
        assert response.json()["detail"] == "Unknown integration or bad credentials."
        assert response["WWW-Authenticate"] == 'Bearer realm="alerts"'
    services.integration_update(integration=am, changes={"is_active": False})
    assert post(client, am, body).status_code == 401
    assert counts() == before


def test_it_answers_400_with_a_message_and_keeps_the_malformed_payload(
    client: Client, am: Integration
) -> None:
    response = post(client, am, b'{"version": "4", "groupKey": "g", "alerts": [{"status": "firing"}]}')
    assert response.status_code == 400
    assert response.json()["detail"] == "alerts[0].startsAt: expected an RFC 3339 time string, got NoneType."
    kept = ReceivedPayload.objects.get()
    assert (kept.status_code, kept.outcome) == (400, response.json()["detail"])
    assert Incident.objects.count() == Alert.objects.count() == 0


def test_it_refuses_a_payload_over_the_size_limit_with_413(
    client: Client, am: Integration, settings: Any
) -> None:
    settings.ALERTS_MAX_PAYLOAD_BYTES = 200
    response = post(client, am, am_payload(am_alert(summary="x" * 300)))
    assert response.status_code == 413
    assert response.json()["code"] == "too_large"
    assert "200 bytes" in response.json()["detail"]
    assert counts()[0] == ReceivedPayload.objects.count() == 0


def test_it_throttles_per_integration(
    client: Client, am: Integration, generic: Integration, settings: Any
) -> None:
    settings.ALERTS_INTAKE_RATE = "2/min"
    payload = am_payload(am_alert())
    assert [post(client, am, payload).status_code for _ in range(2)] == [200, 200]
    third = post(client, am, payload)
    assert third.status_code == 429
    assert int(third["Retry-After"]) >= 1
    # Another integration has its own allowance.
    assert post(client, generic, {"alerts": []}).status_code == 200


def test_generic_kind_takes_an_hmac_signature_of_the_exact_body(client: Client, generic: Integration) -> None:
    body = json.dumps(
        {
            "alerts": [
                {
                    "id": "gcs",
                    "status": "firing",
                    "title": "GCS writes",
                    "labels": {"service": "storage"},
                    "started_at": iso(T0),
                }
            ]
        }
    ).encode()
    response = post(client, generic, body)
    assert response.status_code == 200, response.content
    assert response.json()["alerts"][0]["action"] == "open"
    # The same signature over a changed body is refused.
    tampered = client.post(
        url_for(generic),
        body.replace(b"GCS", b"XSS"),
        content_type="application/json",
        **signed_headers(generic.secret, body),
    )
    assert tampered.status_code == 401


# --- Mapping -------------------------------------------------------------------------------------


def test_unknown_labels_fall_to_the_default_rule_and_say_so(
    client: Client, am: Integration, catalogue: Any
) -> None:
    _, fallback, _, _ = catalogue
    response = post(client, am, am_payload(am_alert(labels={"alertname": "QueueDepth", "team": "x"})))
    assert "default rule (no rule matches these labels)" in response.json()["alerts"][0]["reason"]
    incident = Incident.objects.get()
    window = incident.windows.get()
    assert (window.product, window.location, window.level) == (fallback, None, "degraded_performance")
    assert "matched no rule" in incident.internal_notes
    assert Alert.objects.get().used_default_rule is True


def test_severity_critical_maps_to_a_major_outage_in_the_zone(
    client: Client, am: Integration, catalogue: Any
) -> None:
    gcs, _, _, zone = catalogue
    labels = {
        "alertname": "GCSDown",
        "service": "storage",
        "severity": "critical",
        "region": "us-central1",
        "zone": "us-central1-b",
    }
    post(client, am, am_payload(am_alert(labels=labels)))
    incident = Incident.objects.get()
    assert incident.impact == "critical"
    window = incident.windows.get()
    assert (window.product, window.location, window.level) == (gcs, zone, "major_outage")


def test_alerts_of_one_group_share_the_draft_and_one_window_per_product_and_location(
    client: Client, am: Integration, catalogue: Any
) -> None:
    _, _, region, zone = catalogue
    a = am_alert(
        "a", labels={"alertname": "W", "service": "storage", "region": "us-central1", "instance": "1"}
    )
    b = am_alert(
        "b",
        labels={"alertname": "W", "service": "storage", "region": "us-central1", "instance": "2"},
        starts=T0 + timedelta(minutes=1),
    )
    c = am_alert(
        "c",
        labels={"alertname": "W", "service": "storage", "zone": "us-central1-b"},
        starts=T0 + timedelta(minutes=2),
    )
    response = post(client, am, am_payload(a, b, c))
    assert [o["action"] for o in response.json()["alerts"]] == ["open", "join", "join"]
    incident = Incident.objects.get()
    assert sorted((w.location.name, w.started_at) for w in incident.windows.all()) == [  # type: ignore[union-attr]
        ("us-central1", T0),
        ("us-central1-b", T0 + timedelta(minutes=2)),
    ]
    # The region window stays open until both alerts on it resolve, and ends at the later end.
    with freeze_time(T0 + timedelta(hours=2)):
        post(
            client,
            am,
            am_payload(am_alert("a", status="resolved", labels=a["labels"], ends=T0 + timedelta(minutes=30))),
        )
        assert incident.windows.get(location=region).ended_at is None
        post(
            client,
            am,
            am_payload(
                am_alert(
                    "b",
                    status="resolved",
                    labels=b["labels"],
                    starts=T0 + timedelta(minutes=1),
                    ends=T0 + timedelta(minutes=20),
                )
            ),
        )
    window = incident.windows.get(location=region)
    assert window.ended_at == T0 + timedelta(minutes=30)
    assert incident.windows.get(location=zone).ended_at is None
    assert list(selectors.alerts_for_incident(incident).values_list("fingerprint", flat=True)) == [
        "a",
        "b",
        "c",
    ]


# --- Order, duplicates, flapping ---------------------------------------------------------------


def test_a_resolution_before_any_firing_is_recorded_and_opens_nothing(
    client: Client, am: Integration
) -> None:
    with freeze_time(T0 + timedelta(hours=1)):
        resolved = post(client, am, am_payload(am_alert(status="resolved", ends=T0 + timedelta(minutes=5))))
        assert resolved.json()["alerts"][0]["action"] == "record"
        # The late firing of the same occurrence is older than what we know: ignored.
        late = post(client, am, am_payload(am_alert()))
    assert late.json()["alerts"][0]["action"] == "stale"
    assert Incident.objects.count() == 0
    assert Alert.objects.get().status == "resolved"


def test_an_out_of_order_firing_after_its_resolution_changes_nothing(client: Client, am: Integration) -> None:
    with freeze_time(T0 + timedelta(hours=1)):
        post(client, am, am_payload(am_alert()))
        post(client, am, am_payload(am_alert(status="resolved", ends=T0 + timedelta(minutes=30))))
        before = counts()[:5]
        response = post(client, am, am_payload(am_alert()))
    assert response.json()["alerts"][0]["action"] == "stale"
    assert counts()[:5] == before
    incident = Incident.objects.get()
    assert incident.status == "resolved"
    assert incident.windows.get().ended_at == T0 + timedelta(minutes=30)


def test_a_flapping_alert_keeps_one_window_and_resolves_after_the_debounce(
    client: Client, am: Integration
) -> None:
    assert am.flap_debounce_seconds == 300
    with freeze_time(T0 + timedelta(minutes=10)):
        post(client, am, am_payload(am_alert()))
        post(client, am, am_payload(am_alert(status="resolved", ends=T0 + timedelta(minutes=10))))
        incident = Incident.objects.get()
        # Within the debounce: not resolved yet, the window closed at the end for now.
        assert incident.status == "investigating"
        assert incident.windows.get().ended_at == T0 + timedelta(minutes=10)
    with freeze_time(T0 + timedelta(minutes=12)):
        again = post(client, am, am_payload(am_alert(starts=T0 + timedelta(minutes=12))))
    assert again.json()["alerts"][0]["action"] == "flap"
    window = incident.windows.get()  # still one window, open again from the first start
    assert (window.started_at, window.ended_at) == (T0, None)
    assert Alert.objects.get().flaps == 1
    with freeze_time(T0 + timedelta(minutes=20)):
        post(
            client,
            am,
            am_payload(
                am_alert(
                    status="resolved", starts=T0 + timedelta(minutes=12), ends=T0 + timedelta(minutes=20)
                )
            ),
        )
        assert services.alerts_tick().resolved == 0  # the debounce has not passed
    incident.refresh_from_db()
    assert incident.status == "investigating"
    with freeze_time(T0 + timedelta(minutes=26)):
        assert services.alerts_tick().resolved == 1
        assert services.alerts_tick().resolved == 0  # idempotent
    incident.refresh_from_db()
    assert (incident.status, incident.resolved_at) == ("resolved", T0 + timedelta(minutes=20))
    assert incident.windows.get().ended_at == T0 + timedelta(minutes=20)
    assert incident.updates.count() == 2  # opened, resolved automatically


def test_a_human_update_means_staff_are_told_instead_of_auto_resolving(
    client: Client, am: Integration, alice: User
) -> None:
    with freeze_time(T0 + timedelta(hours=1)):
        post(client, am, am_payload(am_alert()))
        incident = Incident.objects.get()
        incident_services.incident_post_update(
            incident=incident, status="identified", body="We found the cause.", author=alice
        )
        post(client, am, am_payload(am_alert(status="resolved", ends=T0 + timedelta(minutes=40))))
        post(client, am, am_payload(am_alert(status="resolved", ends=T0 + timedelta(minutes=40))))  # resent
    incident.refresh_from_db()
    assert incident.status == "identified"
    assert incident.windows.get().ended_at == T0 + timedelta(minutes=40)
    group = AlertGroup.objects.get()
    assert "a person has posted updates" in group.needs_attention
    assert list(AlertGroup.objects.exclude(needs_attention="")) == [group]
    [email] = OutboundMessage.objects.filter(purpose="alerts-attention")
    assert email.to == ["alice@example.org"]
    assert incident.title in email.subject


# --- Drafts: publishing ----------------------------------------------------------------------


def test_a_draft_publishes_itself_after_n_minutes_if_still_firing(client: Client, am: Integration) -> None:
    rule = am.rules.get(matchers={"service": "storage"})
    services.rule_save(
        integration=am,
        rule=rule,
        product=rule.product,
        matchers=rule.matchers,
        level=rule.level,
        impact=rule.impact,
        auto_publish_after_minutes=10,
        position=rule.position,
    )
    Subscriber.objects.create(email="ops@example.com", all_products=True, confirmed_at=T0)
    now = timezone.now()
    post(client, am, am_payload(am_alert()))
    incident = Incident.objects.get()
    assert not OutboundMessage.objects.filter(purpose="subscriptions.email").exists()
    with freeze_time(now + timedelta(minutes=5)):
        assert services.alerts_tick().published == 0
    # Subscribers are reached after the commit (one event row, expanded by a task).
    with freeze_time(now + timedelta(minutes=11)), TestCase.captureOnCommitCallbacks(execute=True):
        assert services.alerts_tick().published == 1
        assert services.alerts_tick().published == 0
    incident.refresh_from_db()
    assert incident.is_public
    assert alert_drafts() == []
    # Subscribers hear "opened" once, at publication.
    [notice] = OutboundMessage.objects.filter(purpose="subscriptions.email")
    assert notice.to == ["ops@example.com"]
    with TestCase.captureOnCommitCallbacks(execute=True):
        incident_services.incident_publish(incident=incident)
    assert OutboundMessage.objects.filter(purpose="subscriptions.email").count() == 1


def test_a_draft_resolved_before_its_auto_publish_stays_a_draft(client: Client, am: Integration) -> None:
    rule = am.rules.get(matchers={"service": "storage"})
    services.rule_save(
        integration=am,
        rule=rule,
        product=rule.product,
        matchers=rule.matchers,
        level=rule.level,
        impact=rule.impact,
        auto_publish_after_minutes=10,
        position=rule.position,
    )
    now = timezone.now()
    post(client, am, am_payload(am_alert(starts=now - timedelta(minutes=3))))
    post(
        client,
        am,
        am_payload(
            am_alert(status="resolved", starts=now - timedelta(minutes=3), ends=now - timedelta(minutes=1))
        ),
    )
    with freeze_time(now + timedelta(minutes=11)):
        result = services.alerts_tick()
    assert result.published == 0
    incident = Incident.objects.get()
    assert (incident.is_public, incident.status) == (False, "resolved")
    assert AlertGroup.objects.get().publish_due_at is None


def test_staff_publish_a_draft_in_one_call(client: Client, am: Integration) -> None:
    post(client, am, am_payload(am_alert()))
    [draft] = alert_drafts()
    assert [a.fingerprint for a in draft.alert_group.alerts.all()] == ["f1"]
    # A draft leaks nowhere public: pages, v1, Statuspage v2, feeds.
    for path in (
        "/",
        "/api/v1/incidents/",
        "/api/v2/incidents.json",
        "/api/v2/summary.json",
        "/history.atom",
    ):
        response = client.get(path)
        assert response.status_code == 200, path
        assert draft.public_id not in response.content.decode(), path
    assert client.get(f"/incidents/{draft.public_id}/").status_code == 404
    services.alert_draft_publish(incident=draft)
    draft.refresh_from_db()
    assert draft.is_public
    assert client.get(f"/incidents/{draft.public_id}/").status_code == 200


# --- Preview and retention ---------------------------------------------------------------------


def test_the_preview_says_what_would_happen_and_writes_nothing(am: Integration) -> None:
    body = json.dumps(
        am_payload(
            am_alert("a"),
            am_alert("b", labels={"alertname": "Other", "team": "x"}, starts=T0 + timedelta(minutes=1)),
        )
    ).encode()
    before = counts()
    lines = services.integration_preview(integration=am, body=body)
    assert counts() == before
    assert lines[0].startswith(
        "Cloud Storage write errors (firing): would open: opens a draft incident (rule "
    )
    assert "Partial outage on Cloud Storage in us-central1 from 2026-11-02 10:00:00 UTC" in lines[0]
    assert "would join the draft opened above" in lines[1]
    assert services.integration_preview(integration=am, body=b"nope")[0].startswith(
        "Refused (400): The body is not JSON"
    )


def test_kept_payloads_are_purged_after_the_retention(client: Client, am: Integration, settings: Any) -> None:
    settings.ALERTS_PAYLOAD_RETENTION_DAYS = 7
    with freeze_time(T0):
        post(client, am, am_payload(am_alert()))
    with freeze_time(T0 + timedelta(days=6)):
        post(client, am, am_payload(am_alert()))
    with freeze_time(T0 + timedelta(days=7, minutes=1)):
        assert services.payloads_purge() == 1
        assert services.payloads_purge() == 0
    assert ReceivedPayload.objects.count() == 1
