"""Acceptance: the Cloud Storage incident of 8 and 9 October 2026, replayed as alerts.

Recorded payloads of each vendor (tests/alerts/payloads/), posted to the intake endpoint
in the order the vendor would send them, give one draft incident with the same windows
and durations as the demo incident (demo/incidents.py): 12 h 30 min region-wide, then
5 h 41 min in zone us-central1-b, 18 h 11 min in total.
"""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.test import Client
from freezegun import freeze_time

from alerts.models import Alert, ReceivedPayload
from demo.incidents import GCS_END, GCS_FIRST_END, GCS_RECURRENCE_START, GCS_START
from incidents import selectors as incident_selectors
from incidents import services as incident_services
from incidents.models import ImpactWindow, Incident
from tests.alerts.helpers import alert_drafts, cloud_storage_catalogue, load_payloads, make_integration, post

pytestmark = pytest.mark.django_db

KINDS = {
    "alertmanager": "alertmanager_cloud_storage_2026_10.json",
    "grafana": "grafana_cloud_storage_2026_10.json",
    "generic": "generic_cloud_storage_2026_10.json",
}
NOW = "2026-11-29 20:00:00"


@pytest.mark.parametrize("kind", list(KINDS))
def test_it_replays_the_cloud_storage_incident_into_the_demo_windows(client: Client, kind: str) -> None:
    gcs, fallback, region, zone = cloud_storage_catalogue()
    integration = make_integration(kind, gcs=gcs, fallback=fallback)
    payloads = load_payloads(KINDS[kind])

    with freeze_time(NOW):
        first = post(client, integration, payloads[0])
        assert first.status_code == 200, first.content
        assert first.json()["alerts"][0]["action"] == "open"

        # A draft: not public, titled in customers' words (the alert's own in the internal
        # notes), with one open window from startsAt.
        incident = Incident.objects.get()
        assert incident.is_public is False
        assert incident.title == "Partial outage of Cloud Storage in us-central1"
        assert "Cloud Storage elevated write latency and errors in us-central1" in incident.internal_notes
        assert incident.impact == Incident.Impact.MAJOR
        assert incident.started_at == GCS_START
        [window] = incident.windows.all()
        assert (window.product, window.location, window.level) == (
            gcs,
            region,
            ImpactWindow.Level.PARTIAL_OUTAGE,
        )
        assert (window.started_at, window.ended_at) == (GCS_START, None)
        assert alert_drafts() == [incident]
        assert client.get(f"/incidents/{incident.public_id}/").status_code == 404

        for payload in payloads[1:]:
            response = post(client, integration, payload)
            assert response.status_code == 200, response.content

    incident.refresh_from_db()
    windows = list(incident.windows.select_related("location").order_by("started_at"))
    assert [(w.location, w.started_at, w.ended_at) for w in windows] == [
        (region, GCS_START, GCS_FIRST_END),
        (zone, GCS_RECURRENCE_START, GCS_END),
    ]
    assert [w.ended_at - w.started_at for w in windows if w.ended_at is not None] == [
        timedelta(hours=12, minutes=30),
        timedelta(hours=5, minutes=41),
    ]
    durations = incident_selectors.incident_durations(incident=incident)
    assert durations.total == timedelta(hours=18, minutes=11)
    assert not durations.ongoing

    # Every alert resolved and nobody posted: the incident resolved itself at the last end.
    assert incident.status == Incident.Status.RESOLVED
    assert incident.resolved_at == GCS_END
    # In posting order: a replay of old payloads shows each entry at its alert's time,
    # except the draft's opening entry, shown when it was posted (ADR 0013).
    bodies = list(incident.updates.order_by("created_at", "id").values_list("body", flat=True))
    assert "resolved automatically" in bodies[-1]
    assert all(author is None for author in incident.updates.values_list("author", flat=True))
    assert Incident.objects.count() == 1  # the recurrence reopened it: one event, as in the demo
    assert set(Alert.objects.values_list("status", flat=True)) == {"resolved"}
    assert ReceivedPayload.objects.count() == len(payloads)

    # The same payloads again (a sender that retries everything) change nothing.
    before = (
        list(ImpactWindow.objects.values_list("id", "started_at", "ended_at")),
        incident.updates.count(),
        Incident.objects.count(),
    )
    with freeze_time(NOW):
        for payload in payloads:
            again = post(client, integration, payload)
            assert again.status_code == 200
            assert {a["action"] for a in again.json()["alerts"]} <= {"duplicate", "stale"}
    after = (
        list(ImpactWindow.objects.values_list("id", "started_at", "ended_at")),
        incident.updates.count(),
        Incident.objects.count(),
    )
    assert after == before

    # Published, the public incident page shows the demo's durations.
    incident_services.incident_publish(incident=incident)
    with freeze_time(NOW):
        html = client.get(f"/incidents/{incident.public_id}/").content.decode()
    assert "<strong data-total-duration>18 h 11 min</strong>" in html
    rows = re.findall(r'<tr class="window">(.*?)</tr>', html, re.S)
    assert len(rows) == 2
    assert "us-central1" in rows[0] and "12 h 30 min" in rows[0]
    assert "us-central1-b" in rows[1] and "5 h 41 min" in rows[1]
