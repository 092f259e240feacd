"""The Google-style feed: /incidents.json and /products.json."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.api.conftest import World

pytestmark = pytest.mark.django_db

INCIDENT_KEYS = {
    "id", "begin", "created", "modified", "external_desc", "updates", "most_recent_update",
    "status_impact", "severity", "service_key", "service_name", "affected_products", "uri",
    "currently_affected_locations", "previously_affected_locations",
}  # fmt: skip


def test_it_lists_public_incidents_in_the_google_format(anon: Client, world: World) -> None:
    body = anon.get("/incidents.json").json()
    assert [i["external_desc"] for i in body] == [
        "Elevated write latency in us-central1-b",
        "Spam filtering delayed",
        "Gmail unavailable for web users",
    ]
    ongoing, delayed, outage = body
    assert set(ongoing) == INCIDENT_KEYS  # no "end" while ongoing
    assert set(outage) == INCIDENT_KEYS | {"end"}
    assert outage["begin"] == "2009-09-01T19:45:00.000+00:00"
    assert outage["end"] == "2009-09-01T21:15:00.000+00:00"
    assert (outage["status_impact"], outage["severity"]) == ("SERVICE_OUTAGE", "high")
    assert (delayed["status_impact"], delayed["severity"]) == ("SERVICE_DISRUPTION", "medium")
    assert outage["affected_products"] == [{"title": "Gmail", "id": world.gmail.public_id}]
    assert outage["uri"] == f"incidents/{world.outage.public_id}"
    assert outage["most_recent_update"] == outage["updates"][0]
    assert outage["most_recent_update"]["status"] == "AVAILABLE"
    assert outage["currently_affected_locations"] == []
    assert outage["previously_affected_locations"] == [{"title": "Global", "id": "global"}]
    assert ongoing["currently_affected_locations"] == [{"title": "us-central1-b", "id": "us-central1-b"}]
    assert ongoing["previously_affected_locations"] == []
    assert [u["status"] for u in ongoing["updates"]] == ["SERVICE_DISRUPTION", "SERVICE_DISRUPTION"]
    assert ongoing["updates"][0]["text"] == "A fix is rolling out."
    text = anon.get("/incidents.json").content.decode()
    for secret in ("Billing", "Secret staff drill", "Planned network work"):
        assert secret not in text


def test_it_lists_public_products(anon: Client, world: World) -> None:
    body = anon.get("/products.json").json()
    assert sorted(p["title"] for p in body["products"]) == ["Cloud Storage", "Gmail"]
    assert {"title": "Gmail", "id": world.gmail.public_id} in body["products"]
