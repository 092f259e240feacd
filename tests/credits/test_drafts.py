"""An unpublished draft is not downtime: `sla_credits compute` owes nothing for it, and
once the draft is published its windows count from their own start.

The review's case: one alert-fed draft, never published, made the command compute
credit notices for every customer of the product.
"""

from __future__ import annotations

import json
from decimal import Decimal
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command

from alerts import services as alert_services
from credits.models import CreditNotice
from incidents.models import Incident
from tests.alerts.helpers import alert_drafts, cloud_storage_catalogue, make_integration
from tests.credits import builders

pytestmark = pytest.mark.django_db

PERIOD = "2026-10"
# Firing at 11:00, resolved at 23:30 the same day: 750 minutes of partial outage.
FIRING = {
    "id": "gcs-writes-us-central1",
    "status": "firing",
    "title": "Cloud Storage write errors in us-central1",
    "labels": {"alertname": "GCSWriteErrors", "service": "storage", "region": "us-central1"},
    "group": "gcs-writes",
    "started_at": "2026-10-08T11:00:00Z",
}
RESOLVED = {**FIRING, "status": "resolved", "ended_at": "2026-10-08T23:30:00Z"}


def _receive(integration: Any, alert: dict[str, Any]) -> None:
    alert_services.alerts_receive(integration=integration, body=json.dumps({"alerts": [alert]}).encode())


def _compute() -> list[dict[str, Any]]:
    out = StringIO()
    call_command("sla_credits", "compute", "--period", PERIOD, "--json", stdout=out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


@pytest.fixture
def draft() -> Incident:
    gcs, other, _, _ = cloud_storage_catalogue()
    integration = make_integration("generic", gcs=gcs, fallback=other)
    policy = builders.storage_policy()
    for name in ("Acme", "Globex", "Initech", "Umbrella"):
        builders.customer(name, policy=policy, products=[(gcs, None)], monthly_bill=Decimal("2465.00"))
    _receive(integration, FIRING)
    _receive(integration, RESOLVED)
    [incident] = alert_drafts()
    return incident


def test_it_owes_nothing_for_a_draft_never_published(draft: Incident) -> None:
    assert draft.windows.get().ended_at is not None  # the impact happened, in full

    assert _compute() == []
    assert not CreditNotice.objects.exists()


def test_it_counts_a_published_draft_from_the_start_of_its_windows(draft: Incident) -> None:
    assert _compute() == []

    alert_services.alert_draft_publish(incident=draft)
    rows = _compute()

    assert [row["customer"] for row in rows] == ["Acme", "Globex", "Initech", "Umbrella"]
    # The whole 750 minutes, though the draft was published long after they began.
    assert {row["downtime_minutes"] for row in rows} == {"750.00"}
    assert set(CreditNotice.objects.values_list("incidents", flat=True)) == {draft.pk}


def test_it_drops_the_notices_when_a_computed_incident_goes_back_to_draft(draft: Incident) -> None:
    alert_services.alert_draft_publish(incident=draft)
    assert len(_compute()) == 4

    from incidents import services as incident_services

    incident_services.incident_edit(incident=draft, changes={"is_public": False})

    assert _compute() == []
    assert not CreditNotice.objects.exists()
