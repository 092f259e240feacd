"""A generic sender signs a timestamp and a delivery id with the body: a captured request
replayed is refused, and so is one outside the tolerance; bearer senders are unchanged."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone
from freezegun import freeze_time

from alerts import services
from alerts.models import Alert, IntakeDelivery, Integration, ReceivedPayload
from tests.alerts.helpers import cloud_storage_catalogue, make_integration, post, signed_headers, url_for

pytestmark = pytest.mark.django_db

BODY = json.dumps(
    {"alerts": [{"id": "gcs", "status": "firing", "title": "GCS", "started_at": "2026-11-02T10:00:00Z"}]}
).encode()


@pytest.fixture
def generic() -> Integration:
    gcs, fallback, _, _ = cloud_storage_catalogue()
    return make_integration("generic", gcs=gcs, fallback=fallback)


def _send(client: Client, integration: Integration, headers: dict[str, Any], body: bytes = BODY) -> Any:
    return client.generic("POST", url_for(integration), body, content_type="application/json", **headers)


def test_a_captured_delivery_replayed_125_times_is_refused_each_time(
    client: Client, generic: Integration
) -> None:
    captured = signed_headers(generic.secret, BODY)
    assert _send(client, generic, captured).status_code == 200
    for _ in range(125):
        again = _send(client, generic, captured)
        assert again.status_code == 401
        assert "already received" in again.json()["detail"]
    # A replay under a new delivery id fails the signature, which covers the id.
    forged = {**captured, "HTTP_X_STATUS_DELIVERY": "another-id"}
    assert _send(client, generic, forged).json()["detail"] == "Unknown integration or bad credentials."
    assert ReceivedPayload.objects.count() == 1
    assert IntakeDelivery.objects.count() == 1


@pytest.mark.parametrize("offset", [-301, 301])
def test_a_timestamp_outside_the_tolerance_is_refused(
    client: Client, generic: Integration, offset: int
) -> None:
    headers = signed_headers(generic.secret, BODY, timestamp=int(time.time()) + offset)
    response = _send(client, generic, headers)
    assert response.status_code == 401
    assert "more than 300 s from our clock" in response.json()["detail"]
    assert Alert.objects.count() == ReceivedPayload.objects.count() == 0
    assert (
        _send(
            client, generic, signed_headers(generic.secret, BODY, timestamp=int(time.time()) - 299)
        ).status_code
        == 200
    )


def test_the_tolerance_is_a_setting(client: Client, generic: Integration, settings: Any) -> None:
    settings.ALERTS_SIGNATURE_TOLERANCE_SECONDS = 30
    response = _send(client, generic, signed_headers(generic.secret, BODY, timestamp=int(time.time()) - 31))
    assert response.status_code == 401
    assert "more than 30 s" in response.json()["detail"]


def test_a_body_only_signature_of_the_former_scheme_is_told_what_to_send(
    client: Client, generic: Integration
) -> None:
    old = "sha256=" + hmac.new(generic.secret.encode(), BODY, hashlib.sha256).hexdigest()
    response = _send(client, generic, {"HTTP_X_SIGNATURE_256": old})
    assert response.status_code == 401
    assert "X-Status-Timestamp" in response.json()["detail"]


def test_delivery_ids_are_kept_for_twice_the_tolerance_then_purged(
    client: Client, generic: Integration
) -> None:
    start = timezone.now()
    with freeze_time(start):
        assert post(client, generic, BODY).status_code == 200
    with freeze_time(start + timedelta(seconds=599)):
        services.payloads_purge()
        assert IntakeDelivery.objects.count() == 1
    with freeze_time(start + timedelta(seconds=601)):
        services.payloads_purge()
        assert IntakeDelivery.objects.count() == 0


def test_bearer_senders_need_no_timestamp(client: Client) -> None:
    gcs, fallback, _, _ = cloud_storage_catalogue()
    am = make_integration("alertmanager", gcs=gcs, fallback=fallback)
    payload = {"version": "4", "groupKey": "g", "alerts": []}
    assert post(client, am, payload).status_code == 200
