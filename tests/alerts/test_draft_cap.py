"""One payload of many distinct groups opens at most ALERTS_MAX_OPEN_DRAFTS drafts, plus
one draft that gathers the rest and says so (the review's 62 KB payload opened 500)."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from alerts.models import AlertGroup
from incidents.models import Incident
from tests.alerts.helpers import alert_drafts, cloud_storage_catalogue, make_integration, post

pytestmark = pytest.mark.django_db


def _flood(count: int, *, prefix: str = "g") -> dict[str, Any]:
    return {
        "alerts": [
            {
                "id": f"{prefix}{n}",
                "group": f"{prefix}{n}",
                "status": "firing",
                "title": f"Alert {n}",
                "labels": {"service": "storage"},
                "started_at": f"2026-11-02T10:{n % 60:02d}:00Z",
            }
            for n in range(count)
        ]
    }


def test_one_payload_of_many_groups_opens_at_most_the_cap_plus_one(client: Client) -> None:
    gcs, fallback, _, _ = cloud_storage_catalogue()
    integration = make_integration("generic", gcs=gcs, fallback=fallback)
    response = post(client, integration, _flood(60))
    assert response.status_code == 200, response.content
    assert len(alert_drafts()) == 21  # ALERTS_MAX_OPEN_DRAFTS (20) + the gathering draft
    overflow = AlertGroup.objects.get(is_overflow=True)
    assert overflow.alerts.count() == 40
    assert "20 drafts were open" in overflow.needs_attention
    assert "20 drafts were open" in overflow.incident.internal_notes
    assert overflow.publish_due_at is None
    actions = [a["action"] for a in response.json()["alerts"]]
    assert actions.count("open") == 21 and actions.count("join") == 39

    # The next flood joins the same gathering draft.
    assert post(client, integration, _flood(10, prefix="h")).status_code == 200
    assert Incident.objects.count() == 21
    assert overflow.alerts.count() == 50


def test_the_cap_is_a_setting(client: Client, settings: Any) -> None:
    settings.ALERTS_MAX_OPEN_DRAFTS = 3
    gcs, fallback, _, _ = cloud_storage_catalogue()
    integration = make_integration("generic", gcs=gcs, fallback=fallback)
    assert post(client, integration, _flood(10)).status_code == 200
    assert len(alert_drafts()) == 4
