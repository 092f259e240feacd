"""v2 `affected_components`: each incident update lists the components whose level it
changed, with the old and new status, as Statuspage's clients read them (issue 31)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from incidents import services
from incidents.models import ImpactWindow, Incident
from tests.builders import make_product

pytestmark = pytest.mark.django_db


def test_updates_list_the_levels_they_changed(anon: Client) -> None:
    gmail = make_product("Gmail")
    storage = make_product("Cloud Storage")
    hidden = make_product("Billing backend", is_public=False)
    start = timezone.now() - timedelta(hours=2)
    incident = services.incident_open(
        title="Gmail errors",
        started_at=start,
        body="Investigating.",
        windows=[
            services.WindowSpec(
                product=gmail, level=ImpactWindow.Level.DEGRADED_PERFORMANCE, started_at=start
            ),
            services.WindowSpec(product=hidden, level=ImpactWindow.Level.MAJOR_OUTAGE, started_at=start),
        ],
        first_update_at=start,
    )
    services.incident_post_update_with_levels(
        incident=incident,
        status=Incident.Status.IDENTIFIED,
        body="Worse; storage too.",
        display_at=start + timedelta(minutes=30),
        levels=[
            services.LevelSpec(product=gmail, level=ImpactWindow.Level.MAJOR_OUTAGE),
            services.LevelSpec(product=storage, level=ImpactWindow.Level.PARTIAL_OUTAGE),
        ],
    )
    services.incident_post_update(
        incident=incident,
        status=Incident.Status.MONITORING,
        body="Fix out.",
        display_at=start + timedelta(hours=1),
    )
    services.incident_resolve(
        incident=incident, body="Fixed.", resolved_at=start + timedelta(hours=1, minutes=30)
    )

    response = anon.get("/api/v2/incidents.json")
    assert response.status_code == 200
    [body] = response.json()["incidents"]
    by_status = {u["status"]: u["affected_components"] for u in body["incident_updates"]}

    def moves(status: str) -> set[tuple[str, str, str, str]]:
        return {(c["code"], c["name"], c["old_status"], c["new_status"]) for c in by_status[status] or []}

    # The private product never appears; an update that moved no level says null.
    assert moves("investigating") == {(gmail.public_id, "Gmail", "operational", "degraded_performance")}
    assert moves("identified") == {
        (gmail.public_id, "Gmail", "degraded_performance", "major_outage"),
        (storage.public_id, "Cloud Storage", "operational", "partial_outage"),
    }
    assert by_status["monitoring"] is None
    assert moves("resolved") == {
        (gmail.public_id, "Gmail", "major_outage", "operational"),
        (storage.public_id, "Cloud Storage", "partial_outage", "operational"),
    }
