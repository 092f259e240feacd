"""A draft moves no public value: not the status, uptime or grid, not an `updated_at`,
not the live version document, not a validator. Publishing it moves them.

Drafts are written here the way they really are: opened and fed by alert intake, then
updated, widened and retitled by staff through the incident services.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.test import Client
from freezegun import freeze_time
from freezegun.api import FrozenDateTimeFactory

from alerts import services as alert_services
from edge import version
from incidents import services
from incidents.models import ImpactWindow, Incident
from tests.alerts.helpers import alert_drafts, cloud_storage_catalogue, make_integration
from tests.builders import make_incident

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)
MINUTE = timedelta(minutes=1)
PAGES = (
    "/",
    "/history/",
    "/products/cloud-storage/",
    "/products/cloud-storage/uptime/",
    "/api/v1/products/cloud-storage/uptime/",
    "/api/v2/summary.json",
    "/api/v2/components.json",
    "/api/v2/status.json",
    "/incidents.json",
)
V2 = ("/api/v2/summary.json", "/api/v2/components.json", "/api/v2/status.json")


def _firing(started: datetime) -> bytes:
    alert = {
        "id": "gcs-writes-us-central1",
        "status": "firing",
        "title": "Cloud Storage write errors in us-central1",
        "labels": {"alertname": "GCSWriteErrors", "service": "storage", "region": "us-central1"},
        "group": "gcs-writes",
        "started_at": started.isoformat().replace("+00:00", "Z"),
    }
    return json.dumps({"alerts": [alert]}).encode()


def _snapshot(client: Client) -> dict[str, tuple[int, bytes, str, str]]:
    seen = {}
    for url in (*PAGES, "/live/version.json"):
        response = client.get(url)
        seen[url] = (
            response.status_code,
            response.content,
            response["ETag"],
            response.get("Last-Modified", ""),
        )
    return seen


def _updated_at(snapshot: dict[str, tuple[int, bytes, str, str]]) -> dict[str, Any]:
    components = json.loads(snapshot["/api/v2/components.json"][1])["components"]
    return {
        **{url: json.loads(snapshot[url][1])["page"]["updated_at"] for url in V2},
        "components": [c["updated_at"] for c in components],
    }


@pytest.fixture
def clock(settings: Any) -> Iterator[Any]:
    # One live-document time bucket for the whole test: only the stamp may move it.
    settings.PUBLIC_CACHE_TTL = 3600
    with freeze_time(NOW) as frozen:
        yield frozen


@pytest.fixture
def world(clock: FrozenDateTimeFactory, django_capture_on_commit_callbacks: Any) -> dict[str, Any]:
    gcs, other, _, _ = cloud_storage_catalogue()
    integration = make_integration("generic", gcs=gcs, fallback=other)
    with django_capture_on_commit_callbacks(execute=True):
        # Some public history, so that uptime and the grid have something to say.
        make_incident(
            title="Earlier",
            product=gcs,
            start=NOW - timedelta(days=3),
            end=NOW - timedelta(days=3) + 45 * MINUTE,
        )
    clock.tick(10 * MINUTE)
    return {"gcs": gcs, "other": other, "integration": integration}


def _write_to_a_draft(world: dict[str, Any], clock: FrozenDateTimeFactory, capture: Any) -> Incident:
    """Open a draft from an alert, then update it, add a window and retitle it."""
    with capture(execute=True):
        alert_services.alerts_receive(integration=world["integration"], body=_firing(NOW - 2 * 60 * MINUTE))
    [draft] = alert_drafts()
    clock.tick(MINUTE)
    with capture(execute=True):
        services.incident_post_update(incident=draft, status="identified", body="A bad deploy.")
    clock.tick(MINUTE)
    with capture(execute=True):
        services.impact_window_add(
            incident=draft,
            product=world["other"],
            level=ImpactWindow.Level.MAJOR_OUTAGE,
            started_at=NOW - 60 * MINUTE,
        )
    clock.tick(MINUTE)
    with capture(execute=True):
        services.incident_edit(incident=draft, changes={"title": "Cloud Storage writes failing"})
    clock.tick(MINUTE)
    return draft


def test_draft_writes_move_no_public_value_until_published(
    world: dict[str, Any], clock: FrozenDateTimeFactory, django_capture_on_commit_callbacks: Any
) -> None:
    client = Client()
    before = _snapshot(client)
    assert all(status == 200 for status, *_ in before.values())
    stamp = version.public_state_version()

    draft = _write_to_a_draft(world, clock, django_capture_on_commit_callbacks)

    assert version.public_state_version() == stamp
    after = _snapshot(client)
    assert after == before
    for url, (_, _, etag, _) in before.items():
        revalidated = client.get(url, HTTP_IF_NONE_MATCH=etag)
        assert revalidated.status_code == 304, url

    with django_capture_on_commit_callbacks(execute=True):
        alert_services.alert_draft_publish(incident=draft)

    published = _snapshot(client)
    assert version.public_state_version() != stamp
    assert published["/live/version.json"][1] != before["/live/version.json"][1]
    for url in ("/", "/products/cloud-storage/", "/api/v2/summary.json"):
        assert published[url][2] != before[url][2], url
    old, new = _updated_at(before), _updated_at(published)
    for key in (*V2, "components"):
        assert new[key] != old[key], key
    assert "Cloud Storage writes failing" in published["/"][1].decode()


def _but_the_stamp_time(body: bytes) -> bytes:
    # "Last updated" on / is the stamp's time, which this test moves on purpose; the
    # live sections' digests follow it.
    body = re.sub(rb' data-live-digest="[0-9a-f]*"', b"", body)
    return re.sub(rb'<p class="banner__meta">.*?</p>', b"", body, flags=re.DOTALL)


def test_a_draft_counts_toward_no_status_uptime_or_grid(
    world: dict[str, Any], clock: FrozenDateTimeFactory, django_capture_on_commit_callbacks: Any
) -> None:
    client = Client()
    before = _snapshot(client)
    seen_at = datetime.now(UTC)

    _write_to_a_draft(world, clock, django_capture_on_commit_callbacks)
    # Whatever the stamp does, build every page again from the database, at the time the
    # first copies were built (pages say how long ago things happened).
    version._bump()
    clock.move_to(seen_at)

    after = _snapshot(client)
    for url in PAGES:
        assert _but_the_stamp_time(after[url][1]) == _but_the_stamp_time(before[url][1]), url
    summary = json.loads(after["/api/v2/summary.json"][1])
    assert {c["status"] for c in summary["components"]} == {"operational"}
    assert summary["incidents"] == []
