"""Contract test: /api/v2/* against the documented Statuspage v2 shape.

Every documented key is present, enum values are within the documented sets, ids are
strings, timestamps are ISO 8601 with an offset. Existing Statuspage clients depend on
exactly this, so the expected keys are written out here rather than imported.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from django.test import Client

from incidents import services
from tests.api.conftest import World
from tests.builders import utc

pytestmark = pytest.mark.django_db

PAGE_KEYS = {"id", "name", "url", "time_zone", "updated_at"}
STATUS_KEYS = {"indicator", "description"}
COMPONENT_KEYS = {
    "id", "name", "status", "created_at", "updated_at", "position", "description", "showcase",
    "start_date", "group_id", "page_id", "group", "only_show_if_degraded",
}  # fmt: skip
INCIDENT_KEYS = {
    "id", "name", "status", "created_at", "updated_at", "monitoring_at", "resolved_at", "impact",
    "shortlink", "started_at", "page_id", "incident_updates", "components",
}  # fmt: skip
MAINTENANCE_KEYS = INCIDENT_KEYS | {"scheduled_for", "scheduled_until"}
UPDATE_KEYS = {
    "id", "status", "body", "incident_id", "created_at", "updated_at", "display_at",
    "affected_components", "deliver_notifications", "custom_tweet", "tweet_id",
}  # fmt: skip

INDICATORS = {"none", "minor", "major", "critical", "maintenance"}
COMPONENT_STATUSES = {
    "operational",
    "degraded_performance",
    "partial_outage",
    "major_outage",
    "under_maintenance",
}
INCIDENT_STATUSES = {"investigating", "identified", "monitoring", "resolved", "postmortem"}
MAINTENANCE_STATUSES = {"scheduled", "in_progress", "verifying", "completed"}
IMPACTS = {"none", "minor", "major", "critical", "maintenance"}

ENDPOINTS = {
    "/api/v2/summary.json": {"page", "components", "incidents", "scheduled_maintenances", "status"},
    "/api/v2/status.json": {"page", "status"},
    "/api/v2/components.json": {"page", "components"},
    "/api/v2/incidents.json": {"page", "incidents"},
    "/api/v2/incidents/unresolved.json": {"page", "incidents"},
    "/api/v2/scheduled-maintenances.json": {"page", "scheduled_maintenances"},
    "/api/v2/scheduled-maintenances/upcoming.json": {"page", "scheduled_maintenances"},
    "/api/v2/scheduled-maintenances/active.json": {"page", "scheduled_maintenances"},
}


def assert_timestamp(value: Any, *, nullable: bool = False) -> None:
    if value is None and nullable:
        return
    assert isinstance(value, str), value
    parsed = datetime.fromisoformat(value)
    assert parsed.tzinfo is not None and parsed.utcoffset() is not None, value
    assert value[-6] in "+-" or value.endswith("Z"), f"no explicit offset in {value}"


def check_page(page: dict[str, Any]) -> None:
    assert set(page) == PAGE_KEYS
    assert isinstance(page["id"], str) and page["id"]
    assert page["url"].startswith("http")
    assert page["time_zone"]
    assert_timestamp(page["updated_at"])


def check_component(component: dict[str, Any], page_id: str) -> None:
    assert set(component) >= COMPONENT_KEYS
    assert component["status"] in COMPONENT_STATUSES
    assert isinstance(component["id"], str)
    assert isinstance(component["position"], int)
    assert isinstance(component["showcase"], bool)
    assert isinstance(component["group"], bool)
    assert isinstance(component["only_show_if_degraded"], bool)
    assert component["page_id"] == page_id
    assert component["description"] is None or isinstance(component["description"], str)
    assert component["group_id"] is None or isinstance(component["group_id"], str)
    assert_timestamp(component["created_at"])
    assert_timestamp(component["updated_at"])
    if component["start_date"] is not None:
        datetime.strptime(component["start_date"], "%Y-%m-%d")
    if component["group"]:
        assert isinstance(component["components"], list)


def check_incident(incident: dict[str, Any], page_id: str, *, maintenance: bool) -> None:
    assert set(incident) == (MAINTENANCE_KEYS if maintenance else INCIDENT_KEYS)
    assert incident["status"] in (MAINTENANCE_STATUSES if maintenance else INCIDENT_STATUSES)
    assert incident["impact"] in IMPACTS
    assert incident["page_id"] == page_id
    assert incident["shortlink"].startswith("http")
    for key in ("created_at", "updated_at", "started_at"):
        assert_timestamp(incident[key])
    for key in ("monitoring_at", "resolved_at"):
        assert_timestamp(incident[key], nullable=True)
    if maintenance:
        assert_timestamp(incident["scheduled_for"])
        assert_timestamp(incident["scheduled_until"])
    for update in incident["incident_updates"]:
        assert set(update) == UPDATE_KEYS
        assert update["status"] in INCIDENT_STATUSES | MAINTENANCE_STATUSES
        assert update["incident_id"] == incident["id"]
        assert isinstance(update["id"], str)
        assert isinstance(update["deliver_notifications"], bool)
        for key in ("created_at", "updated_at", "display_at"):
            assert_timestamp(update[key])
    for component in incident["components"]:
        check_component(component, page_id)


@pytest.fixture
def busy_world(world: World) -> World:
    services.incident_post_update(
        incident=world.maintenance, status="in_progress", body="Started early.", display_at=utc(2030, 6, 1, 2)
    )
    services.incident_open(
        title="Disk replacement",
        kind="maintenance",
        scheduled_for=utc(2031, 1, 1),
        scheduled_until=utc(2031, 1, 2),
        windows=[
            services.WindowSpec(product=world.gmail, level="under_maintenance", started_at=utc(2031, 1, 1))
        ],
    )
    return world


@pytest.mark.parametrize("url", list(ENDPOINTS))
def test_it_serves_every_documented_key_and_enum(anon: Client, busy_world: World, url: str) -> None:
    response = anon.get(url)
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    body = response.json()
    assert set(body) == ENDPOINTS[url]
    check_page(body["page"])
    page_id = body["page"]["id"]
    if "status" in body:
        assert set(body["status"]) == STATUS_KEYS
        assert body["status"]["indicator"] in INDICATORS
    for component in body.get("components", []):
        check_component(component, page_id)
    for incident in body.get("incidents", []):
        check_incident(incident, page_id, maintenance=False)
    for maintenance in body.get("scheduled_maintenances", []):
        check_incident(maintenance, page_id, maintenance=True)


def test_it_fills_the_summary_with_public_data_only(anon: Client, busy_world: World) -> None:
    world = busy_world
    body = anon.get("/api/v2/summary.json").json()
    names = [c["name"] for c in body["components"]]
    assert names == ["Workspace", "Gmail", "Cloud Storage"]
    group, gmail, storage = body["components"]
    assert group["group"] is True and group["components"] == [world.gmail.public_id]
    assert gmail["group_id"] == group["id"]
    assert [c["position"] for c in body["components"]] == [1, 2, 3]
    assert storage["status"] == "partial_outage"
    assert gmail["description"] == "Email for teams."
    assert [i["name"] for i in body["incidents"]] == ["Elevated write latency in us-central1-b"]
    ongoing = body["incidents"][0]
    assert ongoing["monitoring_at"] == "2026-10-09T12:00:00.000+00:00"
    assert ongoing["started_at"] == "2026-10-09T11:05:00.000+00:00"
    assert [c["name"] for c in ongoing["components"]] == ["Cloud Storage"]
    assert [u["status"] for u in ongoing["incident_updates"]] == ["monitoring", "investigating"]
    assert {m["name"]: m["status"] for m in body["scheduled_maintenances"]} == {
        "Planned network work": "in_progress",
        "Disk replacement": "scheduled",
    }
    assert body["status"] == {"indicator": "major", "description": "Partial System Outage"}
    text = anon.get("/api/v2/incidents.json").content.decode()
    for secret in ("Billing", "Secret staff drill", "DRAFT-ONLY"):
        assert secret not in text


def test_it_splits_incidents_and_maintenance_lists(anon: Client, busy_world: World) -> None:
    world = busy_world
    recent = anon.get("/api/v2/incidents.json").json()["incidents"]
    assert [i["id"] for i in recent] == [
        world.ongoing.public_id,
        world.drafted.public_id,
        world.outage.public_id,
    ]
    assert recent[2]["status"] == "postmortem"
    assert recent[2]["resolved_at"] == "2009-09-01T21:15:00.000+00:00"
    unresolved = anon.get("/api/v2/incidents/unresolved.json").json()["incidents"]
    assert [i["id"] for i in unresolved] == [world.ongoing.public_id]
    upcoming = anon.get("/api/v2/scheduled-maintenances/upcoming.json").json()["scheduled_maintenances"]
    assert [m["name"] for m in upcoming] == ["Disk replacement"]
    assert upcoming[0]["scheduled_for"] == "2031-01-01T00:00:00.000+00:00"
    active = anon.get("/api/v2/scheduled-maintenances/active.json").json()["scheduled_maintenances"]
    assert [m["id"] for m in active] == [world.maintenance.public_id]
    everything = anon.get("/api/v2/scheduled-maintenances.json").json()["scheduled_maintenances"]
    assert [m["name"] for m in everything] == ["Disk replacement", "Planned network work"]


def test_it_reports_all_operational_on_an_empty_page(anon: Client, db: None) -> None:
    body = anon.get("/api/v2/summary.json").json()
    assert body["status"] == {"indicator": "none", "description": "All Systems Operational"}
    assert body["components"] == body["incidents"] == body["scheduled_maintenances"] == []
    check_page(body["page"])
