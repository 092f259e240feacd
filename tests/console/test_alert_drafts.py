"""Alert-fed drafts in the console: listed on Now with their source, alerts on the page."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from alerts.models import AlertGroup
from incidents.models import Incident
from tests.alerts.helpers import cloud_storage_catalogue, make_integration, post

pytestmark = pytest.mark.django_db


def _fire(client: Client, integration: Any) -> Incident:
    started = timezone.now() - timedelta(minutes=5)
    payload = {
        "version": "4",
        "groupKey": '{}:{alertname="GCSWriteErrors"}',
        "status": "firing",
        "receiver": "sp",
        "alerts": [
            {
                "status": "firing",
                "labels": {"alertname": "GCSWriteErrors", "service": "storage"},
                "annotations": {"summary": "Cloud Storage write errors"},
                "startsAt": started.isoformat().replace("+00:00", "Z"),
                "endsAt": "0001-01-01T00:00:00Z",
                "fingerprint": "f1",
            }
        ],
    }
    assert post(client, integration, payload).status_code in (200, 201, 202)
    return Incident.objects.get()


def test_it_lists_alert_drafts_and_publishes_them_in_one_click(client: Client, staff_client: Client) -> None:
    gcs, fallback, _, _ = cloud_storage_catalogue()
    integration = make_integration("alertmanager", gcs=gcs, fallback=fallback)
    incident = _fire(Client(), integration)
    assert not incident.is_public
    AlertGroup.objects.filter(incident=incident).update(publish_due_at=timezone.now() + timedelta(hours=1))

    now_page = staff_client.get("/manage/").content.decode()
    assert incident.title in now_page
    assert f"from alert ({integration.name})" in now_page
    detail = staff_client.get(f"/manage/incidents/{incident.public_id}/").content.decode()
    assert "Alerts behind this incident" in detail and "Cloud Storage write errors" in detail

    response = staff_client.post(f"/manage/incidents/{incident.public_id}/publish/")
    assert response.status_code == 302
    incident.refresh_from_db()
    assert incident.is_public
    # One click also cancels the auto-publish that was still pending.
    assert AlertGroup.objects.get(incident=incident).publish_due_at is None
