"""What an alert-fed draft says in public, and when it may publish itself.

The public text names the product, the place and the level, once each: never the alert's
own words (a threshold, an expression), which stay in the internal notes. A draft waits
for staff unless its rule says to publish it after N minutes, and a person's edit (title,
opening message, or an update posted) stops that, so staff always get the last word.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from freezegun import freeze_time

from alerts import services, wording
from alerts.models import AlertGroup, Integration, MappingRule
from incidents import services as incident_services
from incidents.models import Incident, IncidentUpdate
from tests.alerts.helpers import cloud_storage_catalogue, make_integration, post

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)
THRESHOLD = "Write error rate > 5% for 10m"
EXPRESSION = "sum(rate(gcs_write_errors[5m])) / sum(rate(gcs_writes[5m])) > 0.05"


def iso(value: datetime) -> str:
    return value.isoformat().replace("+00:00", "Z")


def payload(
    *, status: str = "firing", ends: datetime | None = None, summary: str = THRESHOLD
) -> dict[str, Any]:
    return {
        "version": "4",
        "groupKey": '{}:{alertname="GCSWriteErrors"}',
        "status": status,
        "receiver": "sp",
        "alerts": [
            {
                "status": status,
                "labels": {"alertname": "GCSWriteErrors", "service": "storage", "region": "us-central1"},
                "annotations": {"summary": summary, "expr": EXPRESSION},
                "startsAt": iso(NOW - timedelta(minutes=2)),
                "endsAt": iso(ends) if ends else "0001-01-01T00:00:00Z",
                "fingerprint": "f1",
            }
        ],
    }


@pytest.fixture
def am() -> Integration:
    gcs, fallback, _, _ = cloud_storage_catalogue()
    return make_integration("alertmanager", gcs=gcs, fallback=fallback)


def _auto_publish(integration: Integration, minutes: int | None) -> MappingRule:
    rule = integration.rules.get(matchers={"service": "storage"})
    return services.rule_save(
        integration=integration,
        rule=rule,
        product=rule.product,
        matchers=rule.matchers,
        level=rule.level,
        impact=rule.impact,
        auto_publish_after_minutes=minutes,
        position=rule.position,
    )


def _fire(client: Client, integration: Integration, **kw: Any) -> Incident:
    with freeze_time(NOW):
        response = post(client, integration, payload(**kw))
    assert response.status_code == 200, response.content
    return Incident.objects.get()


def _tick(minutes: int) -> int:
    with freeze_time(NOW + timedelta(minutes=minutes)):
        return services.alerts_tick().published


def _public_text(incident: Incident) -> str:
    """Every field of the incident that reaches the public."""
    incident.refresh_from_db()
    updates = " ".join(incident.updates.values_list("body", flat=True))
    windows = " ".join(incident.windows.values_list("description", flat=True))
    return " ".join([incident.title, incident.summary, updates, windows])


def _assert_internal_words_kept_off(client: Client, incident: Incident) -> None:
    text = _public_text(incident)
    for internal in (THRESHOLD, "5%", "GCSWriteErrors", "gcs_write_errors", "From the alert"):
        assert internal not in text, internal
    page = client.get(f"/incidents/{incident.public_id}/").content.decode()
    assert page.count(incident.title) >= 1
    for internal in (THRESHOLD, "Write error rate", "GCSWriteErrors", "gcs_write_errors"):
        assert internal not in page, internal


@pytest.mark.parametrize(
    ("level", "location", "title", "body"),
    [
        (
            "partial_outage",
            "us-central1",
            "Partial outage of Cloud Storage in us-central1",
            "We are investigating a partial outage of Cloud Storage in us-central1. "
            "We will post an update as soon as we know more.",
        ),
        (
            "degraded_performance",
            "",
            "Degraded performance of Cloud Storage",
            "We are investigating degraded performance of Cloud Storage. "
            "We will post an update as soon as we know more.",
        ),
        (
            "major_outage",
            "europe-west1 (Belgium)",
            "Major outage of Cloud Storage in europe-west1 (Belgium)",
            "We are investigating a major outage of Cloud Storage in europe-west1 (Belgium). "
            "We will post an update as soon as we know more.",
        ),
    ],
)
def test_the_public_words_name_the_level_product_and_place_once(
    level: str, location: str, title: str, body: str
) -> None:
    words = {"level": level, "product": "Cloud Storage", "location": location}
    assert wording.public_title(**words) == title
    assert wording.opening_body(**words) == body


def test_an_alert_naming_its_region_does_not_repeat_it(client: Client, am: Integration) -> None:
    # The alert's own summary already says "in us-central1", and so does the mapping.
    incident = _fire(client, am, summary="Cloud Storage write errors in us-central1")

    opening = incident.updates.get()
    assert incident.title == "Partial outage of Cloud Storage in us-central1"
    assert opening.body.count("us-central1") == 1
    assert "in us-central1 in us-central1" not in opening.body + incident.title
    assert "Cloud Storage write errors in us-central1" in incident.internal_notes


def test_a_self_publishing_draft_keeps_its_threshold_internal(client: Client, am: Integration) -> None:
    _auto_publish(am, 10)
    incident = _fire(client, am)

    assert _tick(11) == 1
    incident.refresh_from_db()
    assert incident.is_public
    assert incident.title == "Partial outage of Cloud Storage in us-central1"
    _assert_internal_words_kept_off(client, incident)
    assert THRESHOLD in incident.internal_notes

    # Its resolution names no alert either.
    with freeze_time(NOW + timedelta(minutes=30)):
        post(client, am, payload(status="resolved", ends=NOW + timedelta(minutes=20)))
        services.alerts_tick()
    incident.refresh_from_db()
    assert incident.status == Incident.Status.RESOLVED
    assert incident.updates.order_by("-id").first().body == wording.RESOLVED_BODY  # type: ignore[union-attr]
    _assert_internal_words_kept_off(client, incident)


def test_a_draft_is_held_for_review_by_default(client: Client, am: Integration) -> None:
    incident = _fire(client, am)

    assert AlertGroup.objects.get().publish_due_at is None
    assert _tick(24 * 60) == 0
    incident.refresh_from_db()
    assert not incident.is_public


def test_an_untouched_draft_publishes_itself_when_due_not_before(client: Client, am: Integration) -> None:
    _auto_publish(am, 10)
    incident = _fire(client, am)
    group = AlertGroup.objects.get()
    assert group.publish_due_at == NOW + timedelta(minutes=10)
    assert len(group.draft_digest) == 64

    assert _tick(9) == 0
    assert AlertGroup.objects.get().publish_due_at == NOW + timedelta(minutes=10)
    assert _tick(10) == 1
    incident.refresh_from_db()
    assert incident.is_public


def test_editing_the_title_stops_the_auto_publication(client: Client, am: Integration, alice: User) -> None:
    _auto_publish(am, 10)
    incident = _fire(client, am)
    incident_services.incident_edit(
        incident=incident, changes={"title": "Errors writing to Cloud Storage in Iowa"}, actor=alice
    )

    # Within a minute of the edit the draft stops saying it will publish itself.
    assert _tick(3) == 0
    assert AlertGroup.objects.get().publish_due_at is None
    assert _tick(11) == 0
    incident.refresh_from_db()
    assert (incident.is_public, incident.title) == (False, "Errors writing to Cloud Storage in Iowa")

    # Staff publish it themselves when ready.
    services.alert_draft_publish(incident=incident, actor=alice)
    incident.refresh_from_db()
    assert incident.is_public


def test_editing_the_message_stops_the_auto_publication(client: Client, am: Integration) -> None:
    _auto_publish(am, 10)
    incident = _fire(client, am)
    # As incidents' update edit (the console's "edit the message") changes the opening entry.
    IncidentUpdate.objects.filter(incident=incident).update(body="Some uploads to Cloud Storage fail.")

    assert _tick(11) == 0
    incident.refresh_from_db()
    assert not incident.is_public
    assert AlertGroup.objects.get().publish_due_at is None


def test_an_update_posted_by_a_person_stops_the_auto_publication(
    client: Client, am: Integration, alice: User
) -> None:
    _auto_publish(am, 10)
    incident = _fire(client, am)
    with freeze_time(NOW + timedelta(minutes=1)):
        incident_services.incident_post_update(
            incident=incident, status=Incident.Status.IDENTIFIED, body="We found the cause.", author=alice
        )

    assert _tick(11) == 0
    incident.refresh_from_db()
    assert not incident.is_public


def test_the_preview_shows_the_public_title(am: Integration) -> None:
    lines = services.integration_preview(integration=am, body=json.dumps(payload()).encode())

    assert len(lines) == 1
    assert "public title “Partial outage of Cloud Storage in us-central1”" in lines[0]
