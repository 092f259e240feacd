"""Builders for the alert intake tests: integrations with the Cloud Storage rules, and
posting payloads the way each vendor does (bearer token, or HMAC for generic)."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

from django.test import Client

from alerts import services
from alerts.models import Integration
from incidents.models import ImpactLevel, Incident, IncidentImpact, Location, Product
from tests.builders import make_location, make_product

PAYLOADS = Path(__file__).parent / "payloads"


def load_payloads(name: str) -> list[dict[str, Any]]:
    return json.loads((PAYLOADS / name).read_text())  # type: ignore[no-any-return]


def alert_drafts() -> list[Incident]:
    """Draft incidents opened from alerts, newest first."""
    return list(
        Incident.objects.filter(is_public=False, alert_group__isnull=False).order_by("-started_at", "-id")
    )


def cloud_storage_catalogue() -> tuple[Product, Product, Location, Location]:
    """Cloud Storage and a fallback product; the region and the zone of the demo incident."""
    gcs = make_product("Cloud Storage", slug="cloud-storage")
    other = make_product("Other services", slug="other", position=9)
    region = make_location("us-central1")
    zone = make_location("us-central1-b", kind=Location.Kind.ZONE, parent=region)
    return gcs, other, region, zone


def make_integration(kind: str, *, gcs: Product, fallback: Product, **kw: Any) -> Integration:
    integration = services.integration_create(
        name=f"{kind} test",
        kind=kind,
        default_product=fallback,
        default_level=ImpactLevel.DEGRADED_PERFORMANCE,
        **kw,
    )
    services.rule_save(
        integration=integration,
        product=gcs,
        matchers={"service": "storage", "severity": "critical"},
        level=ImpactLevel.MAJOR_OUTAGE,
        impact=IncidentImpact.CRITICAL,
        position=1,
    )
    services.rule_save(
        integration=integration,
        product=gcs,
        matchers={"service": "storage"},
        level=ImpactLevel.PARTIAL_OUTAGE,
        impact=IncidentImpact.MAJOR,
        position=2,
    )
    return integration


def url_for(integration: Integration) -> str:
    return f"/api/v1/integrations/{integration.pk}/alerts/"


def signed_headers(secret: str, body: bytes, *, timestamp: int | None = None) -> dict[str, Any]:
    """A generic sender's headers: the timestamp, a fresh delivery id, and the HMAC over them and the body."""
    timestamp = int(time.time()) if timestamp is None else timestamp
    delivery = uuid.uuid4().hex
    return {
        "HTTP_X_STATUS_TIMESTAMP": str(timestamp),
        "HTTP_X_STATUS_DELIVERY": delivery,
        "HTTP_X_SIGNATURE_256": services.signature_for(
            secret=secret, timestamp=timestamp, delivery=delivery, body=body
        ),
    }


def post(client: Client, integration: Integration, payload: Any, *, secret: str | None = None) -> Any:
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    secret = integration.issued_secret if secret is None else secret
    headers: dict[str, Any] = {}
    if integration.kind == Integration.Kind.GENERIC:
        headers.update(signed_headers(secret, body))
    else:
        headers["HTTP_AUTHORIZATION"] = f"Bearer {secret}"
    return client.generic("POST", url_for(integration), body, content_type="application/json", **headers)
